"""Many processes under torchrun (CPU, gloo): gradient accumulation in each, a stop
and resume, fixed batch shapes, a run that moves to another number of processes, and
the collectives an update waits for. Every run here is bounded by its updates."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from conftest import TORCHRUN, TORCHRUN_TRAIN, Child, train_argv

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


# Trains with every collective of torch.distributed that the package calls counted, and
# the start of every update marked: one JSON list of events per process.
COUNTING_TRAIN = """
import json, os, sys
import torch.distributed as dist
from annotated_transformer import train
from annotated_transformer.running import trainer

events = []


def counted(name, collective):
    def call(*args, **kwargs):
        events.append([name, "async" if kwargs.get("async_op") else "blocking"])
        return collective(*args, **kwargs)

    return call


for name in (
    "all_reduce all_gather all_gather_object all_gather_into_tensor broadcast "
    "broadcast_object_list barrier monitored_barrier reduce reduce_scatter "
    "reduce_scatter_tensor all_to_all all_to_all_single gather gather_object scatter "
    "scatter_object_list"
).split():
    if hasattr(dist, name):
        setattr(dist, name, counted(name, getattr(dist, name)))
train_step = trainer.train_step


def marked(s, at):
    events.append(["update", at.step + 1])
    return train_step(s, at)


trainer.train_step = marked
try:
    code = train.main(sys.argv[1:])
finally:
    path = os.path.join(os.environ["COUNTS"], os.environ["RANK"] + ".json")
    with open(path, "w") as f:
        json.dump(events, f)
sys.exit(code)
"""


def test_an_update_between_metric_lines_waits_for_no_collective(text_corpus, tmp_path):
    """Between metric lines an update issues at most one collective of its own, the
    vote on saving and stopping, and never waits for it. DDP's reduction of the
    gradients in the backward pass is not counted: it runs in C++, outside
    torch.distributed's Python functions."""
    script = tmp_path / "counting_train.py"
    script.write_text(COUNTING_TRAIN)
    argv = train_argv(text_corpus, tmp_path / "run", 9, "--log-every", "4")
    env = {**ENV, "COUNTS": str(tmp_path)}
    result = subprocess.run(
        [*TORCHRUN, str(script), *argv, "--save-every", "9"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    events = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in "01"]
    assert events[0] == events[1]  # every process calls the same, in the same order
    by_update: dict[int, list] = {}
    for name, what in events[0]:
        if name == "update":
            by_update[what] = []
        elif by_update:  # the collectives of setting up come before the first update
            by_update[max(by_update)].append((name, what))
    assert sorted(by_update) == list(range(1, 10))
    # a metric line (updates 1, 4, 8, 9) sums the loss over the processes, and the
    # counter sees it
    for step in (1, 4, 8, 9):
        assert ("all_reduce", "blocking") in by_update[step], (step, by_update[step])
    for step in (2, 3, 5, 6, 7):  # between metric lines
        assert len(by_update[step]) <= 1, (step, by_update[step])
        assert ("all_reduce", "blocking") not in by_update[step], (step, by_update)


def decisions(world: int, interrupted_at: int, **schedule) -> list[tuple]:
    """``decide``'s answers at updates 1 to 8 of a run of 8 in one process of
    ``world`` (a vote then runs on its own flags), asked to stop at update
    ``interrupted_at``; ``save`` restarts the clock as the loop does."""
    from annotated_transformer.config import RunConfig
    from annotated_transformer.running.run_data import Position
    from annotated_transformer.running.run_folder import RunFolder

    run = RunConfig(
        **{"max_steps": 8, "save_every": 0, "save_every_minutes": 10, **schedule}
    )
    folder = RunFolder(
        run=run, settings={}, rank=0, world=world, device="cpu", log=None, lock=None
    )
    last_save, answers = 0.0, []  # the last checkpoint: long ago
    for step in range(1, 9):
        answer = folder.decide(Position(step=step), last_save, step == interrupted_at)
        answers.append(answer)
        if answer[0]:
            last_save = time.time()
        if answer[1]:
            break
    return answers


def test_several_processes_act_on_a_vote_one_update_later():
    nothing = (False, False, False)
    # one process: the overdue checkpoint at once, then the stop at once
    assert decisions(1, interrupted_at=3) == [
        (True, False, False),
        nothing,
        (False, True, True),
    ]
    # several: each one update later, and the checkpoint once (its save restarts the
    # clock before the next vote)
    assert decisions(2, interrupted_at=3) == [
        nothing,
        (True, False, False),
        nothing,
        (False, True, True),
    ]
    # a checkpoint by steps needs no vote; the last update waits for its own vote
    assert decisions(2, interrupted_at=8, save_every_minutes=0, save_every=2) == [
        (update % 2 == 0, update == 8, update == 8) for update in range(1, 9)
    ]
