"""The default recipe's band: built from every stored run of the recipe, found by its
recipe, with a tolerance for threads and machines; refused across recipes, and printed
by `train` at each validation of a run of the band's recipe."""

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


# the stored runs of the default recipe: the seeds, the rerun, the same command on an
# H100, the first 1,600 updates of an earlier run, and appendix A's control runs
DEFAULT_RUNS = {
    *recipes.SEED_RUNS,
    "multi30k-en-de-rerun",
    "h100/multi30k-default",
    "recipe-search/d128-l4-drop0.3-at-1600",
    "attention-dropout/attention-dropout-0.0-seed0",
    "attention-dropout/attention-dropout-0.0-seed1",
}


def default_runs() -> list[Path]:
    """Every run under book/measured that trains the default recipe, by its recipe."""
    wanted = recipes.recipe(stored_config("multi30k-en-de"))
    return recipes.runs_of_recipe(MEASURED, wanted)


def test_the_package_band_is_every_stored_run_of_the_default_recipe():
    runs = default_runs()
    names = {run.relative_to(MEASURED).as_posix() for run in runs}
    assert names >= DEFAULT_RUNS  # found by recipe, whatever their names
    stored = recipes.stored_band()
    assert stored == json.loads(json.dumps(recipes.recipe_band(runs)))
    assert {run["folder"] for run in stored["runs"]} == names
    assert 0 < stored["tolerance"] < 0.1  # nats: measured, and small


def test_every_stored_run_of_the_default_recipe_is_inside_the_stored_band():
    """Read from each run's own files, not from the band: every validation of every
    stored run of the recipe gets a note, and the note says inside."""
    stored, checked = recipes.stored_band(), 0
    for folder in default_runs():
        config = json.loads((folder / "config.json").read_text())
        for line in (folder / "metrics.jsonl").read_text().splitlines():
            record = json.loads(line)
            if "valid_nll" in record:
                note = recipes.band_note(
                    config, record["step"], stored, record["valid_nll"]
                )
                assert note.endswith("this run is inside the band"), (folder, note)
                checked += 1
    assert checked >= 3 * 28 + 2 * 2 + 8  # the seeds, appendix A's runs, the copy


def band_edges(stored: dict, step: int) -> tuple[float, float, float]:
    at = str(step)
    losses = [r["valid_nll"][at] for r in stored["runs"] if at in r["valid_nll"]]
    return min(losses), max(losses), stored["tolerance"]


@pytest.mark.parametrize("step", [200, 2800, 5600])
def test_a_loss_moved_past_the_tolerance_is_outside(step):
    stored, config = recipes.stored_band(), stored_config("multi30k-en-de")
    low, high, tol = band_edges(stored, step)
    assert f"{low - tol:.3f} to {high + tol:.3f}" in recipes.band_note(
        config, step, stored
    )
    for nll in (low - tol + 1e-6, high + tol - 1e-6):
        assert recipes.band_note(config, step, stored, nll).endswith("inside the band")
    for nll in (low - tol - 0.002, high + tol + 0.002):
        note = recipes.band_note(config, step, stored, nll)
        assert "OUTSIDE the band, by 0.002" in note and "what differs" in note


def test_a_run_of_another_recipe_gets_no_note():
    stored = recipes.stored_band()
    config = stored_config("multi30k-en-de")
    step = int(next(iter(stored["runs"][0]["valid_nll"])))
    another_seed = {**config, "run": {**config["run"], "seed": 7, "out_dir": "x"}}
    note = recipes.band_note(config, step, stored)
    assert note and recipes.band_note(another_seed, step, stored) == note
    wider = {**config, "model": {**config["model"], "d_model": 256}}
    assert recipes.band_note(wider, step, stored, 1.0) is None
    assert recipes.band_note(config, step + 1, stored, 1.0) is None
    assert recipes.band_note(config, step, None, 1.0) is None
    for name in (
        "attention-dropout/attention-dropout-0.1-seed0",
        "multi30k-untied-1000",
    ):
        other = stored_config(name)
        assert recipes.recipe(other) != stored["recipe"]
        assert recipes.band_note(other, step, stored, 1.0) is None


def test_the_tolerance_is_the_widest_gap_between_two_runs_of_one_seed():
    runs = [
        {"seed": 0, "nll": {"2": 3.0, "4": 2.0}},
        {"seed": 0, "nll": {"2": 3.1}},  # 0.1 from the first at update 2
        {"seed": 0, "nll": {"2": 2.95, "4": 2.2}},  # 0.2 from the first at update 4
        {"seed": 1, "nll": {"2": 9.0, "4": 1.0}},  # another seed: not compared
    ]
    assert recipes.same_seed_spread(runs) == pytest.approx(0.2)
    assert recipes.same_seed_spread([runs[0], runs[3]]) == 0.0


def test_a_setting_removed_at_the_value_it_trained_with_is_not_in_the_recipe():
    config = stored_config("multi30k-en-de")
    old = {**config, "run": {**config["run"], "loss_chunk_tokens": 0}}
    chunked = {**config, "run": {**config["run"], "loss_chunk_tokens": 4096}}
    assert recipes.recipe(old) == recipes.recipe(config) != recipes.recipe(chunked)


def test_runs_are_found_by_recipe_not_followed_through_links(tmp_path, capsys):
    config = stored_config("multi30k-en-de")
    for name, lr in (("a", 0.5), ("b/c", 0.5), ("d", 1.0)):
        (tmp_path / name).mkdir(parents=True)
        config["run"]["lr_factor"] = lr
        (tmp_path / name / "config.json").write_text(json.dumps(config))
        (tmp_path / name / "metrics.jsonl").write_text('{"step": 2, "valid_nll": 1.0}')
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "config.json").write_text("[1]")  # not a run's settings
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "config.json").symlink_to(tmp_path / "a" / "config.json")
    (tmp_path / "g").symlink_to(tmp_path / "a")
    wanted = recipes.recipe(config | {"run": {**config["run"], "lr_factor": 0.5}})
    assert recipes.runs_of_recipe(tmp_path, wanted) == [
        tmp_path / "a",
        tmp_path / "b/c",
    ]
    out = tmp_path / "band.json"
    assert (
        band.main([str(tmp_path / "a"), "--all-under", str(tmp_path), "-o", str(out)])
        == 0
    )
    written = json.loads(out.read_text())
    assert [run["folder"] for run in written["runs"]] == ["a", "b/c"]
    assert written["tolerance"] == 0.0 and written["runs"][0]["bleu"] is None
    capsys.readouterr()
    assert (
        band.main([str(tmp_path / "a"), "--all-under", str(out), "-o", str(out)]) == 2
    )
    err = capsys.readouterr().err
    assert (
        err.startswith("error: ") and "is not a folder" in err and err.count("\n") == 1
    )


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
        recipes.recipe_band([tmp_path / "a", tmp_path / "b"])
    assert band.main([str(tmp_path / "a"), str(tmp_path / "b"), "-o", "x.json"]) == 2


def test_train_prints_the_band_of_its_recipe(
    text_corpus, tmp_path, monkeypatch, capsys
):
    """A run whose recipe is the band's prints the band under each validation."""
    run = tmp_path / "run"
    argv = train_argv(text_corpus, run, 2, "--valid-every", "2")
    assert train.main([*argv, "--max-steps", "1"]) == 0  # writes config.json
    config = json.loads((run / "config.json").read_text())
    fake = {
        "recipe": recipes.recipe(config),
        "tolerance": 0.25,
        "runs": [{"valid_nll": {"2": 1.5}}, {"valid_nll": {"2": 2.5}}],
    }
    monkeypatch.setattr(
        "annotated_transformer.running.trainer.stored_band", lambda: fake
    )
    capsys.readouterr()
    assert train.main(argv) == 0
    out = capsys.readouterr()
    assert "band at update 2: 1.250 to 2.750\n  (2 stored runs span 1.500 to" in (
        out.out + out.err
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
    runs = [str(MEASURED / name) for name in recipes.SEED_RUNS]
    for target, message in (
        (tmp_path, f"{tmp_path} is a folder; give the file to write with -o"),
        ("/dev/full", "/dev/full is a device, where -o writes a file"),
        (tmp_path / "band.txt", "this output is written as .json"),
    ):
        assert band.main([*runs, "-o", str(target)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err
        assert err.count("\n") == 1


def test_a_score_of_the_validation_split_is_no_test_score_in_the_band():
    """A run trained with ``--test-split valid`` (appendix A's half-budget runs) scored
    the validation split at its end; the band keeps its losses but no test score."""
    half = recipes.finished_run(MEASURED / "recipe-search" / "half-default-2750")
    results = json.loads(
        (MEASURED / "recipe-search" / "half-default-2750" / "results.json").read_text()
    )
    assert results["split"] == "valid" and results["bleu"] > 0
    assert half["bleu"] is None and len(half["nll"]) == 22
    default = MEASURED / "multi30k-en-de"  # scored on test2016: kept
    test = json.loads((default / "results.json").read_text())
    assert test["split"] == "test"
    assert recipes.finished_run(default)["bleu"] == test["bleu"]
