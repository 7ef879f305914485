"""Many processes under torchrun (CPU, gloo): gradient accumulation in each, a stop
and resume, fixed batch shapes, and a run that moves to another number of processes.
Every run here is bounded by its updates."""

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import torch
from conftest import TORCHRUN_TRAIN, Child, train_argv

from annotated_transformer import train
from annotated_transformer.running.checkpoints import checkpoints, load_checkpoint

# Two processes on a 2-core machine: one thread each.
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def options(corpus: Path, run: Path, steps: int, *extra) -> list[str]:
    """The tiny scheduled run of ``steps`` updates, with updates of 1200 tokens and a
    metric line at each."""
    return train_argv(
        corpus, run, steps, "--batch-tokens", "1200", "--log-every", "1", *extra
    )


def torchrun(*argv: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [*TORCHRUN_TRAIN, *argv], capture_output=True, text=True, env=ENV
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def metric_lines(run: Path) -> list[dict]:
    return [
        json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
    ]


def final(run: Path) -> dict:
    return load_checkpoint(checkpoints(run)[-1])


def assert_same_weights(one: dict, two: dict, exact: bool = False) -> None:
    assert one["step"] == two["step"]
    for key in ("tgt_tokens", "src_tokens", "sentences"):
        assert one[key] == two[key] > 0  # the same sentences were trained on
    for name, value in one["model"].items():
        if exact:
            assert torch.equal(two["model"][name], value), name
        elif not name.endswith("w_k.bias"):
            # The key bias adds the same amount to every score of a query, which the
            # softmax ignores: its true gradient is zero, and Adam turns the rounding
            # noise of another order of sums into full-size steps.
            torch.testing.assert_close(
                two["model"][name], value, rtol=1e-4, atol=1e-6, msg=name
            )


@pytest.fixture(scope="module")
def two_by_two(text_corpus, tmp_path_factory) -> Path:
    """6 updates on 2 processes, each accumulating 2 micro-batches, without dropout."""
    run = tmp_path_factory.mktemp("two-by-two") / "run"
    result = torchrun(
        *options(text_corpus, run, 6, "--accumulate", "2", "--dropout", "0")
    )
    assert "1,200 tokens per update = 2 process(es) x 2 micro-batch(es) x 300" in (
        result.stdout
    )
    return run


def test_two_processes_accumulating_two_equal_one_accumulating_four(
    text_corpus, tmp_path, two_by_two
):
    run = tmp_path / "one"
    argv = options(text_corpus, run, 6, "--accumulate", "4", "--dropout", "0")
    assert train.main(argv) == 0
    assert_same_weights(final(run), final(two_by_two))
    # the model did learn: the comparison is not between two untouched models
    losses = [r["loss"] for r in metric_lines(run) if "loss" in r]
    assert len(losses) == 6 and losses[-1] < losses[0]


def test_sigterm_and_resume_of_two_accumulating_processes_is_exact(
    text_corpus, tmp_path, two_by_two
):
    run = tmp_path / "run"
    argv = options(
        text_corpus, run, 6, "--accumulate", "2", "--dropout", "0", "--save-every", "6"
    )
    child = Child([*TORCHRUN_TRAIN, *argv], env=ENV)
    child.read_until("update 2/")
    output = child.stop(signal.SIGTERM)  # torchrun passes it on to both processes
    assert "interrupted by SIGTERM: saved update" in output, output
    stopped = load_checkpoint(next((run / "checkpoints").glob("resume-*.pt")))
    assert 2 <= stopped["step"] < 6 and len(stopped["rng"]) == 2
    torchrun(*argv)  # the same command resumes
    assert_same_weights(final(run), final(two_by_two), exact=True)


def test_fixed_batch_shapes_under_torchrun(text_corpus, tmp_path):
    argv = ["--accumulate", "1", "--buckets", "4", "--dropout", "0"]
    result = torchrun(*options(text_corpus, tmp_path / "two", 2, *argv))
    assert "x 1 micro-batch(es) x 600" in result.stdout
    one = options(text_corpus, tmp_path / "one", 2, "--buckets", "4", "--dropout", "0")
    assert train.main([*one, "--accumulate", "2"]) == 0
    assert_same_weights(final(tmp_path / "one"), final(tmp_path / "two"))


def test_a_run_moves_from_two_processes_to_one_with_the_same_batch(
    text_corpus, tmp_path, capsys
):
    moved, alone = tmp_path / "moved", tmp_path / "alone"
    common = ["--dropout", "0", "--save-every", "2"]
    torchrun(*options(text_corpus, moved, 2, *common, "--accumulate", "1"))
    # on one process, 1 x 1 would make every micro-batch twice as large: refused
    assert train.main(options(text_corpus, moved, 4, *common)) == 2
    error = capsys.readouterr().err.strip()
    assert (
        "\n" not in error
        and (
            "trains updates of 1,200 tokens = 2 process(es) x 1 micro-batch(es) x 600; "
            "1 x 1 would cut them into micro-batches of 1,200 tokens"
        )
        in error
        and error.endswith("resume with --accumulate 2")
    )
    # 1 x 2 keeps the micro-batches and the order of the sentences
    assert train.main(options(text_corpus, moved, 4, *common, "--accumulate", "2")) == 0
    assert "resumed from" in capsys.readouterr().out
    assert train.main(options(text_corpus, alone, 4, *common, "--accumulate", "2")) == 0
    assert_same_weights(final(alone), final(moved))
