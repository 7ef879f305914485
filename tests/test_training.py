"""Training (§5): label smoothing, gradient accumulation, paper-sized steps,
checkpoints, resume, DDP."""

import gc
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import TORCHRUN_TRAIN, Child, tiny_run, train_argv

from annotated_transformer import train
from annotated_transformer.config import PRESETS, RunConfig, TransformerConfig
from annotated_transformer.data import PAD, Batch
from annotated_transformer.figures.diagnostics import source_alignment
from annotated_transformer.layers import subsequent_mask
from annotated_transformer.model import make_model
from annotated_transformer.optimization import (
    accumulate_gradients,
    label_smoothed_loss,
    make_optimizer,
)
from annotated_transformer.running import devices, run_data, run_folder, trainer
from annotated_transformer.running.checkpoints import (
    checkpoints,
    latest_checkpoint,
    load_checkpoint,
)
from annotated_transformer.running.files import RunLock
from annotated_transformer.speed import choice, token_store
from annotated_transformer.text import corpora

TINY = TransformerConfig(vocab_size=50, n_layers=1, d_model=32, d_ff=64, n_heads=2)


def test_label_smoothing_against_a_hand_computed_value():
    # Two real positions and one padding position, vocabulary of 4, ε = 0.1.
    probs = torch.tensor(
        [[[0.6, 0.2, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4]]]
    )
    target = torch.tensor([[1, 2, PAD]])
    # ε/V = 0.025 on every entry, plus 0.9 on the correct one: q = (0.025, 0.925, 0.025,
    # 0.025) for row 0.
    row0 = -(
        0.025 * math.log(0.6)
        + 0.925 * math.log(0.2)
        + 0.025 * math.log(0.1)
        + 0.025 * math.log(0.1)
    )
    row1 = -math.log(0.25)  # any q gives the same value against a uniform prediction
    loss = label_smoothed_loss(probs.log(), target, pad=PAD, label_smoothing=0.1)
    assert loss.item() == pytest.approx((row0 + row1) / 2, rel=1e-6)
    assert math.isfinite(
        label_smoothed_loss(
            torch.log_softmax(torch.randn(1, 3, 4) * 30, -1), target, PAD, 0.1
        ).item()
    )


def _batch(rows):
    width = max(map(len, rows))
    src = torch.tensor([r + [PAD] * (width - len(r)) for r in rows])
    tgt = torch.tensor([[1] + r + [2] + [PAD] * (width - len(r)) for r in rows])
    return Batch.from_tensors(src, tgt, pad=PAD)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_label_smoothed_loss_matches_cross_entropy_in_float64(smoothing, reduction):
    torch.manual_seed(int(smoothing * 10))
    scores = (3 * torch.randn(4, 7, 50, dtype=torch.float64)).requires_grad_()
    # padding rows included
    target = torch.randint(1, 50, (4, 7)).masked_fill(torch.rand(4, 7) < 0.3, PAD)
    reference = torch.nn.functional.cross_entropy(
        scores.flatten(0, 1),
        target.flatten(),
        ignore_index=PAD,
        label_smoothing=smoothing,
        reduction=reduction,
    )
    expected = torch.autograd.grad(2.5 * reference, scores)[0]
    loss = label_smoothed_loss(scores, target, PAD, smoothing, reduction)
    (2.5 * loss).backward()
    assert loss.dtype == torch.float64
    torch.testing.assert_close(loss, reference.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(scores.grad, expected, rtol=1e-12, atol=1e-12)
    # padding positions get no gradient
    assert scores.grad[target == PAD].abs().max() == 0


def test_the_fast_paths_follow_the_device_and_the_settings():
    run = RunConfig()
    everywhere = choice.FastPaths(token_cache=True, kv_cache=True)
    assert choice.fast_paths("cpu", run) == everywhere
    gpu = choice.fast_paths("cuda:0", run.replace(bf16=False, compile=True))
    assert gpu.fused_attention and gpu.fused_adam and gpu.compile and not gpu.bf16
    plain = trainer.make_update(make_model(TINY), TINY, run, choice.FastPaths())
    assert plain.loss_function is label_smoothed_loss and plain.autocast is None


def test_a_run_records_the_fast_paths_that_computed_it(finished_run):
    # config.json keeps the paper's model; results.json says what computed it
    config = json.loads((finished_run / "config.json").read_text())
    results = json.loads((finished_run / "results.json").read_text())
    assert config["model"]["fused_attention"] is False
    assert results["fast_paths"] == ["token_cache", "kv_cache"]  # on the CPU


def test_packed_training_resumes_exactly_and_records_it(text_corpus, tmp_path, capsys):
    """A run in packed batches, stopped after 2 updates and resumed to 4, ends with
    the weights of one trained to 4 at once; its results name the packing."""
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert train.main(train_argv(text_corpus, straight, 4, "--pack")) == 0
    argv = train_argv(text_corpus, resumed, 4, "--pack")
    assert train.main([*argv, "--max-steps", "2"]) == 0
    assert train.main(argv) == 0
    ends = [load_checkpoint(latest_checkpoint(r))["model"] for r in (straight, resumed)]
    for name, weights in ends[0].items():
        assert torch.equal(weights, ends[1][name]), name
    results = json.loads((resumed / "results.json").read_text())
    assert "pack" in results["fast_paths"] and results["updates"] == 4
    capsys.readouterr()
    assert (
        train.main(
            [*train_argv(text_corpus, tmp_path / "b", 2, "--pack")] + ["--buckets", "4"]
        )
        == 2
    )
    assert "--pack makes batches of one shape itself" in capsys.readouterr().err


def test_label_smoothed_loss_reads_bf16_scores_in_float32():
    scores = torch.randn(6, 300).bfloat16()
    target = torch.randint(1, 300, (6,))
    loss = label_smoothed_loss(scores, target, PAD, 0.1)
    reference = torch.nn.functional.cross_entropy(
        scores.double(), target, label_smoothing=0.1
    )
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss.double(), reference, rtol=1e-6, atol=1e-6)


def test_accumulated_gradient_equals_one_large_batch():
    torch.manual_seed(0)
    model = make_model(TINY.replace(dropout=0.0))
    rows = [
        [5, 6, 7, 8, 9, 10],
        [11, 12],
        [13, 14, 15],
        [16, 17, 18, 19, 20, 21, 22, 23],
        [24],
    ]
    whole = _batch(rows)
    log_probs = model.generator(
        model(whole.src, whole.tgt_in, whole.src_mask, whole.tgt_mask)
    )
    label_smoothed_loss(log_probs, whole.tgt_out, PAD, 0.1).backward()
    expected = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    accumulate_gradients(
        model,
        [_batch(rows[:1]), _batch(rows[1:3]), _batch(rows[3:])],
        label_smoothing=0.1,
        pad=PAD,
    )
    for name, param in model.named_parameters():
        torch.testing.assert_close(
            param.grad, expected[name], rtol=1e-5, atol=1e-7, msg=name
        )


@pytest.mark.parametrize("name", ["base", pytest.param("big", marks=pytest.mark.slow)])
def test_paper_sized_training_step_on_cpu(name):
    torch.manual_seed(0)
    config = PRESETS[name]
    model = make_model(config)
    optimizer, scheduler = make_optimizer(model, config.d_model, warmup=4000)
    batch = _batch([[5, 6, 7, 8], [9, 10]])
    before = model.encoder.layers[0].feed_forward.w_1.weight.detach().clone()
    loss = (
        float(
            accumulate_gradients(
                model, [batch], label_smoothing=config.label_smoothing, pad=PAD
            )
        )
        / batch.n_tokens
    )
    optimizer.step()
    scheduler.step()
    # about ln(37000) = 10.5 at initialization
    assert math.isfinite(loss) and 5 < loss < 15
    assert not torch.equal(before, model.encoder.layers[0].feed_forward.w_1.weight)
    assert scheduler.get_last_lr()[0] == pytest.approx(
        config.d_model**-0.5 * 2 * 4000**-1.5
    )


def _cli(text_corpus, out_dir, *extra):
    """A tiny run with a metric line at every update and a checkpoint every 4 (each
    test gives --max-steps)."""
    schedule = ["--log-every", "1", "--save-every", "4", "--save-every-minutes", "60"]
    return tiny_run(
        text_corpus, out_dir, *schedule, "--max-minutes", "0", "--no-progress", *extra
    )


def _losses(out_dir: Path) -> dict[int, float]:
    losses = {}
    for line in (out_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "loss" in record:
            # a resumed run overwrites the steps it repeats
            losses[record["step"]] = record["loss"]
    return losses


class _Killed(BaseException):
    """What kill -9 leaves: the process stops between two instructions, with no handler,
    save or flush."""


def test_killed_run_resumes_on_the_same_trajectory(text_corpus, tmp_path, monkeypatch):
    steps = ["--max-steps", "24"]
    assert train.main(_cli(text_corpus, tmp_path / "whole", *steps)) == 0
    reference = _losses(tmp_path / "whole")
    assert sorted(reference) == list(range(1, 25))

    killed, real_step = tmp_path / "killed", trainer.train_step

    def dies_in_update_11(s, at):
        # 10 updates done, checkpoints of 4 and 8 written, the 11th under way
        if at.step == 10:
            raise _Killed
        return real_step(s, at)

    monkeypatch.setattr(trainer, "train_step", dies_in_update_11)
    with pytest.raises(_Killed):
        train.main(_cli(text_corpus, killed, *steps))
    monkeypatch.setattr(trainer, "train_step", real_step)
    # the dead process's files close, as the operating system closes them after a kill
    gc.collect()
    assert (
        max(_losses(killed)) == 10
        and latest_checkpoint(killed).name == "step-0000008.pt"
    )
    assert not (killed / "results.json").exists()

    assert train.main(_cli(text_corpus, killed, *steps)) == 0  # the same command again
    resumed = _losses(killed)
    assert sorted(resumed) == list(range(1, 25))
    for step in range(1, 25):
        assert resumed[step] == pytest.approx(reference[step], rel=1e-6, abs=1e-7), step
    assert json.loads((killed / "results.json").read_text())["updates"] == 24


def test_truncated_checkpoint_gives_a_clear_error(text_corpus, tmp_path, capsys):
    assert train.main(_cli(text_corpus, tmp_path, "--max-steps", "4")) == 0
    latest = checkpoints(tmp_path)[-1]
    latest.write_bytes(latest.read_bytes()[:1000])
    capsys.readouterr()
    assert train.main(_cli(text_corpus, tmp_path, "--max-steps", "8")) == 2
    err = capsys.readouterr().err
    assert (
        "step-0000004.pt is truncated, corrupt or not a checkpoint" in err
        and "Traceback" not in err
    )


def test_resuming_with_other_settings_is_refused(text_corpus, tmp_path, capsys):
    assert train.main(_cli(text_corpus, tmp_path, "--max-steps", "2")) == 0
    assert (
        train.main(
            _cli(
                text_corpus,
                tmp_path,
                "--max-steps",
                "4",
                "--d-model",
                "64",
                "--n-heads",
                "4",
            )
        )
        == 2
    )
    assert "different settings (--d-model, --n-heads)" in capsys.readouterr().err


def test_a_setting_added_later_resumes_older_runs_at_its_old_value(
    text_corpus, tmp_path, capsys
):
    assert train.main(_cli(text_corpus, tmp_path, "--max-steps", "2")) == 0
    config = json.loads((tmp_path / "config.json").read_text())
    del config["run"]["buckets"]  # as a run made before --buckets existed recorded it
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert (
        train.main(_cli(text_corpus, tmp_path, "--max-steps", "3", "--buckets", "2"))
        == 2
    )
    assert "different settings (--buckets)" in capsys.readouterr().err
    assert train.main(_cli(text_corpus, tmp_path, "--max-steps", "3")) == 0


def test_sigint_saves_before_exiting(text_corpus, tmp_path):
    options = _cli(
        text_corpus, tmp_path, "--max-steps", "100000", "--save-every", "100000"
    )
    child = Child([sys.executable, "-m", "annotated_transformer.train", *options])
    child.read_until("update 1/")  # the loop has run an update: Ctrl-C now
    output = child.stop(signal.SIGINT)
    assert child.returncode == 130, output
    assert "interrupted by SIGINT: saved update" in output
    # a stop between scheduled checkpoints is not one of them...
    assert checkpoints(tmp_path) == []
    resume = latest_checkpoint(tmp_path)  # ...but its state is kept for resuming
    assert resume.name.startswith("resume-") and load_checkpoint(resume)["step"] >= 1


def test_two_processes_match_one_process_with_the_same_global_batch(
    text_corpus, tmp_path
):
    # --batch-tokens is the budget of one update:
    # 600 = 1 process x 2 micro-batches x 300 = 2 processes x 1 x 300.
    common = [
        "--dropout",
        "0",
        "--max-steps",
        "3",
        "--save-every",
        "3",
        "--batch-tokens",
        "600",
    ]
    single = _cli(text_corpus, tmp_path / "one", *common, "--accumulate", "2")
    assert train.main(single) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    torchrun = [*TORCHRUN_TRAIN, *_cli(text_corpus, tmp_path / "two", *common)]
    # bounded by its 3 updates
    result = subprocess.run(torchrun, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    one = load_checkpoint(checkpoints(tmp_path / "one")[-1])
    two = load_checkpoint(checkpoints(tmp_path / "two")[-1])
    assert one["step"] == two["step"] == 3
    assert json.loads((tmp_path / "two" / "config.json").read_text())["world_size"] == 2
    assert (
        "600 tokens per update = 2 process(es) x 1 micro-batch(es) x 300"
        in result.stdout
    )
    # the same sentences, counted over both processes
    for key in ("tgt_tokens", "src_tokens", "sentences"):
        assert one[key] == two[key] > 0
    for name, value in one["model"].items():
        if name.endswith("w_k.bias"):
            # The key bias adds the same amount to every score of a query, which the
            # softmax ignores: its true gradient is zero, and Adam turns the rounding
            # noise it gets into full-size steps.
            continue
        torch.testing.assert_close(
            two["model"][name], value, rtol=1e-4, atol=1e-6, msg=name
        )
    # the parameters did move: the comparison is not between two untouched models
    initial = make_model(TINY)
    assert not torch.allclose(
        one["model"]["encoder.layers.0.feed_forward.w_1.weight"],
        initial.state_dict()["encoder.layers.0.feed_forward.w_1.weight"],
    )


def test_command_line_lists_valid_options_for_a_typo(capsys):
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--d-modle", "512"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert (
        "unrecognized arguments: --d-modle" in err
        and "--d-model" in err
        and "--batch-tokens" in err
    )


def test_help_documents_every_setting(capsys):
    with pytest.raises(SystemExit):
        train.main(["--help"])
    out = capsys.readouterr().out
    for field in [
        *TransformerConfig.__dataclass_fields__,
        *RunConfig.__dataclass_fields__,
    ]:
        assert f"--{field.replace('_', '-')}" in out
    assert "label smoothing" in out.lower() or "ε_ls" in out


def test_update_batches_give_every_process_layout_the_same_updates():
    from annotated_transformer.optimization import update_batches

    # 19 batches: the last 3 do not fill a 16-batch update... or a 8-batch one
    batches = [[i] for i in range(19)]
    reference = [sum(u, []) for u in update_batches(batches, 1, 8, 0)]
    assert reference == [list(range(8)), list(range(8, 16))]
    for world, accumulate in ((2, 4), (4, 2), (8, 1)):
        shards = [
            update_batches(batches, world, accumulate, rank) for rank in range(world)
        ]
        assert all(len(s) == 2 and all(len(u) == accumulate for u in s) for s in shards)
        assert [sum((s[u] for s in shards), []) for u in range(2)] == [
            [[i] for i in r] for r in reference
        ]


def test_a_stop_between_scheduled_checkpoints_is_resumed_but_not_averaged(
    text_corpus, tmp_path, capsys
):
    assert (
        train.main(_cli(text_corpus, tmp_path, "--max-steps", "10", "--average", "2"))
        == 0
    )
    assert [p.name for p in checkpoints(tmp_path)] == [
        "step-0000004.pt",
        "step-0000008.pt",
    ]
    assert latest_checkpoint(tmp_path).name == "resume-0000010.pt"
    results = json.loads((tmp_path / "results.json").read_text())
    assert (
        results["checkpoints"] == ["step-0000004.pt", "step-0000008.pt"]
        and results["updates"] == 10
    )
    # resumes at 10
    assert (
        train.main(_cli(text_corpus, tmp_path, "--max-steps", "12", "--average", "2"))
        == 0
    )
    assert "resumed from" in capsys.readouterr().out
    assert [p.name for p in checkpoints(tmp_path)] == [
        "step-0000004.pt",
        "step-0000008.pt",
        "step-0000012.pt",
    ]
    # the stop's state is superseded and removed
    assert latest_checkpoint(tmp_path).name == "step-0000012.pt"
    assert not list((tmp_path / "checkpoints").glob("resume-*.pt"))


def test_a_failed_data_load_writes_nothing_and_the_retry_trains(
    text_corpus, tmp_path, capsys
):
    run = tmp_path / "run"
    wrong = [
        a if a != str(text_corpus) else str(tmp_path / "no-such-data")
        for a in _cli(text_corpus, run)
    ]
    assert train.main([*wrong, "--max-steps", "2"]) == 2
    # the error names the option that exists
    assert "for --corpus text" in capsys.readouterr().err
    assert not run.exists()
    assert train.main([*_cli(text_corpus, run), "--max-steps", "2"]) == 0


def test_filtering_that_leaves_no_pairs_names_the_option_and_the_retry_trains(
    text_corpus, tmp_path, capsys
):
    run = tmp_path / "run"
    assert (
        train.main(
            [*_cli(text_corpus, run), "--max-steps", "2", "--max-sentence-tokens", "1"]
        )
        == 2
    )
    assert "raise --max-sentence-tokens" in capsys.readouterr().err
    assert not (run / "config.json").exists()
    assert train.main([*_cli(text_corpus, run), "--max-steps", "2"]) == 0


def test_a_finished_run_reports_instead_of_training_again(
    text_corpus, tmp_path, capsys
):
    assert train.main(_cli(text_corpus, tmp_path / "run", "--max-steps", "2")) == 0
    lines = (tmp_path / "run" / "metrics.jsonl").read_text()
    capsys.readouterr()
    # DIR/ is DIR
    assert (
        train.main(_cli(text_corpus, str(tmp_path / "run") + "/", "--max-steps", "2"))
        == 0
    )
    out = capsys.readouterr().out
    assert "is finished: 2 updates, sacreBLEU" in out and "model:" not in out
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == lines
    # other settings are refused, as for a run that is not finished
    wider = _cli(text_corpus, tmp_path / "run", "--max-steps", "2", "--d-model", "64")
    assert train.main(wider) == 2
    assert "holds a run with different settings (--d-model)" in capsys.readouterr().err
    # a results file that is not what a run writes is named, with what to do
    results = tmp_path / "run" / "results.json"
    for damaged in ('{"updates": "many"}', "[]"):
        results.write_text(damaged)
        assert train.main(_cli(text_corpus, tmp_path / "run", "--max-steps", "2")) == 2
        err = capsys.readouterr().err
        assert f"{results} is not the results a run writes" in err
        assert err.count("\n") == 1


def test_a_second_trainer_on_the_same_folder_is_refused(text_corpus, tmp_path, capsys):
    holder = RunLock(tmp_path / "run")  # as a process training into the folder holds it
    try:
        assert train.main(_cli(text_corpus, tmp_path / "run", "--max-steps", "2")) == 2
        err = capsys.readouterr().err
        assert "is being trained by process" in err and "Traceback" not in err
    finally:
        holder.release()
    assert not (tmp_path / "run" / "checkpoints").exists()
    # free again
    assert train.main(_cli(text_corpus, tmp_path / "run", "--max-steps", "2")) == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_asking_for_a_missing_gpu_is_a_clear_error(text_corpus, tmp_path, capsys):
    assert train.main(_cli(text_corpus, tmp_path / "run", "--device", "cuda")) == 2
    err = capsys.readouterr().err
    assert "PyTorch sees no CUDA GPU" in err and "Traceback" not in err


def test_print_config_resolves_preset_and_options_without_training(tmp_path, capsys):
    argv = [
        "--preset",
        "base",
        "--no-bf16",
        "--max-tokens",
        "8000",
        "--update-freq",
        "2",
        "--run",
        str(tmp_path / "r"),
    ]
    assert train.main([*argv, "--print-config"]) == 0
    resolved = json.loads(capsys.readouterr().out)
    assert resolved["model"]["d_model"] == 512 and resolved["run"]["bf16"] is False
    assert (
        resolved["run"]["batch_tokens"] == 8000 and resolved["run"]["accumulate"] == 2
    )
    assert resolved["run"]["warmup"] == 4000 and not (tmp_path / "r").exists()


def test_help_shows_the_defaults_of_the_chosen_preset(capsys):
    with pytest.raises(SystemExit):
        train.main(["--help", "--preset", "big"])
    out = capsys.readouterr().out
    # big's d_model
    assert "defaults shown are the big preset's" in out and "(default: 1024)" in out
    assert "--no-bf16" in out and "--max-tokens" in out and "--lenpen" in out


# one compilation for all shapes; one per fixed shape
@pytest.mark.slow
@pytest.mark.parametrize("buckets", ["0", "2"])
def test_compiled_training_follows_the_eager_trajectory(text_corpus, tmp_path, buckets):
    # compiled
    steps = [
        "--max-steps",
        "4",
        "--dropout",
        "0",
        "--beam-size",
        "1",
        "--buckets",
        buckets,
    ]
    # dropout would draw other masks
    assert train.main(_cli(text_corpus, tmp_path / "eager", *steps)) == 0
    assert (
        train.main(_cli(text_corpus, tmp_path / "compiled", *steps, "--compile")) == 0
    )
    eager, compiled = _losses(tmp_path / "eager"), _losses(tmp_path / "compiled")
    assert sorted(compiled) == [1, 2, 3, 4]
    for step in eager:
        assert compiled[step] == pytest.approx(eager[step], rel=1e-4), step


def test_metrics_carry_the_models_flops_and_utilisation(
    text_corpus, tmp_path, monkeypatch
):
    # a known peak, not a timed probe
    monkeypatch.setattr(trainer, "peak_flops", lambda *args, **kwargs: 2e12)
    assert (
        train.main(
            _cli(text_corpus, tmp_path / "run", "--max-steps", "2", "--beam-size", "1")
        )
        == 0
    )
    records = [
        json.loads(line)
        for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    updates = [r for r in records if "loss" in r]
    assert len(updates) == 2 and all(r["tflops"] > 0 for r in updates)
    for r in updates:  # utilisation is the achieved rate over the peak
        assert r["mfu"] == pytest.approx(r["tflops"] * 1e12 / 2e12, rel=1e-9)


def test_utilisation_of_several_processes_is_over_all_their_devices(monkeypatch):
    """An update's FLOPs are every process's: two processes of a 2e12 FLOP/s device
    reach their peak at 4e12."""
    monkeypatch.setattr(trainer, "peak_flops", lambda *args, **kwargs: 2e12)
    assert trainer.run_peak("cpu", False, 1) == 2e12
    assert trainer.run_peak("cpu", False, 2) == 4e12
    monkeypatch.setattr(trainer, "peak_flops", lambda *args, **kwargs: None)
    assert trainer.run_peak("cuda:0", True, 2) is None  # a GPU of no known peak


def test_source_alignment_is_one_for_even_attention_and_matches_a_hand_count():
    """The alignment signal against two references: a decoder whose encoder-decoder
    queries are zero spreads evenly over the source (ratio exactly 1), and for a
    trained-looking one it equals the entropy computed by hand from the captured
    weights."""
    torch.manual_seed(0)
    model = make_model(
        TransformerConfig(vocab_size=30, n_layers=2, d_model=32, d_ff=64, n_heads=4)
    )
    pairs = [([5, 6, 7, 8], [9, 10]), ([11, 12], [13, 14, 15]), ([16, 17, 18], [19])]
    # every score q·k becomes 0: weights 1/n over the real source tokens
    for layer in model.decoder.layers:
        torch.nn.init.zeros_(layer.src_attn.w_q.weight)
        torch.nn.init.zeros_(layer.src_attn.w_q.bias)
    assert source_alignment(model, pairs, 1000, "cpu") == pytest.approx([1.0, 1.0])

    torch.manual_seed(1)
    model = make_model(
        TransformerConfig(vocab_size=30, n_layers=2, d_model=32, d_ff=64, n_heads=4)
    )
    ratios = source_alignment(model, pairs, 1000, "cpu")
    model.eval()
    expected = [0.0, 0.0]
    for src, tgt in pairs:  # one sentence at a time, no padding anywhere
        s, t = torch.tensor([src + [2]]), torch.tensor([[1] + tgt])
        heard = []  # eq. 1's weights pass through each attention's dropout
        hooks = [
            layer.src_attn.dropout.register_forward_hook(
                lambda module, inputs, output, heard=heard: heard.append(inputs[0])
            )
            for layer in model.decoder.layers
        ]
        model(
            s,
            t,
            torch.ones(1, 1, s.size(1), dtype=torch.bool),
            subsequent_mask(t.size(1)),
        )
        for hook in hooks:
            hook.remove()
        for i in range(len(model.decoder.layers)):
            w = heard[i][0]  # (h, tgt, src)
            expected[i] += (
                (-(w * w.log()).sum(-1).mean(0) / math.log(s.size(1))).sum().item()
            )
    count = sum(len(tgt) + 1 for _, tgt in pairs)
    assert ratios == pytest.approx([e / count for e in expected], rel=1e-5)
    assert all(0 < r < 1 for r in ratios)


@pytest.mark.parametrize(
    "name, message",
    [
        ("tpu", "not one this package runs on"),
        ("cpu:1", "not one this package runs on"),
        ("cuda:x", "not one this package runs on"),
    ],
)
def test_unknown_devices_are_refused_by_name(name, message):
    with pytest.raises(ValueError, match=message):
        devices.resolve_device(name)
    assert devices.resolve_device("cpu") == "cpu"


def test_training_keeps_its_pairs_in_a_token_cache_that_a_resumed_run_maps(
    text_corpus, tmp_path, capsys
):
    run = tmp_path / "run"
    assert train.main(_cli(text_corpus, run, "--max-steps", "2")) == 0
    (meta,) = (run / "tokens").glob("*/meta.json")
    cache = token_store.TokenCache(meta.parent)
    assert f"train: kept {len(cache):,} of 400 pairs" in capsys.readouterr().out
    stamp = (meta.parent / "src.ids").stat().st_mtime_ns
    # resumes: maps, encodes nothing
    assert train.main(_cli(text_corpus, run, "--max-steps", "4")) == 0
    assert (meta.parent / "src.ids").stat().st_mtime_ns == stamp and sorted(
        _losses(run)
    ) == [1, 2, 3, 4]


def test_a_process_other_than_rank_0_maps_the_token_cache_and_reads_no_training_text(
    text_corpus, tmp_path, monkeypatch
):
    run = tmp_path / "run"
    # encodes the pairs, as rank 0 would; 1 process x 2 micro-batches, as 2 x 1 below
    assert (
        train.main(_cli(text_corpus, run, "--max-steps", "2", "--accumulate", "2")) == 0
    )
    (meta,) = (run / "tokens").glob("*/meta.json")
    model_config, run_config = train.configs_from_args(
        train.build_parser().parse_args(_cli(text_corpus, run))
    )
    splits_read, load_pairs = [], corpora.load_pairs
    monkeypatch.setattr(
        corpora,
        "load_pairs",
        lambda corpus, split, *rest: (
            splits_read.append(split) or load_pairs(corpus, split, *rest)
        ),
    )
    # rank 1 of 2, without
    monkeypatch.setattr(run_folder, "setup_distributed", lambda device: (1, 2, device))
    # a process group
    monkeypatch.setattr(
        torch.nn.parallel, "DistributedDataParallel", lambda model: model
    )
    mapped = trainer.start(model_config, run_config).data
    assert splits_read == [run_config.valid_split]
    assert (
        isinstance(mapped.stream.pairs, token_store.TokenCache)
        and mapped.stream.pairs.folder == meta.parent
    )
    assert len(mapped.valid_pairs) > 0 and mapped.sp.get_piece_size() == 80


# Reading a number back from the device makes the CPU wait for it to finish.
READS = ("item", "tolist", "__float__", "__int__", "__bool__", "__index__")


def test_updates_read_nothing_back_between_metric_lines(
    text_corpus, tmp_path, monkeypatch
):
    """Every read of a tensor's value into Python by the package's own code is
    recorded, except the counting of each batch on the CPU before it goes to the
    device (the stream's collation and ``UpdateCounts.of``): between metric lines
    there is none. (Reads inside PyTorch, such as plain Adam's step counter, which
    lives on the CPU, are PyTorch's.)"""
    events, counting = [], []

    def reading(name, real):
        def read(self, *args):
            caller = sys._getframe(1).f_code.co_filename
            if not counting and "annotated_transformer" in caller:
                events.append(f"{name} in {Path(caller).name}")
            return real(self, *args)

        return read

    def marked(real, mark=None, quiet=False):
        def call(*args, **kwargs):
            if quiet:
                counting.append(True)
            try:
                return real(*args, **kwargs)
            finally:
                if quiet:
                    counting.pop()
                if mark:
                    events.append(mark)

        return call

    for name in READS:
        monkeypatch.setattr(
            torch.Tensor, name, reading(name, getattr(torch.Tensor, name))
        )
    stream = run_data.UpdateStream
    monkeypatch.setattr(stream, "next", marked(stream.next, quiet=True))
    of = trainer.UpdateCounts.of.__func__
    monkeypatch.setattr(trainer.UpdateCounts, "of", classmethod(marked(of, quiet=True)))
    monkeypatch.setattr(trainer, "train_step", marked(trainer.train_step, "update"))
    monkeypatch.setattr(trainer, "log_update", marked(trainer.log_update, "log"))
    options = ["--max-steps", "12", "--log-every", "5", "--save-every", "100000"]
    assert train.main([*_cli(text_corpus, tmp_path), *options, "--no-progress"]) == 0
    monkeypatch.undo()
    # the events after each update, up to the next one
    after, marks = {}, iter(range(1, 100))
    for event in events[events.index("update") :]:
        if event == "update":
            step = next(marks)
            after[step] = []
        else:
            after[step].append(event)
    logged = {step for step, seen in after.items() if "log" in seen}
    assert sorted(after) == list(range(1, 13)) and logged == {1, 5, 10, 12}
    reads = {step: [e for e in seen if e != "log"] for step, seen in after.items()}
    assert {step: r for step, r in reads.items() if step not in logged and r} == {}
    # the instrument sees the reads a metric line makes
    assert all(reads[step] for step in logged)
