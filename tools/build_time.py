"""Time `make book` from nothing, on a quiet machine or beside one busy core, and store
the minutes.

python tools/build_time.py --machine quiet  # book/measured/build-times/quiet.json
python tools/build_time.py --machine busy   # beside one other CPU-bound process

The build starts from an empty `_build` (every page is executed), at the default scale
unless AT_SCALE says otherwise, with OMP_NUM_THREADS unset: the kernels choose their
threads as a reader's would. "Busy" starts a process that keeps one core busy with
arithmetic until the build ends. The file records the scale, the command, the cores,
the commit and the minutes, so that a stored time says on what it was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from chapter_times import current_commit  # noqa: E402

FOLDER = ROOT / "book/measured/build-times"
BUSY = "x = 0\nwhile True:\n    x = (x * 3 + 1) % 1000003\n"


def summary(folder: Path = FOLDER) -> str:
    """What the README says of the stored build times (a test keeps the two equal)."""
    quiet, busy = (
        json.loads((folder / f"{m}.json").read_text()) for m in ("quiet", "busy")
    )
    cores = quiet["cpu_cores"]
    return (
        f"{quiet['minutes']:.0f} minutes on the book's {cores}-core CPU with "
        f"nothing else running, and {busy['minutes']:.0f} minutes with another program "
        "keeping one core busy"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", choices=("quiet", "busy"), required=True)
    parser.add_argument("-o", "--output", type=Path, help="JSON file to write")
    args = parser.parse_args(argv)
    output = args.output or FOLDER / f"{args.machine}.json"
    scale = os.environ.get("AT_SCALE", "laptop")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    busy = None
    if args.machine == "busy":
        busy = subprocess.Popen([sys.executable, "-c", BUSY])
    started = time.perf_counter()
    try:
        status = subprocess.run(
            ["make", "book", f"AT_SCALE={scale}"], cwd=ROOT, env=env
        )
    finally:
        if busy is not None:
            busy.kill()
    seconds = time.perf_counter() - started
    if status.returncode != 0:
        print(
            f"make book exited with {status.returncode}: nothing stored",
            file=sys.stderr,
        )
        return status.returncode
    commit = current_commit()
    record = {
        "machine": args.machine,
        "scale": scale,
        "command": f"rm -rf _build && make book AT_SCALE={scale}"
        + (" (beside one CPU-bound process)" if busy else ""),
        "commit": commit,
        "cpu_cores": os.cpu_count(),
        "minutes": round(seconds / 60, 1),
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {output}: {record['minutes']} minutes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
