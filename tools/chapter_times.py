"""Time every chapter as a reader runs it (``pytest --nbmake book/``) and store the
seconds per chapter.

python tools/chapter_times.py --scale laptop  # writes book/measured/chapter-times/

Each chapter is one test of nbmake; pytest's JUnit report gives the seconds of each.
The file records the scale, the total, the number of CPU cores and the commit, so that a
stored time says on what it was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def chapter_seconds(report: Path) -> dict[str, float]:
    """Seconds per chapter (file name without suffix) from a JUnit XML report."""
    times = {}
    for case in ET.parse(report).iter("testcase"):
        name = Path(case.get("file") or case.get("name")).stem
        failed = case.find("failure") is not None or case.find("error") is not None
        if failed:
            raise RuntimeError(f"chapter {name} failed; its time is not stored")
        times[name] = round(float(case.get("time")), 1)
    return dict(sorted(times.items()))


def current_commit() -> str:
    """The short name of the commit a measurement was taken at."""
    command = ["git", "rev-parse", "--short", "HEAD"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip()


def summary(folder: Path = ROOT / "book/measured/chapter-times") -> str:
    """What the README says of the stored times (a test keeps the two equal)."""
    total = {
        scale: json.loads((folder / f"{scale}.json").read_text())["total_seconds"] / 60
        for scale in ("laptop", "smoke")
    }
    return (
        f"{total['laptop']:.0f} minutes at the default scale and {total['smoke']:.0f} "
        "minutes at smoke scale"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("smoke", "laptop"), required=True)
    parser.add_argument("-o", "--output", type=Path, help="JSON file to write")
    args = parser.parse_args(argv)
    output = args.output or ROOT / "book/measured/chapter-times" / f"{args.scale}.json"
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.xml"
        status = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "--nbmake",
                "book",
            ]
            + ["-p", "no:cacheprovider", f"--junitxml={report}"],
            cwd=ROOT,
            env={**os.environ, "AT_SCALE": args.scale},
        ).returncode
        if status != 0:
            print(f"pytest exited with {status}: nothing stored", file=sys.stderr)
            return status
        times = chapter_seconds(report)
    commit = current_commit()
    record = {
        "scale": args.scale,
        "command": f"AT_SCALE={args.scale} python -m pytest --nbmake book",
        "commit": commit,
        "cpu_cores": os.cpu_count(),
        "total_seconds": round(sum(times.values()), 1),
        "seconds": times,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {output}: {record['total_seconds'] / 60:.1f} minutes in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
