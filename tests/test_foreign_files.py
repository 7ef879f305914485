"""Files this package did not write (appendix B): folders it did not make, links,
checkpoints and vocabularies of other runs, edited settings and model files. Each is
refused in one line before anything is allocated or written."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import train_argv
from test_run_folder import hashes, one_line_error

from annotated_transformer import bundle, evaluate, train, translate, visualize
from annotated_transformer.running import files, loading, trainer


def sentences(tmp_path: Path) -> Path:
    path = tmp_path / "in.en"
    path.write_text("a red cat\nthe dog runs\n")
    return path


def translate_run(run: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["--run", str(run), "-i", str(sentences(tmp_path)), "--no-progress", *extra]


# --- 10. Folders this package did not make, and links inside a run folder.


def test_train_refuses_a_folder_it_did_not_make_and_touches_nothing(
    text_corpus, tmp_path, capsys
):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2')  # no newline
    (folder / "test.hyp").write_text("my own translations\n")
    before = hashes(folder)
    assert train.main(train_argv(text_corpus, folder, 2)) == 2
    one_line_error(capsys, f"{folder} is a folder this package did not make")
    assert hashes(folder) == before
    assert sorted(p.name for p in folder.iterdir()) == ["metrics.jsonl", "test.hyp"]


def test_train_goes_on_in_an_empty_folder_and_after_a_start_cut_short(
    text_corpus, tmp_path
):
    folder = tmp_path / "empty"
    folder.mkdir()
    assert train.main(train_argv(text_corpus, folder, 2)) == 0
    # what a start killed before it recorded its settings leaves
    again = tmp_path / "cut"
    (again / "tokens").mkdir(parents=True)
    (again / "train.lock").write_text("")
    assert train.main(train_argv(text_corpus, again, 2)) == 0


@pytest.mark.parametrize(
    "link, target",
    [
        ("config.json", "nowhere.json"),  # dangling
        ("metrics.jsonl", "outside.jsonl"),
        ("checkpoints", "elsewhere"),
    ],
)
def test_train_follows_no_link_out_of_a_run_folder(
    run, text_corpus, tmp_path, capsys, link, target
):
    outside = tmp_path / target
    if link == "checkpoints":
        shutil.move(run / "checkpoints", outside)
        (outside / "mine.tmp").write_text("a file of the user's")
    elif link == "metrics.jsonl":
        outside.write_text('{"step": 1}\n{"step": 2')
        (run / link).unlink()
    else:
        (run / link).unlink()
    (run / link).symlink_to(outside)
    before = hashes(tmp_path)
    assert train.main(train_argv(text_corpus, run, 6)) == 2
    one_line_error(capsys, f"{run / link} is a symbolic link")
    assert hashes(tmp_path) == before


# --- 11 and 12. Checkpoints and vocabularies of other runs.


@pytest.fixture
def other_run(run, text_corpus, tmp_path) -> Path:
    """A second run of the same shape and data, with another seed."""
    other = tmp_path / "other"
    assert train.main(train_argv(text_corpus, other, 2, "--seed", "7")) == 0
    return other


def test_a_checkpoint_of_another_run_is_refused_by_every_reader(
    run, other_run, text_corpus, tmp_path, capsys
):
    stranger = run / "checkpoints" / "step-0000006.pt"  # the newest, by its name
    shutil.copy(other_run / "checkpoints" / "step-0000002.pt", stranger)
    before = hashes(run)
    expected = f"{stranger} is a checkpoint of another run (another identity)"
    out = tmp_path / "m.pt"
    for command, argv in (
        (translate.main, translate_run(run, tmp_path, "--average", "1")),
        (translate.main, translate_run(run, tmp_path, "--average", "2")),
        (bundle.main, ["--run", str(run), "-o", str(out)]),
        (train.main, train_argv(text_corpus, run, 8)),
    ):
        assert command(argv) == 2
        one_line_error(capsys, expected)
    assert hashes(run) == before and not out.exists()


def test_a_checkpoint_of_a_model_of_another_shape_is_refused(
    run, text_corpus, tmp_path, capsys
):
    wider = tmp_path / "wider"
    assert train.main(train_argv(text_corpus, wider, 2, "--d-model", "48")) == 0
    stranger = run / "checkpoints" / "step-0000006.pt"
    shutil.copy(wider / "checkpoints" / "step-0000002.pt", stranger)
    for command, argv in (
        (translate.main, translate_run(run, tmp_path, "--average", "2")),
        (train.main, train_argv(text_corpus, run, 8)),
    ):
        assert command(argv) == 2
        one_line_error(
            capsys, f"{stranger} is a checkpoint of another run (other model settings"
        )


def test_a_swapped_vocabulary_is_refused_naming_both(
    run, other_run, text_corpus, tmp_path, capsys
):
    (ours,) = (run / "vocab").glob("*.model")
    (theirs,) = (other_run / "vocab").glob("*.model")
    # another model's vocabulary of the same size, under the run's own name
    wrong = train.main(
        train_argv(text_corpus, tmp_path / "third", 2, "--max-train-pairs", "40")
    )
    assert wrong == 0
    (third,) = (tmp_path / "third" / "vocab").glob("*.model")
    assert third.read_bytes() != ours.read_bytes()
    shutil.copy(third, ours)
    assert translate.main(translate_run(run, tmp_path)) == 2
    one_line_error(capsys, f"{ours} is not the vocabulary that {run / 'checkpoints'}")
    assert train.main(train_argv(text_corpus, run, 8)) == 2
    one_line_error(
        capsys, f"{ours} is not the vocabulary that {run / 'config.json'} was"
    )
    assert theirs.exists()


# --- 9 and 18. Model files: the trainer's folders stay behind; edits are refused.


@pytest.fixture
def model_file(run, tmp_path) -> Path:
    path = tmp_path / "b.pt"
    assert bundle.main(["--run", str(run), "-o", str(path)]) == 0
    return path


def test_a_model_file_carries_no_folder_of_the_machine_that_trained_it(run, model_file):
    state = torch.load(model_file, weights_only=True)
    assert "data_dir" not in state["settings"]["run"]
    assert "out_dir" not in state["settings"]["run"]
    assert str(run.parent).encode() not in model_file.read_bytes()


def edited(state: dict, how: str) -> dict:
    """``state``, a model file's contents, edited as a user might; its settings'
    fingerprint is written again (a careful editor), except for ``n_heads``."""
    model, settings = state["model"], state["settings"]["model"]
    first = next(iter(model))
    if how == "extra key":
        model["extra.weight"] = torch.zeros(2)
    elif how == "missing key":
        del model[first]
    elif how == "string dropout":
        settings["dropout"] = "0.1"
    elif how in ("d_model", "d_k"):
        settings[how] = 48
    elif how == "positional":
        settings["positional"] = "learned"
    elif how == "sentencepiece bytes":
        state["sentencepiece"] = torch.zeros(100, dtype=torch.uint8)
    elif how == "no settings":
        del state["settings"]
    elif how == "empty model":
        state["model"] = {}
    elif how == "vocab_size 4e8":
        settings["vocab_size"] = 400_000_000
    elif how == "n_heads":  # the same shapes: only the fingerprint tells
        settings["n_heads"] = 1
        return state
    elif how == "format of another version":
        state["format"] = "annotated-transformer-model/2"
    elif how == "no format":
        del state["format"]
    if "settings" in state:
        state["settings_sha256"] = loading.settings_fingerprint(state["settings"])
    return state


EDITS = {
    "extra key": "1 unexpected, such as extra.weight",
    "missing key": "1 missing",
    "string dropout": "--dropout",
    "d_model": "of another shape",
    "d_k": "of another shape",
    "positional": "missing, such as",
    "sentencepiece bytes": "is not a SentencePiece vocabulary that loads",
    "no settings": "holds no settings a model can be built from",
    "empty model": "missing",
    "vocab_size 4e8": "--vocab-size must be at most 16777216",
    "n_heads": "were changed after it was written",
    # not a checkpoint that needs its run folder: a model file of another version
    "format of another version": "was written by another version of this package "
    "(format annotated-transformer-model/2; this version reads "
    "annotated-transformer-model/1)",
    "no format": "is not a model file of this package (no format; ",
}


@pytest.mark.parametrize("how", EDITS)
def test_an_edited_model_file_is_refused_in_one_line(model_file, tmp_path, capsys, how):
    state = edited(torch.load(model_file, weights_only=True), how)
    torch.save(state, model_file)
    before = hashes(tmp_path)
    argv = ["--checkpoint", str(model_file), "--no-progress"]
    for command, extra in (
        (translate.main, ["-i", str(sentences(tmp_path))]),
        (evaluate.main, ["--limit", "2"]),
        (visualize.main, ["a red cat", "-o", str(tmp_path / "a.png")]),
    ):
        assert command([*argv, *extra]) == 2, how
        one_line_error(capsys, str(model_file), EDITS[how])
    assert {k: v for k, v in hashes(tmp_path).items() if k != "in.en"} == {
        k: v for k, v in before.items() if k != "in.en"
    }


# --- 19 and 20. Sizes are checked before anything is allocated or written.


def test_a_model_too_large_to_train_is_refused_before_anything_is_written(
    text_corpus, tmp_path, capsys
):
    run = tmp_path / "huge"
    argv = train_argv(text_corpus, run, 2, "--d-model", "200000", "--n-heads", "2")
    assert train.main(argv) == 2
    one_line_error(capsys, "parameters, and training them takes at least", "free")
    assert not run.exists()
    # the corrected command runs
    assert train.main(train_argv(text_corpus, run, 2)) == 0


# --- 21. A hand-edited config.json is named with what to do.


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: c.pop("run"),
        lambda c: c.update(run=[1, 2]),
        lambda c: c["run"].update(average="x"),
        lambda c: c["model"].update(d_model=None),
    ],
    ids=["no run", "run a list", "average a string", "d_model null"],
)
def test_an_edited_config_is_named_by_train_and_by_readers(
    run, text_corpus, tmp_path, capsys, edit
):
    config = json.loads((run / "config.json").read_text())
    edit(config)
    (run / "config.json").write_text(json.dumps(config))
    before = hashes(run)
    for command, argv in (
        (train.main, train_argv(text_corpus, run, 8)),
        (translate.main, translate_run(run, tmp_path)),
    ):
        assert command(argv) == 2
        one_line_error(
            capsys, f"{run / 'config.json'} is not the settings a run writes"
        )
    assert hashes(run) == before


# --- 25. Stored attention weights that do not fit their labels.


def test_stored_weights_of_the_wrong_shape_are_refused(run, tmp_path, capsys):
    stored = tmp_path / "w.npz"
    argv = ["--run", str(run), "a red cat", "--save", str(stored)]
    assert visualize.main(argv) == 0
    with np.load(stored) as f:
        arrays = dict(f)
    arrays["0_cross"] = arrays["0_cross"][:, :, :-1]  # a row short of its labels
    np.savez_compressed(stored, **arrays)
    out = tmp_path / "a.png"
    assert visualize.main(["--stored", str(stored), "-o", str(out)]) == 2
    one_line_error(capsys, f"{stored} is not a file", "sentence 1's cross weights")
    assert not out.exists()


# --- 27. "train first" is not said to a run that is training.


def test_a_run_that_trains_and_has_saved_nothing_yet_says_so(run, tmp_path, capsys):
    shutil.rmtree(run / "checkpoints")
    lock = files.RunLock(run)  # as a training process holds it
    try:
        assert translate.main(translate_run(run, tmp_path)) == 2
        one_line_error(capsys, f"{run} is training and has saved no checkpoint yet")
    finally:
        lock.release()
    assert translate.main(translate_run(run, tmp_path)) == 2
    one_line_error(capsys, "train first")
    assert os.path.exists(run / "train.lock")


def test_a_start_that_failed_before_its_first_checkpoint_takes_corrected_settings(
    text_corpus, tmp_path, capsys, monkeypatch
):
    run = tmp_path / "run"

    def no_memory(*_):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    with monkeypatch.context() as patched:
        patched.setattr(trainer, "train_step", no_memory)
        assert train.main(train_argv(text_corpus, run, 2)) == 2
    one_line_error(capsys, "out of memory (CUDA out of memory.", "--batch-tokens")
    assert (run / "config.json").is_file() and not (run / "checkpoints").exists()
    # another model, and another vocabulary, in the same folder
    argv = train_argv(text_corpus, run, 2, "--d-model", "48", "--vocab-size", "90")
    assert train.main(argv) == 0
    assert json.loads((run / "config.json").read_text())["model"]["d_model"] == 48
    assert [p.name.split("-")[1] for p in (run / "vocab").glob("*.model")] == ["bpe90"]
