"""How many CPU threads a command uses: timed for training, the free cores for
decoding, fixed by --threads or OMP_NUM_THREADS."""

import json
import math

import psutil
import pytest
import torch
from conftest import train_argv

from annotated_transformer import benchmark, train
from annotated_transformer.running import devices


@pytest.fixture(autouse=True)
def keep_thread_count():
    """The chooser sets the process's thread count: give it back after each test."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def simulate(chooser, speeds: dict, updates: int, tokens: int = 2000) -> list[int]:
    """Feed the chooser ``updates`` updates whose tokens/s at each thread count are
    ``speeds[count]``, on a fake clock; returns the count each update ran at."""
    now = [0.0]
    chooser.clock = lambda: now[0]
    counts = []
    for _ in range(updates):
        chooser.pick()
        n = torch.get_num_threads()
        counts.append(n)
        now[0] += tokens / speeds[n]
        chooser.took(tokens)
    return counts


def test_the_fastest_count_is_kept_after_a_warm_up_and_three_updates_each():
    said = []
    chooser = devices.ThreadChooser(candidates=[2, 1], say=said.append)
    # a busy core: two threads are five times slower than one
    counts = simulate(chooser, {2: 600.0, 1: 3000.0}, updates=20)
    # the warm-up at the default count, then the trial in turns, then the winner
    assert counts[:7] == [2, 2, 1, 2, 1, 2, 1]
    assert counts[7:] == [1] * 13
    assert chooser.chosen == 1
    assert said == [
        "CPU threads, 3 updates each: 2: 600 tokens/s; 1: 3,000 tokens/s; keeping 1 "
        "(--threads N fixes the count)"
    ]


def test_the_counts_are_timed_again_now_and_then_and_go_back_up_when_quiet():
    said = []
    chooser = devices.ThreadChooser(candidates=[2, 1], say=said.append, every=50)
    # chosen on a busy machine: one thread
    assert simulate(chooser, {2: 600.0, 1: 3000.0}, updates=20)[-1] == 1
    # the machine quiets: one thread runs at its old speed, so nothing slows down,
    # but the trial every 50 updates finds two threads faster again
    counts = simulate(chooser, {2: 5000.0, 1: 3000.0}, updates=60)
    assert counts[:37] == [1] * 37 and counts[37:43] == [2, 1] * 3
    assert counts[43:] == [2] * 17 and chooser.chosen == 2
    assert said[-1].endswith("keeping 2 (--threads N fixes the count)")
    # timed again with nothing changed: no line
    lines = len(said)
    simulate(chooser, {2: 5000.0, 1: 3000.0}, updates=60)
    assert len(said) == lines and chooser.chosen == 2


def test_a_run_that_slows_far_below_its_measured_speed_times_the_counts_again():
    said = []
    chooser = devices.ThreadChooser(candidates=[2, 1], say=said.append)
    assert simulate(chooser, {2: 5000.0, 1: 3000.0}, updates=20)[-1] == 2
    # another program takes a core: the window of 10 updates falls below half
    counts = simulate(chooser, {2: 600.0, 1: 3000.0}, updates=30)
    # the second slow update brings the last 10 below half: the trial again
    assert counts[:8] == [2, 2, 2, 1, 2, 1, 2, 1]
    assert counts[8:] == [1] * 22
    assert said[1] == (
        "training slowed to 2,027 tokens/s (5,000 when measured with 2 threads): "
        "timing the thread counts again"
    )
    assert said[2].endswith("keeping 1 (--threads N fixes the count)")
    # a drop to 0.6 of the measured speed is noise, not a reason to stop and time
    chooser = devices.ThreadChooser(candidates=[2, 1], say=said.append)
    simulate(chooser, {2: 5000.0, 1: 3000.0}, updates=20)
    del said[:]
    simulate(chooser, {2: 3000.0, 1: 2000.0}, updates=40)
    assert said == []


def test_a_count_lowered_by_a_short_burst_goes_back_up_soon_after():
    said = []
    chooser = devices.ThreadChooser(candidates=[2, 1], say=said.append)
    simulate(chooser, {2: 5000.0, 1: 3000.0}, updates=20)
    # a burst of other work slows two threads, and one thread is kept: 8 updates to
    # notice and time, then 22 on one thread
    assert simulate(chooser, {2: 600.0, 1: 3000.0}, updates=30)[-22:] == [1] * 22
    # the burst is over: 50 updates after the choice, not 500, the counts are
    # timed again and two threads come back
    counts = simulate(chooser, {2: 5000.0, 1: 3000.0}, updates=40)
    assert counts[:28] == [1] * 28 and counts[28:34] == [2, 1] * 3
    assert counts[34:] == [2] * 6 and chooser.chosen == 2
    # then the usual interval: no trial over the next 400 updates
    assert simulate(chooser, {2: 5000.0, 1: 3000.0}, updates=400) == [2] * 400


def test_one_candidate_is_a_fixed_count_that_times_nothing():
    torch.set_num_threads(1)
    said = []
    chooser = devices.ThreadChooser(candidates=[1], say=said.append)
    assert simulate(chooser, {1: 100.0, 2: 1e9}, updates=12) == [1] * 12
    assert said == [] and chooser.chosen is None


@pytest.mark.parametrize(
    "default, counts",
    [(1, [1]), (2, [2, 1]), (4, [4, 3, 2]), (16, [16, 15, 8])],
)
def test_the_counts_timed_are_the_default_one_fewer_and_half(default, counts):
    assert devices.thread_counts(default) == counts


def test_threads_are_timed_only_for_one_cpu_process_with_nothing_fixed(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    torch.set_num_threads(2)
    timed = devices.training_threads("cpu", 0, 1, print)
    assert timed.candidates == [2, 1]
    for device, threads, world in (("cuda", 0, 1), ("cpu", 0, 2)):
        fixed = devices.training_threads(device, threads, world, print)
        assert fixed.candidates == [2]
    assert devices.training_threads("cpu", 1, 1, print).candidates == [1]
    assert torch.get_num_threads() == 1  # --threads 1 set it
    torch.set_num_threads(2)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert devices.training_threads("cpu", 0, 1, print).candidates == [2]


def test_decoding_uses_the_free_cores_unless_the_count_is_fixed(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(devices, "free_cores", lambda: 1)
    torch.set_num_threads(2)
    devices.decoding_threads("cpu", 0)
    assert torch.get_num_threads() == 1
    torch.set_num_threads(2)
    devices.decoding_threads("cpu", 2)  # --threads 2
    assert torch.get_num_threads() == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    devices.decoding_threads("cpu", 0)
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize(
    "loads, free",
    [
        ([0, 0, 0, 0], 4),
        ([100, 100, 50, 0], 2),
        ([100, 100, 20, 10], 2),
        ([100] * 4, 1),
    ],
)
def test_the_free_cores_are_the_idle_share_of_the_cores_and_at_least_one(
    loads, free, monkeypatch
):
    monkeypatch.setattr(devices.psutil, "cpu_count", lambda: len(loads))
    monkeypatch.setattr(devices.psutil, "cpu_percent", lambda **_: loads)
    assert devices.free_cores(0.05) == free


def losses(run) -> list[float]:
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [r["loss"] for r in map(json.loads, lines) if "loss" in r]


def test_a_run_that_chooses_its_threads_trains_as_a_fixed_count_does(
    text_corpus, tmp_path, monkeypatch, capsys
):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    torch.set_num_threads(2)  # PyTorch's default on a 2-core machine
    options = ["--log-every", "1", "--valid-every", "1000"]
    chosen = train_argv(text_corpus, tmp_path / "chosen", 10, *options)
    assert train.main(chosen) == 0
    assert "CPU threads, 3 updates each: 2: " in capsys.readouterr().out
    fixed = train_argv(text_corpus, tmp_path / "one", 10, *options, "--threads", "1")
    assert train.main(fixed) == 0
    assert "CPU threads" not in capsys.readouterr().out
    # the same arithmetic; only the order of floating-point sums may differ
    assert losses(tmp_path / "chosen") == pytest.approx(
        losses(tmp_path / "one"), rel=1e-5
    )


def test_a_negative_thread_count_is_refused_before_training(tmp_path, capsys):
    assert train.main(["--threads", "-1", "--out-dir", str(tmp_path / "run")]) == 2
    assert (
        "--threads must be an integer of at least 0, got -1" in capsys.readouterr().err
    )
    assert not (tmp_path / "run").exists()


def test_threads_has_one_meaning_and_one_help_in_every_command(capsys):
    """0 lets the command choose (training times counts, decoding takes the free
    cores), a negative count is refused; train, translate and benchmark decode say so
    in the same words."""
    from annotated_transformer import translate

    said = []
    for module, mode in ((train, []), (translate, []), (benchmark, ["decode"])):
        with pytest.raises(SystemExit):
            module.main([*mode, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        said.append(out.split("--threads N CPU threads")[1].split(" (default: ")[0])
    assert said[0] == said[1] == said[2] and said[0].startswith(" (0: chosen")
    assert benchmark.main(["decode", "--threads", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--threads must be an integer of at least 0, got -1" in err


@pytest.mark.slow
def test_the_threads_benchmark_runs_the_default_command_four_times(
    shared_data, tmp_path
):
    out = tmp_path / "threads.json"
    argv = ["threads", "--steps", "4", "--data-dir", str(shared_data), "--no-progress"]
    assert benchmark.main([*argv, "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    n = report["default_threads"]
    settings = [(r["busy"], r["threads"]) for r in report["results"]]
    assert settings == [(False, n), (False, "chosen"), (True, n), (True, "chosen")]
    assert report["results"][0]["vs_quiet_default"] == 1.0
    for r in report["results"]:
        assert r["tokens_per_s"] > 0 and math.isfinite(r["loss"])
    # the program that kept a core busy is gone
    busy = [
        p
        for p in psutil.process_iter(["cmdline"])
        if "while True: pass" in (p.info["cmdline"] or [])
    ]
    assert busy == []


def test_a_page_that_trains_takes_the_free_cores_once_per_kernel(monkeypatch):
    """The book's pages call at_scale before they train: the first call gives the
    kernel the free cores (one here, another program holding the other), later calls
    measure nothing again; OMP_NUM_THREADS still fixes the count."""
    from annotated_transformer.book import scale

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    measured = []
    monkeypatch.setattr(
        devices, "free_cores", lambda seconds=0.2: measured.append(seconds) or 1
    )
    scale.use_free_cores.cache_clear()
    torch.set_num_threads(2)
    assert scale.at_scale("smoke", "laptop") in ("smoke", "laptop")
    assert torch.get_num_threads() == 1
    torch.set_num_threads(2)
    scale.at_scale("smoke", "laptop")
    assert (torch.get_num_threads(), len(measured)) == (2, 1)

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    scale.use_free_cores.cache_clear()
    torch.set_num_threads(1)
    scale.at_scale("smoke", "laptop")
    assert (torch.get_num_threads(), len(measured)) == (2, 1)
    scale.use_free_cores.cache_clear()
