"""Time `make lab`'s install from a fresh clone and weigh the environment it makes.

python tools/install_size.py --torch cpu   # book/measured/install/cpu.json
python tools/install_size.py --torch cuda  # book/measured/install/cuda.json

The repository's committed tree is cloned into a temporary folder, and `make
.venv/.installed-lab` runs there: everything `make lab` installs before it starts the
server (the package, the book extra, JupyterLab, jupyterlab-myst, pytest and nbmake).
The clone's environment first gets the PyTorch build asked for (`--wheel`, a pip
requirement; the defaults are a CPU build, which the Makefile's CPU step installs where
no NVIDIA driver is found, and a CUDA build, which pip takes where a driver is found or
the CPU index cannot be reached). The file records the minutes, the environment's size
in GB, the PyTorch build and the command; a build other than the one asked for is not
stored.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from chapter_times import current_commit  # noqa: E402

FOLDER = ROOT / "book/measured/install"


def folder_bytes(path: Path) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            file = Path(folder) / name
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def summary(folder: Path = FOLDER) -> str:
    """What the README says of the stored installs (a test keeps the two equal)."""
    cpu, cuda = (
        json.loads((folder / f"{b}.json").read_text()) for b in ("cpu", "cuda")
    )
    return (
        f"{cpu['gigabytes']:.1f} GB with PyTorch's CPU build, installed in "
        f"{minutes(cpu['minutes'])}, and {cuda['gigabytes']:.1f} GB with its CUDA "
        f"build, in {minutes(cuda['minutes'])} (from a package mirror on the same "
        "network; a slower connection adds the download)"
    )


def minutes(value: float) -> str:
    """``1 minute``, ``3 minutes``: the rounded count, with its noun in number."""
    count = round(value)
    return f"{count} minute" if count == 1 else f"{count} minutes"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", choices=("cpu", "cuda"))
    parser.add_argument(
        "--summary", action="store_true", help="print what the stored files say, only"
    )
    parser.add_argument(
        "--wheel",
        help="what pip installs first (default: torch==2.13.0 for cpu, torch==2.14.1 "
        "for cuda)",
    )
    parser.add_argument("-o", "--output", type=Path, help="JSON file to write")
    args = parser.parse_args(argv)
    if args.summary:
        print(f"make lab's environment: {summary()}")
        return 0
    if args.torch is None:
        parser.error("give --torch cpu or --torch cuda (or --summary)")
    wheel = args.wheel or {"cpu": "torch==2.13.0", "cuda": "torch==2.14.1"}[args.torch]
    output = args.output or FOLDER / f"{args.torch}.json"
    with tempfile.TemporaryDirectory(prefix="install-size-") as tmp:
        clone = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        venv = clone / ".venv"
        started = time.perf_counter()
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(venv / "bin/python"), "-m", "pip", "install", "-q", wheel],
            ["make", ".venv/.installed-lab"],
        ]
        for step in steps:
            status = subprocess.run(step, cwd=clone)
            if status.returncode != 0:
                print(
                    f"{' '.join(step)} exited with {status.returncode}: nothing stored",
                    file=sys.stderr,
                )
                return status.returncode
        seconds = time.perf_counter() - started
        probe = "import torch; print(torch.__version__, torch.version.cuda or 'cpu')"
        version, build = subprocess.run(
            [str(venv / "bin/python"), "-c", probe],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        size = folder_bytes(venv)
    if (build == "cpu") != (args.torch == "cpu"):
        print(
            f"{wheel} gave PyTorch {version} ({build}): nothing stored", file=sys.stderr
        )
        return 1
    record = {
        "torch_build": "cpu" if build == "cpu" else f"cuda {build}",
        "torch_version": version,
        "command": "git clone ... && make .venv/.installed-lab"
        + f" (after: python -m venv .venv && .venv/bin/pip install {wheel})",
        "commit": current_commit(),
        "minutes": round(seconds / 60, 2),
        "gigabytes": round(size / 1e9, 2),
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
