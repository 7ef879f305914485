"""The default recipe's band: built from the stored seed runs, refused across recipes,
and printed by `train` at each validation of a run of the band's recipe."""

import json
import shutil
from pathlib import Path

import pytest
from conftest import train_argv

from annotated_transformer import band, train
from annotated_transformer.running import recipes

MEASURED = Path(__file__).resolve().parents[1] / "book" / "measured"


def stored_config(name: str) -> dict:
    return json.loads((MEASURED / name / "config.json").read_text())


def test_the_package_band_is_the_stored_seed_runs_and_reruns():
    runs = recipes.stored_seed_runs(MEASURED, reruns=True)
    assert [run.name for run in runs] == [*recipes.SEED_RUNS, *recipes.RERUNS]
    assert recipes.stored_band() == json.loads(json.dumps(recipes.seed_band(runs)))
    assert recipes.stored_band()["seeds"] == [
        json.loads((run / "config.json").read_text())["run"]["seed"] for run in runs
    ]


def test_the_note_is_for_the_recipe_only():
    stored = recipes.stored_band()
    step = next(iter(stored["valid_nll"]))
    losses = stored["valid_nll"][step]
    config = stored_config("multi30k-en-de")
    note = recipes.band_note(config, int(step), stored)
    assert f"{min(losses):.3f}" in note and f"{max(losses):.3f}" in note
    another_seed = {**config, "run": {**config["run"], "seed": 7, "out_dir": "x"}}
    assert recipes.band_note(another_seed, int(step), stored) == note
    wider = {**config, "model": {**config["model"], "d_model": 256}}
    assert recipes.band_note(wider, int(step), stored) is None
    assert recipes.band_note(config, int(step) + 1, stored) is None
    assert recipes.band_note(config, int(step), None) is None


def test_runs_of_other_recipes_make_no_band(tmp_path):
    for name, lr in (("a", 0.5), ("b", 1.0)):
        folder = tmp_path / name
        folder.mkdir()
        config = stored_config("multi30k-en-de")
        config["run"]["lr_factor"] = lr
        (folder / "config.json").write_text(json.dumps(config))
        (folder / "metrics.jsonl").write_text("")
        (folder / "results.json").write_text('{"bleu": 1.0}')
    with pytest.raises(ValueError, match="another recipe"):
        recipes.seed_band([tmp_path / "a", tmp_path / "b"])
    assert band.main([str(tmp_path / "a"), str(tmp_path / "b"), "-o", "x.json"]) == 2


def test_train_prints_the_band_of_its_recipe(
    text_corpus, tmp_path, monkeypatch, capsys
):
    """A run whose recipe is the band's prints the band under each validation."""
    run = tmp_path / "run"
    argv = train_argv(text_corpus, run, 2, "--valid-every", "2")
    assert train.main([*argv, "--max-steps", "1"]) == 0  # writes config.json
    config = json.loads((run / "config.json").read_text())
    fake = {"recipe": recipes.recipe(config), "valid_nll": {"2": [1.5, 2.5]}}
    monkeypatch.setattr(
        "annotated_transformer.running.trainer.stored_band", lambda: fake
    )
    capsys.readouterr()
    assert train.main(argv) == 0
    out = capsys.readouterr()
    assert (
        "stored runs (seeds and reruns) at update 2: validation loss 1.500 to 2.500"
        in out.out + out.err
    )


@pytest.mark.parametrize(
    "name, damage, message",
    [
        ("config.json", "{", "config.json cannot be read (Expecting"),
        ("config.json", "[]", "config.json is not what a finished run writes"),
        ("metrics.jsonl", '{"step": 1,\n', "metrics.jsonl cannot be read"),
        ("results.json", '{"updates": 4}', "results.json is not what a finished run "),
    ],
)
def test_a_damaged_run_file_is_a_one_line_error_that_names_it(
    tmp_path, capsys, name, damage, message
):
    run = tmp_path / "run"
    shutil.copytree(MEASURED / "multi30k-en-de", run)
    (run / name).write_text(damage)
    assert band.main([str(run), "-o", str(tmp_path / "band.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {run / name}") and message in err
    assert err.count("\n") == 1 and not (tmp_path / "band.json").exists()


def test_a_band_that_cannot_be_written_is_a_one_line_error(tmp_path, capsys):
    runs = [str(run) for run in recipes.stored_seed_runs(MEASURED)]
    for target, message in ((tmp_path, "it is a folder"), ("/dev/full", "/dev/full")):
        assert band.main([*runs, "-o", str(target)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: cannot write") and message in err
        assert err.count("\n") == 1
