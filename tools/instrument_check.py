"""Run appendix D's instrument check and store its measures as JSON.

    python tools/instrument_check.py book/measured/instrument-check.json

Trains the figure model's depth and heads on the reversal task (about a minute on a
CPU), captures new pairs, stores their weights as float16, and measures the reversal
on the stored file."""

import json
import sys
import tempfile
from pathlib import Path

from annotated_transformer.cli import check_writable, command, command_parser
from annotated_transformer.figures.instrument import instrument_check
from annotated_transformer.running.files import write_atomically


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError
    return value


positive.__name__ = "whole number of at least 1"  # what argparse's message calls it


def build_parser():
    parser = command_parser("instrument_check", __doc__.splitlines()[0])
    parser.prog = "python tools/instrument_check.py"
    parser.add_argument("output", type=Path, help="the JSON file to write")
    parser.add_argument(
        "--steps", type=positive, default=400, help="training updates (default: 400)"
    )
    return parser


@command(parser=build_parser)
def main(args) -> int:
    check_writable(args.output, "output")  # before the training, not after it
    with tempfile.TemporaryDirectory() as folder:
        record = instrument_check(Path(folder) / "weights.npz", args.steps)
    record["command"] = f"python tools/instrument_check.py {args.output}"
    text = json.dumps(record, indent=1, allow_nan=False) + "\n"
    write_atomically(args.output, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
