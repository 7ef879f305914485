"""Files and processes that get in a run's way: a second trainer started on the same new
folder, links planted where the package writes, an output folder that holds a user's
files, damaged fields in the files that a run reads back. Each case checks the exit
status, the one line said, and that nothing outside what the command owns changed."""

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG, train_argv

from annotated_transformer import run_data, run_folder, train

TRAIN = [sys.executable, "-m", "annotated_transformer.train"]


def test_a_trainer_that_fails_removes_nothing_another_trainer_wrote(
    text_corpus, tmp_path, monkeypatch, capsys
):
    run = tmp_path / "run"
    other = {}
    prepare = run_data.prepare_data

    def another_trainer_arrives(*args, **kwargs):
        # while this trainer prepares its data, a second one starts on the folder
        try:
            other["lock"] = run_folder.RunLock(run)
            (run / "theirs.txt").write_text("kept")
        except ValueError as refused:
            other["refused"] = str(refused)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(run_data, "prepare_data", another_trainer_arrives)
    too_small = train_argv(text_corpus, run, 2, "--batch-tokens", "8")
    assert train.main(too_small) == 2
    assert "fewer than the longest kept pair" in capsys.readouterr().err
    # the folder was this trainer's, under its lock: the other one was refused
    assert "is being trained by process" in other["refused"] and not run.exists()


@pytest.mark.slow
def test_a_second_trainer_that_fails_never_removes_the_first_ones_files(
    text_corpus, tmp_path
):
    # The second trainer's batches are too small for the longest pair, so its data
    # preparation fails. Started at 20 moments from a second before the first one to
    # a second after it, it must never take the folder that the first one is filling.
    first_command = [*TRAIN, *train_argv(text_corpus, Path("RUN"), 2)]
    second_command = [*first_command, "--batch-tokens", "8"]
    for attempt in range(20):
        run = tmp_path / f"run{attempt}"
        delay = 0.1 * attempt - 1.0  # below 0: the second one starts first
        commands = [
            [str(run) if a == "RUN" else a for a in c]
            for c in (first_command, second_command)
        ]
        started = {}
        for which in sorted((0, 1), key=lambda w: delay if w == 1 else 0.0):
            started[which] = subprocess.Popen(
                commands[which],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            time.sleep(abs(delay))
        first_err = started[0].communicate(timeout=HANG)[1]
        second_err = started[1].communicate(timeout=HANG)[1]
        assert started[1].returncode == 2, second_err
        assert started[0].returncode == 0, (attempt, first_err)
        made = {p.relative_to(run).parts[0] for p in run.rglob("*") if p.is_file()}
        assert {"vocab", "config.json", "checkpoints", "results.json"} <= made, attempt
