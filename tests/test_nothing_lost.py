"""Hostile but realistic use: outputs that are links, devices and pipes; numbers that
are not numbers; signals from `kill`, `timeout` and a closed terminal; a full disk; a
run read while it trains; torchrun; read-only folders.

As in test_run_folder.py, each case checks the exit status, the one line said, and the
files around the target before and after."""

import contextlib
import io
import json
import os
import pickle
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
import torch
from conftest import HANG, TORCHRUN_TRAIN, Child, train_argv
from test_run_folder import hashes, one_line_error

from annotated_transformer import (
    bundle,
    cli,
    evaluate,
    optimization,
    parsing,
    train,
    translate,
    variations,
)
from annotated_transformer.running import (
    checkpoints,
    files,
    loading,
    metrics,
    processes,
    trainer,
)
from annotated_transformer.speed import batchers
from annotated_transformer.text import scoring

ROOT = Path(__file__).resolve().parent.parent


def translate_args(run: Path, corpus: Path, *extra) -> list[str]:
    return [
        "--run",
        str(run),
        "-i",
        str(corpus / "test.en"),
        "--beam-size",
        "1",
        "--no-progress",
        *extra,
    ]


def strict_json_lines(path: Path) -> list[dict]:
    """The records of a JSON-lines file, refusing NaN and Infinity (not JSON)."""

    def refuse(constant):
        raise ValueError(f"{constant} in {path}")

    return [
        json.loads(line, parse_constant=refuse)
        for line in path.read_text().split("\n")[:-1]
    ]


# 1. An output path is written, never replaced when it is not a file of ours.


def test_an_output_link_writes_its_target_and_stays_a_link(run, text_corpus, tmp_path):
    target = tmp_path / "real.de"
    target.write_text("old\n")
    link = tmp_path / "link.de"
    link.symlink_to(target)
    assert translate.main(translate_args(run, text_corpus, "-o", str(link))) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert len(target.read_text().splitlines()) == 20


def test_output_to_dev_stdout_prints_the_translations(run, text_corpus, capfd):
    before = os.lstat("/dev/stdout")
    assert translate.main(translate_args(run, text_corpus, "-o", "/dev/stdout")) == 0
    assert len(capfd.readouterr().out.splitlines()) == 20
    after = os.lstat("/dev/stdout")  # still the link it was, not a file put there
    assert stat.S_ISLNK(after.st_mode) == stat.S_ISLNK(before.st_mode)
    assert after.st_ino == before.st_ino


def test_files_named_like_temporary_ones_are_left_alone(run, text_corpus, tmp_path):
    (tmp_path / "keep.tmp").write_text("mine\n")
    (tmp_path / "m.pt.tmp").write_text("mine too\n")
    assert (
        translate.main(translate_args(run, text_corpus, "-o", str(tmp_path / "keep")))
        == 0
    )
    assert bundle.main(["--run", str(run), "-o", str(tmp_path / "m.pt")]) == 0
    assert (tmp_path / "keep.tmp").read_text() == "mine\n"
    assert (tmp_path / "m.pt.tmp").read_text() == "mine too\n"
    # and the writes left nothing of their own behind
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "keep",
        "keep.tmp",
        "m.pt",
        "m.pt.tmp",
        "run",
    ]


def test_an_atomic_write_keeps_the_permissions_a_file_would_have(tmp_path):
    fresh, private = tmp_path / "fresh.txt", tmp_path / "private.txt"
    umask = os.umask(0o022)
    try:
        files.write_atomically(fresh, "a\n")
        private.write_text("old\n")
        private.chmod(0o600)
        files.write_atomically(private, "new\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # not mkstemp's 0o600
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert private.read_text() == "new\n"


def test_named_pipes_can_be_read_and_written(run, text_corpus, tmp_path):
    source, sink = tmp_path / "in.fifo", tmp_path / "out.fifo"
    os.mkfifo(source)
    os.mkfifo(sink)
    text = (text_corpus / "test.en").read_text()
    received = []

    def feed():
        with open(source, "w") as f:
            f.write(text)

    def drain():
        with open(sink) as f:
            received.append(f.read())

    threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
    for thread in threads:
        thread.start()
    args = translate_args(run, text_corpus, "-o", str(sink))
    args[args.index("-i") + 1] = str(source)
    assert translate.main(args) == 0
    for thread in threads:
        thread.join()
    assert len(received[0].splitlines()) == 20
    assert stat.S_ISFIFO(sink.stat().st_mode)  # still a pipe


def test_streams_are_devices_pipes_and_names_of_open_files(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "file").write_text("x\n")
    for stream in ("/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/null", fifo):
        assert files.is_stream(Path(stream)), stream
    # a regular file is replaced, wherever it is (a run folder in /dev/shm too)
    for regular in (tmp_path / "file", tmp_path / "new", Path("/dev/shm/new.txt")):
        assert not files.is_stream(regular), regular


def test_a_log_that_cannot_be_opened_is_one_error_and_no_file(tmp_path):
    log = tmp_path / "missing-folder" / "metrics.jsonl"
    with pytest.raises(files.WriteError, match=f"cannot write {log}: No such file"):
        files.append_line(log, "{}")
    assert not log.parent.exists()


# 2, 6, 8. Numbers that are not numbers, and options that fail only with the data or
# the model, are refused before anything is written.


@pytest.mark.parametrize(
    "flag, value, says",
    [
        ("--lr-factor", "nan", "--lr-factor must be above 0 and at most 1000, got nan"),
        ("--lr-factor", "inf", "--lr-factor must be above 0 and at most 1000, got inf"),
        # beyond what a float32 learning rate holds
        ("--lr-factor", "1e300", "--lr-factor must be above 0 and at most 1000"),
        ("--alpha", "inf", "--alpha must be between 0 and 10, got inf"),
        ("--alpha", "400", "--alpha must be between 0 and 10, got 400.0"),
        ("--max-minutes", "nan", "--max-minutes must be a finite number of at least 0"),
        (
            "--save-every-minutes",
            "nan",
            "--save-every-minutes must be a finite number of at least 0",
        ),
        ("--seed", "99999999999999999999999", "--seed must be below 2**63"),
        ("--max-len", "99999999999999999999999", "--max-len must be at most 65536"),
        ("--beam-size", "99999999999999999999999", "--beam-size must be at most 1000"),
        ("--batch-tokens", "1", "--batch-tokens 1 makes micro-batches of 1 tokens"),
        ("--max-len", "8", "--max-len 8 gives fewer positions than the 129"),
        ("--accumulate", "1000", "(1000 per update)"),
    ],
)
def test_bad_numbers_are_refused_before_anything_is_written(
    text_corpus, tmp_path, capsys, flag, value, says
):
    run = tmp_path / "run"
    assert train.main(train_argv(text_corpus, run, 4, flag, value)) == 2
    one_line_error(capsys, says)
    assert not run.exists()


def test_more_buckets_than_lengths_are_as_many_buckets_as_lengths():
    lengths = [3, 3, 5, 9, 9, 9, 12]
    every = batchers.bucket_lengths(lengths, 4)
    assert every == [3, 5, 9, 12]  # no padding at all
    assert (
        batchers.bucket_lengths(lengths, 10**20) == every
    )  # at once, not 10**20 rounds


def test_a_batch_too_small_for_the_longest_pair_says_the_size_needed(
    text_corpus, tmp_path, capsys
):
    run = tmp_path / "run"
    assert train.main(train_argv(text_corpus, run, 2, "--batch-tokens", "1")) == 2
    needed = int(
        re.search(r"give --batch-tokens (\d+) or more", capsys.readouterr().err)[1]
    )
    # one token fewer is refused, the number said is enough
    assert (
        train.main(train_argv(text_corpus, run, 2, "--batch-tokens", str(needed - 1)))
        == 2
    )
    assert not run.exists()
    assert (
        train.main(train_argv(text_corpus, run, 2, "--batch-tokens", str(needed))) == 0
    )


@pytest.mark.parametrize("flag, value", [("--max-len", "8"), ("--accumulate", "1000")])
def test_a_corrected_option_is_not_locked_out(text_corpus, tmp_path, flag, value):
    run = tmp_path / "run"
    assert train.main(train_argv(text_corpus, run, 2, flag, value)) == 2
    assert train.main(train_argv(text_corpus, run, 2)) == 0


def test_decoding_numbers_are_refused_by_every_command(run, text_corpus, capsys):
    before = hashes(run)
    assert translate.main(translate_args(run, text_corpus, "--alpha", "nan")) == 2
    one_line_error(capsys, "--alpha must be between 0 and 10, got nan")
    assert evaluate.main(["--run", str(run), "--alpha", "inf"]) == 2
    one_line_error(capsys, "--alpha must be between 0 and 10, got inf")
    assert hashes(run) == before


def test_a_loss_that_is_not_a_number_stops_the_run_and_saves_nothing(
    text_corpus, tmp_path, monkeypatch, capsys
):
    run, real, updates = tmp_path / "run", optimization.accumulate_gradients, []

    def overflowing(*args, **options):  # update 3 overflows, as in a diverging run
        updates.append(real(*args, **options))
        return float("nan") if len(updates) == 3 else updates[-1]

    monkeypatch.setattr(optimization, "accumulate_gradients", overflowing)
    assert train.main(train_argv(text_corpus, run, 10, "--log-every", "1")) == 2
    one_line_error(
        capsys,
        "update 3: the training loss is nan, so training stopped without saving this "
        "update (the run's last checkpoint is kept)",
    )
    saved = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert saved == ["step-0000002.pt"]
    assert update_steps(run) == [1, 2]


def test_metrics_that_are_not_finite_are_written_as_null(tmp_path):
    log = metrics.MetricsLog(tmp_path, enabled=True)
    log.write(step=1, loss=float("inf"), source_entropy=[0.5, float("nan")])
    (record,) = strict_json_lines(tmp_path / "metrics.jsonl")
    assert record == {"step": 1, "loss": None, "source_entropy": [0.5, None]}


# 3. SIGTERM and SIGHUP save like Ctrl-C; a resumed run logs each update once.


def signal_at(monkeypatch, step: int, number: int) -> None:
    """Send this process ``number`` during update ``step``, as `kill` would."""
    real = trainer.train_step

    def train_step(s, at):
        update = real(s, at)
        if at.step == step:
            os.kill(os.getpid(), number)
        return update

    monkeypatch.setattr(trainer, "train_step", train_step)


def update_steps(run: Path) -> list[int]:
    return [r["step"] for r in strict_json_lines(run / "metrics.jsonl") if "loss" in r]


@pytest.mark.usefixtures("default_stop_signals")
def test_sigterm_saves_and_the_run_resumes_exactly(
    text_corpus, tmp_path, monkeypatch, capsys
):
    schedule = ["--save-every", "10", "--log-every", "1", "--average", "1"]
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    assert train.main(train_argv(text_corpus, whole, 30, *schedule)) == 0
    signal_at(monkeypatch, 15, signal.SIGTERM)
    assert train.main(train_argv(text_corpus, stopped, 30, *schedule)) == 143
    assert "interrupted by SIGTERM: saved update 15" in capsys.readouterr().out
    assert checkpoints.latest_checkpoint(stopped).name == "resume-0000015.pt"
    monkeypatch.undo()
    assert train.main(train_argv(text_corpus, stopped, 30, *schedule)) == 0
    assert "resumed from" in capsys.readouterr().out
    one = checkpoints.load_checkpoint(whole / "checkpoints" / "step-0000030.pt")
    two = checkpoints.load_checkpoint(stopped / "checkpoints" / "step-0000030.pt")
    for name, weight in one["model"].items():
        assert torch.equal(two["model"][name], weight), name
    assert update_steps(stopped) == list(range(1, 31))


def test_sighup_saves_like_ctrl_c(text_corpus, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    signal_at(monkeypatch, 3, signal.SIGHUP)
    # under nohup the tests inherit an ignored SIGHUP, which a run rightly keeps ignored
    ignored = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        status = train.main(train_argv(text_corpus, run, 30, "--save-every", "10"))
    finally:
        signal.signal(signal.SIGHUP, ignored)
    assert status == 129
    assert "interrupted by SIGHUP: saved update 3" in capsys.readouterr().out
    assert checkpoints.latest_checkpoint(run).name == "resume-0000003.pt"


@pytest.mark.usefixtures("default_stop_signals")
def test_a_run_killed_between_checkpoints_logs_its_lost_updates_once(
    text_corpus, tmp_path, monkeypatch
):
    run = tmp_path / "run"
    schedule = ["--save-every", "10", "--log-every", "1"]
    signal_at(monkeypatch, 15, signal.SIGTERM)
    assert train.main(train_argv(text_corpus, run, 20, *schedule)) == 143
    monkeypatch.undo()
    # as if killed with -9 at update 15: its log goes to 15, its last checkpoint is 10
    (run / "checkpoints" / "resume-0000015.pt").unlink()
    assert update_steps(run) == list(range(1, 16))
    assert train.main(train_argv(text_corpus, run, 20, *schedule)) == 0
    assert update_steps(run) == list(range(1, 21))
    steps = [r["step"] for r in strict_json_lines(run / "metrics.jsonl")]
    assert steps == sorted(steps)


def test_a_signal_ignored_on_purpose_stays_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup does
    try:
        with processes.Interrupt():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def torchrun(corpus: Path, run: Path, minutes: str = "10") -> Child:
    """Two CPU training processes under torchrun that wait ``minutes`` for each
    other, with standard error in standard output."""
    command = [
        *TORCHRUN_TRAIN,
        *train_argv(corpus, run, 100_000, "--log-every", "1", "--save-every", "100000"),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "AT_RANK_TIMEOUT_MINUTES": minutes}
    return Child(command, env=env)


def test_sigterm_under_torchrun_saves_on_every_process(text_corpus, tmp_path):
    child = torchrun(text_corpus, tmp_path / "run")
    child.read_until("update 3/")
    output = child.stop(signal.SIGTERM)  # torchrun passes it on to both processes
    assert "interrupted by SIGTERM: saved update" in output, output
    (resume,) = (tmp_path / "run" / "checkpoints").glob("resume-*.pt")
    assert len(checkpoints.load_checkpoint(resume)["rng"]) == 2  # both processes' state


# 9. A process that stops answering ends the run in one line.


@pytest.mark.slow
def test_a_frozen_process_stops_the_others_with_one_line(text_corpus, tmp_path):
    # The limit under test is a time by nature: half a minute, far longer than an update
    # of this tiny model takes even on a busy machine. What is checked is the message
    # and how the run ends, not how long anything took.
    child = torchrun(text_corpus, tmp_path / "run", minutes="0.5")
    child.read_until("update 3/")
    workers = subprocess.run(
        ["pgrep", "-P", str(child.process.pid)], capture_output=True, text=True
    ).stdout.split()
    frozen = int(workers[-1])
    os.kill(frozen, signal.SIGSTOP)
    try:
        last = child.read_until("error:")
    finally:
        with contextlib.suppress(ProcessLookupError):  # gone already
            os.kill(frozen, signal.SIGKILL)
        child.process.wait(timeout=HANG)
        output = child.output(wait=True)
    # the configured limit, 0.5 minutes, as the message states it
    assert "another training process stopped answering, for 30 seconds" in last
    assert "the run's last checkpoint is kept" in last
    # the process that gave up printed no traceback (torchrun reports the failure)
    assert not re.search(r"\[rank\d\]: Traceback", output), output


# 7. torchrun takes --run for its own --run-path: the guide (docs/guide.md) names the
# folder with --out-dir, which reaches the training command.


def test_the_guides_torchrun_line_reaches_the_training_command():
    from torch.distributed.run import get_args_parser

    guide = (ROOT / "docs" / "guide.md").read_text()
    line = re.search(r"`(torchrun [^`]*)`", guide)[1]
    assert "--out-dir DIR" in line and "--run " not in line
    launcher = ["--nproc_per_node=2", "-m", "annotated_transformer.train"]
    args = get_args_parser().parse_args([*launcher, "--out-dir", "runs/x"])
    assert args.training_script_args == ["--out-dir", "runs/x"]
    with pytest.raises(SystemExit):  # what the guide warns of
        get_args_parser().parse_args([*launcher, "--run", "runs/x"])


# 4. A full disk is one line, and leaves no partial file and no empty folder.


def with_file_limit(limit: int, module: str, *argv) -> subprocess.CompletedProcess:
    """Run a command whose files may grow to ``limit`` bytes: a write beyond fails as
    on a full disk (EFBIG instead of ENOSPC)."""

    def limit_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", f"annotated_transformer.{module}", *argv],
        preexec_fn=limit_files,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def last_error(result: subprocess.CompletedProcess, *expected: str) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: cannot write "), line
    for text in expected:
        assert text in line, (text, line)
    return line


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith((".tmp", ".part"))]


def test_a_full_disk_during_a_checkpoint_write(text_corpus, tmp_path):
    run = tmp_path / "run"
    # the vocabulary (about 240 kB) fits, a checkpoint (about 340 kB) does not
    result = with_file_limit(300_000, "train", *train_argv(text_corpus, run, 4))
    last_error(
        result,
        "checkpoints/step-0000002.pt",
        "File too large; this process may not write",
    )
    assert not leftovers(run)
    assert not (run / "checkpoints").exists()  # the folder the write made is gone


def test_a_full_disk_while_the_token_cache_is_written(text_corpus, tmp_path):
    run = tmp_path / "run"
    result = with_file_limit(1000, "train", *train_argv(text_corpus, run, 4))
    last_error(result, str(run / "tokens"), "File too large")
    assert not run.exists()  # a new run folder with nothing of a run in it


def test_a_full_disk_during_evaluate_leaves_no_eval_folder(run, tmp_path):
    before = hashes(run)
    result = with_file_limit(10, "evaluate", "--run", str(run), "--no-progress")
    last_error(result, f"{run / 'eval'}/", ".beam4.alpha0.6.avg2.hyp", "File too large")
    assert hashes(run) == before and not (run / "eval").exists()


def test_a_full_disk_during_bundle_leaves_nothing(run, tmp_path):
    before = hashes(run)
    out = tmp_path / "models" / "m.pt"
    result = with_file_limit(50_000, "bundle", "--run", str(run), "-o", str(out))
    last_error(result, "m.pt", "File too large")
    assert hashes(run) == before and not out.parent.exists()


def test_a_full_disk_when_the_test_translations_are_written(
    text_corpus, tmp_path, capsys, monkeypatch
):
    run = tmp_path / "run"

    def full_disk(path, content):  # the translations do not fit; the rest does
        if Path(path).name == "test.hyp":
            with open("/dev/full", "wb") as device:  # a device that is always full
                try:
                    device.write(b"x" * 100_000)
                    device.flush()
                except OSError as error:
                    raise files.write_error(Path(path), error, 0, content) from None
        files.write_atomically(path, content)

    monkeypatch.setattr(scoring, "write_atomically", full_disk)
    assert train.main(train_argv(text_corpus, run, 2)) == 2
    one_line_error(
        capsys,
        f"cannot write {run / 'test.hyp'}: No space left on device (the file takes ",
    )
    assert not (run / "results.json").exists()
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["step-0000002.pt"]


def test_a_full_disk_says_the_files_size_and_the_room_left(tmp_path, monkeypatch):
    class Disk:
        free = 12_345

    real = files.tempfile.mkstemp

    def on_a_full_disk(**options):  # every write into the file fails as on a full disk
        handle, name = real(**options)
        full = os.open("/dev/full", os.O_WRONLY)
        os.dup2(full, handle)
        os.close(full)
        return handle, name

    monkeypatch.setattr(files.shutil, "disk_usage", lambda path: Disk)
    monkeypatch.setattr(files.tempfile, "mkstemp", on_a_full_disk)
    room = "the disk has 12.3 kB free); make room, or write somewhere else"
    # a checkpoint: torch.save takes its first bytes before the disk says no
    state = {"weights": torch.zeros(80_000)}
    saved = io.BytesIO()
    torch.save(state, saved)
    size = files.size_text(len(saved.getvalue()))
    with pytest.raises(files.WriteError) as raised:
        checkpoints.save_checkpoint(tmp_path / "c.pt", state)
    assert str(raised.value) == (
        f"cannot write {tmp_path / 'c.pt'}: No space left on device (the file takes "
        f"{size}; {room}"
    )
    # a vocabulary's bytes, of which no byte was written
    with pytest.raises(files.WriteError) as raised:
        files.write_atomically(tmp_path / "v.model", b"x" * 240_000)
    assert "(the file takes 240.0 kB; " in str(raised.value)
    # a file whose size cannot be known: how much of it went before the failure
    calls = []

    def once(file):
        calls.append(file)
        if len(calls) > 1:
            raise RuntimeError("written once only")
        for _ in range(20):
            file.write(b"x" * 2000)

    with pytest.raises(files.WriteError) as raised:
        files.write_atomically(tmp_path / "once.bin", once)
    assert re.fullmatch(
        rf"cannot write {re.escape(str(tmp_path / 'once.bin'))}: No space left on "
        rf"device after \d+\.\d kB of it \({re.escape(room)}",
        str(raised.value),
    )
    assert list(tmp_path.iterdir()) == []


def test_a_write_into_a_full_device_is_one_error():
    with pytest.raises(files.WriteError, match="cannot write /dev/full: No space left"):
        files.write_atomically(Path("/dev/full"), "x" * 10_000)


def test_bundle_checks_for_room_before_writing(run, tmp_path, monkeypatch, capsys):
    class Disk:
        free = 999

    monkeypatch.setattr(files.shutil, "disk_usage", lambda path: Disk)
    assert bundle.main(["--run", str(run), "-o", str(tmp_path / "m.pt")]) == 2
    err = one_line_error(capsys, "m.pt: it needs about ", "which has 999 bytes")
    assert re.search(r"it needs about \d+\.\d kB free", err)
    assert not (tmp_path / "m.pt").exists()


# 5. A checkpoint that a training run deletes while it is read.


def test_a_checkpoint_rotated_away_while_read_is_replaced(
    run, text_corpus, monkeypatch
):
    real, calls = loading.run_weights, []

    def rotated_once(*args):
        calls.append(args)
        paths = real(*args)
        # the first listing names a checkpoint that training has deleted since
        return (
            [p.with_name("step-0000000.pt") for p in paths]
            if len(calls) == 1
            else paths
        )

    monkeypatch.setattr(loading, "run_weights", rotated_once)
    assert translate.main(translate_args(run, text_corpus)) == 0
    assert len(calls) == 2


def test_a_checkpoint_that_stays_gone_is_not_called_corrupt(
    run, text_corpus, monkeypatch, capsys
):
    real = loading.run_weights

    def always_rotated(*args):
        return [p.with_name("step-0000000.pt") for p in real(*args)]

    monkeypatch.setattr(loading, "run_weights", always_rotated)
    before = hashes(run)
    assert translate.main(translate_args(run, text_corpus)) == 2
    err = one_line_error(
        capsys, "step-0000000.pt", "a run that is still training deleted it"
    )
    assert "Delete it" not in err and "corrupt" not in err
    assert hashes(run) == before


# 8. Paths that are not what they should be.


def test_a_run_that_is_a_file_is_refused(text_corpus, tmp_path, capsys):
    not_a_folder = tmp_path / "notes.txt"
    not_a_folder.write_text("mine\n")
    assert train.main(train_argv(text_corpus, not_a_folder, 2)) == 2
    one_line_error(capsys, f"--run {not_a_folder} is a file, not a run folder")
    assert parsing.main(["--run", str(not_a_folder), "--no-progress"]) == 2
    one_line_error(capsys, f"--run {not_a_folder} is a file, not a run folder")
    assert not_a_folder.read_text() == "mine\n"


def test_a_damaged_treebank_is_named(tmp_path, capsys):
    (tmp_path / "ptb").mkdir()
    zipped = tmp_path / "ptb" / "treebank.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("wsj_0001.mrg", "( (S (NP (NN x))) )\n" * 50)
    zipped.write_bytes(zipped.read_bytes()[:60])  # cut short
    argv = [
        "--run",
        str(tmp_path / "parse"),
        "--data-dir",
        str(tmp_path),
        "--no-progress",
    ]
    assert parsing.main(argv) == 2
    one_line_error(capsys, f"{zipped} is damaged", "delete it")
    assert not (tmp_path / "parse").exists()


def test_parsing_with_a_bad_device_leaves_no_corpus(tmp_path, capsys):
    argv = ["--run", str(tmp_path / "parse"), "--device", "tpu", "--no-progress"]
    assert parsing.main(argv) == 2
    one_line_error(capsys, "device 'tpu' is not one this package runs on")
    assert not (tmp_path / "parse").exists()


def test_variations_results_that_name_a_folder_are_refused(tmp_path, capsys):
    argv = ["--rows", "base", "--seeds", "1", "--no-progress", "--runs", str(tmp_path)]
    assert variations.main([*argv, "--results", str(tmp_path)]) == 2
    one_line_error(
        capsys, f"{tmp_path} is a folder; give the file to write with --results"
    )
    garbage = tmp_path / "rows.jsonl"
    garbage.write_text("not json\n")
    assert variations.main([*argv, "--results", str(garbage)]) == 2
    one_line_error(capsys, f"{garbage} line 1 is not a result of this command")
    assert garbage.read_text() == "not json\n"


def test_bundle_names_the_file_after_the_run_folder(run, monkeypatch, capsys):
    monkeypatch.chdir(run)
    assert bundle.main(["--run", "."]) == 0
    assert (run.parent / "run.pt").is_file()
    monkeypatch.chdir(run / "checkpoints")
    (run.parent / "run.pt").unlink()
    assert bundle.main(["--run", ".."]) == 0
    assert sorted(p.name for p in run.parent.glob("*pt")) == ["run.pt"]


def make_read_only(folder: Path, read_only: bool = True) -> None:
    """Make everything under ``folder`` unwritable (or writable again). Root ignores
    permissions, so for root the files are made immutable instead."""
    paths = [folder, *folder.rglob("*")]
    if os.geteuid() == 0:
        flag = "+i" if read_only else "-i"
        done = subprocess.run(["chattr", "-R", flag, str(folder)], capture_output=True)
        if done.returncode and read_only:
            pytest.skip(f"root, and chattr cannot make files immutable here: {done}")
        return
    for path in paths if read_only else reversed(paths):
        mode = (0o555 if path.is_dir() else 0o444) if read_only else 0o755
        path.chmod(mode if path.is_dir() or read_only else 0o644)


@pytest.fixture
def read_only(run, text_corpus, tmp_path):
    """A run and its corpus that cannot be written."""
    top = tmp_path / "read-only"
    shutil.copytree(run, top / "run")
    shutil.copytree(text_corpus, top / "corpus")
    make_read_only(top)
    yield top
    make_read_only(top, read_only=False)


def test_evaluate_on_a_read_only_run_says_so_before_translating(
    read_only, monkeypatch, capsys
):
    before = hashes(read_only)
    monkeypatch.setattr(evaluate, "evaluate", pytest.fail)  # it must not translate
    argv = ["--run", str(read_only / "run"), "--data-dir", str(read_only / "corpus")]
    assert evaluate.main([*argv, "--no-progress"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"error: cannot write {read_only / 'run' / 'eval'}/"), line
    assert hashes(read_only) == before


def test_resuming_a_read_only_run_says_so(read_only, capsys):
    before = hashes(read_only)
    assert train.main(train_argv(read_only / "corpus", read_only / "run", 6)) == 2
    one_line_error(capsys, f"cannot write {read_only / 'run' / 'train.lock'}: ")
    assert hashes(read_only) == before


def test_bundle_refuses_to_write_into_its_run_or_to_bundle_a_folder_that_is_no_run(
    run, tmp_path, capsys
):
    newest = sorted((run / "checkpoints").glob("step-*.pt"))[-1]
    before = newest.read_bytes()
    for inside in (newest, run / "model.pt"):
        assert bundle.main(["--run", str(run), "-o", str(inside)]) == 2
        one_line_error(capsys, f"-o {inside} is inside the run folder {run}")
    assert newest.read_bytes() == before and not (run / "model.pt").exists()
    assert bundle.main(["--run", "/"]) == 2
    one_line_error(capsys, "/ is not a run folder: it has no config.json")


def test_names_read_from_a_bundle_that_would_leave_its_folder_are_refused_safely(
    run, text_corpus, tmp_path, capsys
):
    model_file = tmp_path / "b.pt"
    assert bundle.main(["--run", str(run), "-o", str(model_file)]) == 0
    state = torch.load(model_file, weights_only=True)
    # a test split that climbs out of the data folder, with an escape sequence that
    # would retitle the terminal
    hostile = "../escaped/x\x1b]0;owned\x07"
    data = tmp_path / "data"
    data.mkdir()
    state["settings"]["run"].update(test_split=hostile, data_dir=str(data))
    # made by hand, fingerprint and all
    state["settings_sha256"] = loading.settings_fingerprint(state["settings"])
    torch.save(state, model_file)
    (tmp_path / "escaped").mkdir()
    for lang in ("en", "de"):  # the loader finds the pairs where the name leads
        shutil.copy(text_corpus / f"test.{lang}", data / f"{hostile}.{lang}")
    before = {p for p in tmp_path.rglob("*")}
    argv = ["--checkpoint", str(model_file), "--limit", "2", "--no-progress"]
    assert evaluate.main(argv) == 2  # a split is a plain name: nothing is read
    assert {p for p in tmp_path.rglob("*")} == before
    said = capsys.readouterr()
    assert "\x1b" not in said.out + said.err and "\\x1b]0;owned\\x07" in said.err
    assert "--test-split must be a name" in said.err


class RunsCode:
    """A pickle that would run a program when loaded without weights_only."""

    def __reduce__(self):
        return (os.system, ("echo this should never run",))


HOSTILE_FORMS = {
    "zip": lambda state, path: torch.save(state, path),
    "old torch format": lambda state, path: torch.save(
        state, path, _use_new_zipfile_serialization=False
    ),
    # a plain pickle, of a protocol PyTorch's safe reader stops at before any name
    "plain pickle": lambda state, path: path.write_bytes(
        pickle.dumps(state, protocol=4)
    ),
}


@pytest.mark.parametrize("form", HOSTILE_FORMS)
def test_a_pickle_that_could_run_code_is_refused_for_what_it_is(tmp_path, capsys, form):
    hostile = tmp_path / "model.pt"
    HOSTILE_FORMS[form]({"model": RunsCode()}, hostile)
    sentences = tmp_path / "in.en"
    sentences.write_text("a red cat\n")
    argv = ["--checkpoint", str(hostile), "-i", str(sentences)]
    assert translate.main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: {hostile} holds Python objects besides tensors, which could run code "
        "when loaded, and this package never loads them: it is not a file this "
        "package wrote\n"
    )


def test_a_damaged_vocabulary_is_named_by_translate_and_by_a_resumed_run(
    run, text_corpus, tmp_path, capsys
):
    (vocabulary,) = (run / "vocab").glob("*.model")
    vocabulary.write_bytes(b"not a sentencepiece model")
    sentences = tmp_path / "in.en"
    sentences.write_text("a red cat\n")
    argv = ["--run", str(run), "-i", str(sentences), "--no-progress"]
    # its fingerprint is no longer the one the run recorded
    assert translate.main(argv) == 2
    one_line_error(capsys, f"{vocabulary} is not the vocabulary that", "Put back")
    assert train.main(train_argv(text_corpus, run, 6)) == 2
    one_line_error(capsys, f"{vocabulary} is not the vocabulary that", "Put back")
    # a run that recorded no fingerprint (made before they were) reads the file
    config = json.loads((run / "config.json").read_text())
    del config["data"]["sha256"]
    (run / "config.json").write_text(json.dumps(config))
    assert train.main(train_argv(text_corpus, run, 6)) == 2
    one_line_error(capsys, f"{vocabulary} is not a SentencePiece vocabulary that loads")


def test_a_data_folder_recorded_by_training_that_is_not_here_says_to_give_one(
    run, tmp_path, capsys, monkeypatch
):
    model_file = tmp_path / "b.pt"
    assert bundle.main(["--run", str(run), "-o", str(model_file)]) == 0
    state = torch.load(model_file, weights_only=True)
    state["settings"]["run"]["data_dir"] = "corpus"  # relative to where it trained
    state["settings_sha256"] = loading.settings_fingerprint(state["settings"])
    torch.save(state, model_file)
    monkeypatch.chdir(tmp_path)
    assert evaluate.main(["--checkpoint", str(model_file), "--no-progress"]) == 2
    one_line_error(capsys, "expected corpus/test.en", "give --data-dir DIR")


def test_a_results_file_that_is_not_text_is_named(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    results.write_bytes(b"\xff\xfe{}\n")
    argv = ["--rows", "base", "--size", "half", "--results", str(results)]
    assert variations.main([*argv, "--no-progress"]) == 2
    one_line_error(capsys, f"{results} cannot be read as results")
    assert results.read_bytes() == b"\xff\xfe{}\n"


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_mid_write_removes_the_half_written_file(name, tmp_path, capsys):
    # as Ctrl-C does: by default these signals end a process on the spot, and a
    # temporary file beside the output (a bundle's, say) would stay behind
    number = getattr(signal, name)
    target = tmp_path / "model.pt"

    @cli.command
    def writes(argv):
        def half_then_stopped(file):
            file.write(b"x" * 1000)
            os.kill(os.getpid(), number)  # as `kill` from another terminal
            file.write(b"y")

        files.write_atomically(target, half_then_stopped)
        return 0

    # as a shell starts a command; a test run under nohup would ignore SIGHUP, and a
    # signal ignored on purpose stays ignored
    previous = signal.signal(number, signal.SIG_DFL)
    try:
        assert writes([]) == 128 + number
        assert signal.getsignal(number) is signal.SIG_DFL  # given back after it
    finally:
        signal.signal(number, previous)
    assert list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err == (
        f"stopped by {name}; run the same command again to start over (training "
        "resumes from its last checkpoint)\n"
    )
