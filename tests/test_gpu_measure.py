"""tools/gpu_measure.sh, the one command for every standing GPU measurement, run on the
CPU at a tiny size; and the profile's time by kind of work that it reports."""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from torch.autograd import DeviceType

from annotated_transformer.measure.performance import kind_of, time_by_kind

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "gpu_measure.sh"
ITEMS = ("train-base", "train-big", "decode", "default")


@pytest.mark.slow
def test_the_gpu_script_runs_unchanged_at_a_tiny_size(shared_data, tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        ["bash", str(SCRIPT), "--tiny", str(shared_data), str(out)],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (out / "stopped.txt").exists()
    # one line per item, each with a result
    lines = (out / "summary.txt").read_text().splitlines()
    assert [line.split(":")[0] for line in lines] == list(ITEMS)
    assert not any("no result" in line for line in lines)
    # the README holds each command as it ran
    readme = (out / "README.md").read_text()
    for item in ITEMS:
        assert f"- {item}: `{sys.executable} -m annotated_transformer." in readme
    # the profile's kinds add up to every operator's own time (a CPU has no idle time)
    train = json.loads((out / "train-base.json").read_text())
    (result,) = train["results"]
    kinds = result["profile_kinds"]
    every = result["profile"][-1]
    assert every["op"] == "every operator"
    assert sum(kinds["ms_per_step"].values()) == pytest.approx(every["ms_per_step"])
    assert kinds["ms_per_step"]["matmul"] > 0 and kinds["idle_ms_per_step"] is None
    decode = json.loads((out / "decode.json").read_text())
    assert decode["sentences"] == 3 and decode["results"][0]["beam"] == 4
    assert decode["model"] == "random weights (base)"
    metrics = (out / "default-metrics.jsonl").read_text().splitlines()
    assert max(json.loads(line)["step"] for line in metrics) == 2


def test_the_gpu_script_refuses_an_unknown_item_in_one_line(tmp_path):
    done = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path), str(tmp_path / "out"), "train-huge"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "gpu_measure.sh: unknown item 'train-huge' (train-base, train-big, decode or "
        "default)"
    ]
    assert not (tmp_path / "out").exists()


def gpu_script(*args: str, python: str = sys.executable) -> subprocess.CompletedProcess:
    """tools/gpu_measure.sh with ``args``, its items run by ``python``."""
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env={**os.environ, "PYTHON": python},
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    "args", [["--help"], ["-h"], ["--tiny", "-h"], ["D", "--help"]]
)
def test_the_gpu_script_prints_its_usage_when_asked(args):
    done = gpu_script(*args)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("Every standing GPU measurement in one command")


@pytest.mark.parametrize("out", ["", "/dev/null", "a file"])
def test_an_out_that_is_no_folder_is_one_line(out, tmp_path):
    if out == "a file":
        out = tmp_path / "a file"
        out.write_text("kept\n")
    done = gpu_script(str(tmp_path), str(out))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    expected = "OUT is empty" if out == "" else f"OUT {out} is not a folder"
    assert line.startswith(f"gpu_measure.sh: {expected}: name "), line
    assert list(tmp_path.iterdir()) == ([out] if out == tmp_path / "a file" else [])


def test_a_python_that_does_not_run_is_one_line_before_anything_is_made(tmp_path):
    done = gpu_script(str(tmp_path), str(tmp_path / "out"), python="/nonexistent")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "gpu_measure.sh: PYTHON=/nonexistent does not run or cannot import torch: "
        "set PYTHON to the interpreter of the package's environment"
    ]
    assert not (tmp_path / "out").exists()


def test_an_item_that_fails_is_not_called_stopped_by_its_time_limit(tmp_path):
    # an interpreter that imports torch and writes the summary, and fails every item
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f'  "-c import torch" | *gpu_summary.py*) exec {sys.executable} "$@" ;;\n'
        "esac\n"
        "exit 3\n"
    )
    python.chmod(0o755)
    out = tmp_path / "out"
    done = gpu_script(str(tmp_path), str(out), "decode", python=str(python))
    assert done.returncode == 0, done.stderr
    assert (out / "failed.txt").read_text() == "decode: failed (status 3)\n"
    assert not (out / "stopped.txt").exists()
    summary = (out / "summary.txt").read_text().splitlines()
    assert "decode: no result, failed (status 3)" in summary
    # an item stopped at its time limit is said to be, in the summary too
    (out / "stopped.txt").write_text(
        "train-big: stopped at its time limit of 270 s (status 124)\n"
    )
    lines = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu_summary.py"), str(out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert lines == [
        "train-base: no result",
        "train-big: no result, stopped at its time limit of 270 s (status 124)",
        "decode: no result, failed (status 3)",
        "default: no result",
    ]


def kernel(start: float, end: float, name: str):
    return SimpleNamespace(
        device_type=DeviceType.CUDA,
        time_range=SimpleNamespace(start=start, end=end),
        name=name,
    )


def test_time_by_kind_counts_overlapping_kernels_once_in_the_idle_time():
    """Kernels at 0-10 and 5-15 µs overlap; the GPU is idle from 15 to 20 only. Over
    two steps, every time is halved."""
    events = [
        kernel(20, 30, "vectorized_elementwise_kernel"),
        kernel(0, 10, "sm90_xmma_gemm_bf16bf16"),
        kernel(5, 15, "cudnn_sdpa_flash_fprop"),
        SimpleNamespace(device_type=DeviceType.CPU, time_range=None, name="aten::mm"),
    ]
    prof = SimpleNamespace(events=lambda: events)
    kinds = time_by_kind(prof, steps=2, on_gpu=True)
    assert kinds["ms_per_step"] == {
        "attention": 0.005,
        "matmul": 0.005,
        "loss": 0.0,
        "optimizer": 0.0,
        "elementwise and other": 0.005,
    }
    assert kinds["idle_ms_per_step"] == pytest.approx(0.0025)


def test_kernels_are_told_apart_by_name():
    assert kind_of("fmha_cutlassF_bf16_aligned_64x64") == "attention"
    assert kind_of("cutlass_80_tensorop_bf16_s16816gemm") == "matmul"
    assert kind_of("triton_red_fused__log_softmax_sum_3") == "loss"
    assert (
        kind_of("void multi_tensor_apply_kernel<FusedAdamMathFunctor>") == "optimizer"
    )
    assert kind_of("triton_poi_fused_add_native_dropout_7") == "elementwise and other"
