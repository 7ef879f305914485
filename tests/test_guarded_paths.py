"""No output lands on a file the package needs, and every file it reads is a regular
file: each case is a command aimed at a finished tiny run, which must refuse it in one
line (status 2) before any work and leave every file of the run as it was."""

import hashlib
import os
import shutil
import threading
from pathlib import Path

import pytest
import torch
from conftest import train_argv

from annotated_transformer import band, bundle, evaluate, train, translate, visualize

QUICK = ["--beam-size", "1", "--no-progress"]


def hashes(folder: Path) -> dict:
    """The SHA-256 of every regular file under ``folder`` (a named pipe is not read)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def refused(capsys, module, argv: list[str], *kept: Path) -> str:
    """Run the command, which must end with status 2 and one error line within a
    bound (a hang fails instead of waiting forever), leaving every file under ``kept``
    as it was. Returns the error line."""
    before = {folder: hashes(folder) for folder in kept}
    result = {}
    worker = threading.Thread(
        target=lambda: result.update(status=module.main(argv)), daemon=True
    )
    worker.start()
    worker.join(600)  # far longer than a refusal takes on a busy machine
    assert not worker.is_alive(), f"{argv} hangs"
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert result["status"] == 2 and len(errors) == 1, err
    for folder, found in before.items():
        assert hashes(folder) == found, folder
    return errors[0]


@pytest.fixture
def model_file(run, tmp_path) -> Path:
    path = tmp_path / "model.pt"
    assert bundle.main(["--run", str(run), "-o", str(path)]) == 0
    return path


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "test.en"
    path.write_text("the red cat runs\na dog sleeps\n", encoding="utf-8")
    return path


# --- outputs aimed at a run's own files ---


def test_translate_writes_no_file_of_a_run(run, source, capsys):
    checkpoint = sorted((run / "checkpoints").glob("*.pt"))[-1]
    for target in (run / "config.json", checkpoint, run / "translations.txt"):
        argv = ["--run", str(run), "-i", str(source), "-o", str(target), *QUICK]
        line = refused(capsys, translate, argv, run)
        assert line == (
            f"error: -o {target} is inside the run folder {run}, whose files "
            "training, translating and averaging need: write it outside"
        )


def test_a_link_or_a_path_through_one_does_not_lead_an_output_into_a_run(
    run, source, tmp_path, capsys
):
    (tmp_path / "alias").symlink_to(run)
    (tmp_path / "config.json").symlink_to(run / "config.json")
    for target in (tmp_path / "alias" / "metrics.jsonl", tmp_path / "config.json"):
        argv = ["--run", str(run), "-i", str(source), "-o", str(target), *QUICK]
        assert "is inside the run folder" in refused(capsys, translate, argv, run)


def test_visualize_saves_and_draws_into_no_run(run, tmp_path, capsys):
    kinds = (
        ["--save", str(run / "results.json")],
        ["--save", str(run / "eval" / "weights.npz")],
        ["--view", "explorer", "-o", str(run / "metrics.jsonl")],
        ["--view", "explorer", "-o", str(run / "page.html")],
        ["-o", str(run / "checkpoints" / "figure.png")],
        ["--measure", str(run / "config.json")],
    )
    for options in kinds:
        argv = ["--run", str(run), "the cat", *options, "--no-progress"]
        assert "is inside the run folder" in refused(capsys, visualize, argv, run)


def test_visualize_refuses_an_output_without_its_ending(run, tmp_path, capsys):
    for options, ending in (
        (["--save", str(tmp_path / "weights.png")], ".npz"),
        (["--view", "explorer", "-o", str(tmp_path / "log.jsonl")], ".html or .htm"),
        (["--measure", str(tmp_path / "figures.npz")], ".json"),
    ):
        argv = ["--run", str(run), "the cat", *options, "--no-progress"]
        line = refused(capsys, visualize, argv, run, tmp_path)
        assert f"this output is written as {ending}; name a file" in line


def test_visualize_draws_its_default_file_outside_a_run(run, monkeypatch, capsys):
    monkeypatch.chdir(run)  # attention-line.png would land in the run folder
    argv = ["--run", ".", "the cat", "--no-progress"]
    assert "is inside the run folder" in refused(capsys, visualize, argv, run)


def test_band_writes_no_file_of_a_run(run, finished_run, tmp_path, capsys):
    other = tmp_path / "other"
    shutil.copytree(finished_run, other)
    for target in (run / "config.json", other / "metrics.jsonl"):
        argv = [str(run), str(other), "-o", str(target)]
        line = refused(capsys, band, argv, run, other)
        assert line.startswith(f"error: -o {target} is inside the run folder")


def test_bundle_writes_into_no_run(run, finished_run, tmp_path, capsys):
    other = tmp_path / "other"
    shutil.copytree(finished_run, other)
    for target in (run / "model.pt", other / "checkpoints" / "x.pt"):
        argv = ["--run", str(run), "-o", str(target)]
        assert "is inside the run folder" in refused(capsys, bundle, argv, run, other)


def test_evaluate_still_writes_its_own_records(run, capsys):
    assert evaluate.main(["--run", str(run), "--limit", "2", *QUICK]) == 0
    assert (run / "eval" / "results.jsonl").is_file()


# --- outputs aimed at the command's own input ---


def test_translate_does_not_write_over_its_input(run, source, tmp_path, capsys):
    twin = tmp_path / "twin.en"
    os.link(source, twin)  # another name of the same file
    for target in (source, twin):
        argv = ["--run", str(run), "-i", str(source), "-o", str(target), *QUICK]
        line = refused(capsys, translate, argv, tmp_path)
        assert line == (
            f"error: -o {target} is the same file as the input {source}, which "
            "writing would replace: write to another file"
        )


def test_translate_does_not_write_over_its_model_file(model_file, source, capsys):
    argv = ["--checkpoint", str(model_file), "-i", str(source), "-o", str(model_file)]
    line = refused(capsys, translate, [*argv, *QUICK], model_file.parent)
    assert "is the same file as the input" in line


def test_an_output_is_a_file_or_a_stream_never_a_device(run, source, capsys):
    argv = ["--run", str(run), "-i", str(source), *QUICK]
    line = refused(capsys, translate, [*argv, "-o", "/dev/zero"], run)
    assert line == (
        "error: /dev/zero is a device, where -o writes a file; put a file there, or "
        "name one"
    )
    assert translate.main([*argv, "-o", "/dev/null"]) == 0


# --- every file read is a regular file ---


@pytest.mark.parametrize("pattern", ["config.json", "vocab/*.model"])
def test_a_named_pipe_in_place_of_a_runs_file_is_refused_not_waited_on(
    run, pattern, capsys
):
    path = next(run.glob(pattern))
    path.unlink()
    os.mkfifo(path)
    argv = ["--run", str(run), "-i", "/dev/null", *QUICK]
    line = refused(capsys, translate, argv)
    assert f"{path} is a named pipe, where a file is read" in line


def test_a_named_pipe_as_a_checkpoint_is_refused(run, capsys):
    newest = sorted((run / "checkpoints").glob("*.pt"))[-1]
    newest.unlink()
    os.mkfifo(newest)
    argv = ["--run", str(run), "--average", "1", "-i", "/dev/null", *QUICK]
    assert "is a named pipe, where a file is read" in refused(capsys, translate, argv)


def test_evaluate_refuses_a_named_pipe_as_its_record(run, capsys):
    (run / "eval").mkdir(exist_ok=True)
    (run / "eval" / "results.jsonl").unlink(missing_ok=True)
    os.mkfifo(run / "eval" / "results.jsonl")
    line = refused(capsys, evaluate, ["--run", str(run), "--limit", "2", *QUICK])
    assert line == (
        f"error: {run / 'eval' / 'results.jsonl'} is a named pipe, where this package "
        "writes a file of its own; put a file there, or name one"
    )


def test_a_device_is_no_checkpoint(source, capsys):
    argv = ["--checkpoint", "/dev/urandom", "-i", str(source), *QUICK]
    line = refused(capsys, translate, argv)
    assert line == (
        "error: /dev/urandom is a device, where a file is read; put a file there, or "
        "name one"
    )


# --- model files hold plain tensors ---


@pytest.mark.parametrize("kind", ["meta", "sparse"])
def test_a_model_file_of_tensors_that_are_not_plain_is_one_line(
    model_file, source, kind, capsys
):
    state = torch.load(model_file, weights_only=True)
    name = next(iter(state["model"]))
    weight = state["model"][name]
    if kind == "meta":
        state["model"][name] = torch.empty_like(weight, device="meta")
    else:  # indices far outside the shape, which only a check of them would see
        state["model"][name] = torch.sparse_coo_tensor(
            torch.tensor([[10**6] * weight.dim()]).T,
            torch.ones(1),
            weight.shape,
            check_invariants=False,
        )
    torch.save(state, model_file)
    argv = ["--checkpoint", str(model_file), "-i", str(source), *QUICK]
    line = refused(capsys, translate, argv, model_file.parent)
    assert line == (
        f"error: {model_file} holds weights that are not dense numbers in the memory "
        f"(meta, sparse, quantized or nested tensors: 1, such as {name}). It was "
        "damaged or edited: bundle the run again."
    )


@pytest.mark.parametrize("kind", ["meta", "sparse"])
def test_a_checkpoint_whose_optimizer_state_is_not_plain_is_not_resumed(
    run, text_corpus, kind, capsys
):
    newest = sorted((run / "checkpoints").glob("step-*.pt"))[-1]
    state = torch.load(newest, weights_only=True)
    adam = next(iter(state["optimizer"]["state"].values()))
    adam["step"] = (
        torch.empty_like(adam["step"], device="meta")
        if kind == "meta"
        else adam["step"].reshape(1).to_sparse()
    )
    torch.save(state, newest)
    line = refused(capsys, train, train_argv(text_corpus, run, 6), run)
    assert f"{newest} cannot be resumed from: its optimizer is damaged" in line
    assert "step is not a dense tensor in the memory" in line


def test_a_named_pipe_in_a_run_folder_is_refused_before_training_writes(
    run, text_corpus, capsys
):
    (run / "test.hyp").unlink(missing_ok=True)
    os.mkfifo(run / "test.hyp")  # the test translations would be written into it
    line = refused(capsys, train, train_argv(text_corpus, run, 6), run)
    assert line == (
        f"error: {run / 'test.hyp'} is a named pipe, and a run folder holds only "
        "files this package wrote there: remove it, or use another --run"
    )


def test_a_model_whose_outputs_are_nan_is_one_line(model_file, source, capsys):
    # weights far too large, though finite: the outputs overflow to NaN, and beam
    # search can rank no hypothesis
    state = torch.load(model_file, weights_only=True)
    for name, weight in state["model"].items():
        state["model"][name] = torch.full_like(weight, 3e38)
    torch.save(state, model_file)
    argv = ["--checkpoint", str(model_file), "-i", str(source), "--no-progress"]
    line = refused(capsys, translate, argv, model_file.parent)
    assert line == (
        "error: the model scores no translation of a sentence with a number: its "
        "outputs are NaN, so its weights are damaged or training diverged; use an "
        "earlier checkpoint"
    )
