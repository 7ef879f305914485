"""Run appendix D's instrument check and store its measures as JSON.

    python tools/instrument_check.py book/measured/instrument-check.json

Trains the figure model's depth and heads on the reversal task (about a minute on a
CPU), captures new pairs, stores their weights as float16, and measures the reversal
on the stored file."""

import argparse
import json
import tempfile
from pathlib import Path

from annotated_transformer.visualize import instrument_check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="the JSON file to write")
    parser.add_argument("--steps", type=int, default=400, help="training updates")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        record = instrument_check(Path(folder) / "weights.npz", args.steps)
    record["command"] = f"python tools/instrument_check.py {args.output}"
    args.output.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
