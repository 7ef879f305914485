"""The training compute of a stored run that was made before runs recorded it: the
batches of its updates are planned again exactly as training planned them (same data,
vocabulary, batch size and seed, from the run's ``config.json``), and their FLOPs are
summed with the book's count (``flops.training_flops``). The replay must give the
token counts the run logged in ``metrics.jsonl`` at every metric line, or nothing is
written; then ``train_flops`` is added to the run's ``results.json`` and to each metric
line that logged token counts, as a run records it today.

python tools/replay_compute.py book/measured/recipe-search/previous-default --data-dir
DATA"""

import argparse
import json
import tempfile
from pathlib import Path

from tqdm import tqdm

from annotated_transformer import data
from annotated_transformer.config import RunConfig, TransformerConfig
from annotated_transformer.measure.flops import batch_lengths, training_flops
from annotated_transformer.running import run_data
from annotated_transformer.speed import choice


def replay(run_dir: Path, data_dir: Path) -> dict[int, float]:
    """The training compute after each logged update of the run in ``run_dir``."""
    settings = json.loads((run_dir / "config.json").read_text())
    model, run = TransformerConfig(**settings["model"]), RunConfig(**settings["run"])
    run = run.replace(data_dir=str(data_dir))
    logged = {
        r["step"]: r
        for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
        if "tgt_tokens" in r
    }
    splits = run_data.load_splits(run)
    # the vocabulary is trained again, in memory
    with tempfile.TemporaryDirectory() as folder:
        vocab = Path(folder) / data.vocab_file(splits[0], model.vocab_size)
        _, train_pairs, _, _ = run_data.prepare_data(
            run,
            model.vocab_size,
            vocab,
            splits,
            say=lambda *a: None,
            # lists: the folder goes away
            token_cache=False,
        )
    # the batches the run's own fast paths made: its --buckets and --pack
    fast = choice.fast_paths("cpu", run)
    stream = run_data.UpdateStream(
        train_pairs, run, fast, settings.get("world_size", 1), 0
    )
    at, total, totals = run_data.Position(), 0.0, {}
    for _ in tqdm(range(max(logged)), desc="replaying updates", unit="update"):
        micro = stream.next(at)
        src, tgt = batch_lengths(micro)
        total += training_flops(model, src, tgt)
        at.step, at.src_tokens, at.tgt_tokens = (
            at.step + 1,
            at.src_tokens + sum(src),
            at.tgt_tokens + sum(tgt),
        )
        if at.step in logged and (
            logged[at.step]["src_tokens"],
            logged[at.step]["tgt_tokens"],
        ) != (at.src_tokens, at.tgt_tokens):
            raise SystemExit(
                f"update {at.step}: the replay has {at.src_tokens:,} source and "
                f"{at.tgt_tokens:,} target tokens, the run logged "
                f"{logged[at.step]['src_tokens']:,} and "
                f"{logged[at.step]['tgt_tokens']:,}: the batches are not the run's"
            )
        if at.step in logged:
            totals[at.step] = total
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "run",
        type=Path,
        help="a stored run folder with config.json, metrics.jsonl and results.json",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=True,
        help="the data directory the run trained on",
    )
    args = parser.parse_args()
    totals = replay(args.run, args.data_dir)
    metrics = args.run / "metrics.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    for record in records:
        if record["step"] in totals and "tgt_tokens" in record:
            record.setdefault("train_flops", totals[record["step"]])
    metrics.write_text("".join(json.dumps(record) + "\n" for record in records))
    path = args.run / "results.json"
    results = json.loads(path.read_text())
    results["train_flops"] = float(f"{totals[results['updates']]:.4g}")
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"{args.run}: {results['updates']:,} updates, {results['train_flops']:.4g} "
        "FLOP of training"
    )


if __name__ == "__main__":
    main()
