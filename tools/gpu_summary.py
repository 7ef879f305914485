"""One line per item of ``tools/gpu_measure.sh``, read from the files it wrote.

    python tools/gpu_summary.py OUT

An item whose file is missing says so, and why when the script recorded it: stopped at
its time limit (``stopped.txt``) or failed with an exit status (``failed.txt``).
"""

import json
import sys
from pathlib import Path

from annotated_transformer.config import RUN_PRESETS


def read(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def train_line(name: str, report: dict | None) -> str:
    if report is None:
        return f"{name}: no result"
    parts = []
    for r in report["results"]:
        words = [f"{r['tgt_tokens_per_s']:,.0f} tgt tok/s"]
        if r.get("mfu"):
            words.append(f"{r['mfu']:.1%} MFU")
        if r["peak_memory_gib"] is not None:
            words.append(f"{r['peak_memory_gib']:.1f} GiB")
        parts.append(("compiled " if r["compiled"] else "eager ") + ", ".join(words))
    kinds = next(
        (
            r["profile_kinds"]
            for r in reversed(report["results"])
            if "profile_kinds" in r
        ),
        None,
    )
    line = (
        f"{name}: {report['preset']}, {report['batch_tokens']:,} tokens, "
        f"padding {report['padding']:.1%}; " + "; ".join(parts)
    )
    if kinds:
        total = sum(kinds["ms_per_step"].values()) + (kinds["idle_ms_per_step"] or 0)
        shares = [f"{k} {ms / total:.0%}" for k, ms in kinds["ms_per_step"].items()]
        if kinds["idle_ms_per_step"] is not None:
            shares.append(f"idle {kinds['idle_ms_per_step'] / total:.0%}")
        line += "; profiled time: " + ", ".join(shares)
    return line


def decode_line(report: dict | None) -> str:
    if report is None:
        return "decode: no result"
    r = report["results"][0]
    return (
        f"decode: {report['model']}, {report['sentences']} sentences of "
        f"{report['test_set']}, beam {r['beam']}: {r['sentences_per_s']:.1f} "
        f"sentences/s, {r['tokens_per_s']:,.0f} output tokens/s"
    )


def default_line(out: Path) -> str:
    metrics = []
    try:
        with open(out / "default-metrics.jsonl", encoding="utf-8") as lines:
            metrics = [json.loads(line) for line in lines if line.strip()]
    except (OSError, ValueError):
        pass
    timed = [m for m in metrics if "minutes" in m]
    if not timed:
        return "default: no result"
    last, half = timed[-1], timed[len(timed) // 2]
    updates = RUN_PRESETS["multi30k"][1].max_steps
    by_count = last["minutes"] * updates / last["step"]
    line = (
        f"default: {last['step']} updates in {last['minutes']:.2f} min, so its "
        f"{updates:,} updates take about {by_count:.1f} min by update count"
    )
    if last["step"] > half["step"]:  # the first updates may run slower than the rest
        rate = (last["minutes"] - half["minutes"]) / (last["step"] - half["step"])
        at_rate = last["minutes"] + (updates - last["step"]) * rate
        line += (
            f", {at_rate:.1f} min at the rate of updates {half['step']}-{last['step']}"
        )
    line += " (validation and checkpoints included)"
    results = read(out / "default-results.json")
    if results:
        line += f"; translating the test set took {results['translate_seconds']} s"
    return line


def endings(out: Path) -> dict[str, str]:
    """Why items ended without a result, by name: the lines ``item: why`` that
    gpu_measure.sh wrote to stopped.txt and failed.txt."""
    why = {}
    for name in ("stopped.txt", "failed.txt"):
        try:
            lines = (out / name).read_text(encoding="utf-8").splitlines()
        except (OSError, ValueError):
            continue
        for line in lines:
            item, _, reason = line.partition(": ")
            why[item] = reason
    return why


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    why = endings(out)
    for line in (
        train_line("train-base", read(out / "train-base.json")),
        train_line("train-big", read(out / "train-big.json")),
        decode_line(read(out / "decode.json")),
        default_line(out),
    ):
        item = line.split(":")[0]
        if line.endswith(": no result") and item in why:
            line += f", {why[item]}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
