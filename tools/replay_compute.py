"""The training compute of a stored run that was made before runs recorded it: the batches of its updates
are planned again exactly as training planned them (same data, vocabulary, batch size and seed), and
their FLOPs are summed with the book's count (``performance.training_flops``). The replay must give
the token counts the run logged in ``metrics.jsonl`` at every metric line, or nothing is written; then
``train_flops`` is added to the run's ``results.json``. A run folder without ``config.json`` is taken
to have trained with the settings of ``--preset``.

    python tools/replay_compute.py book/measured/multi30k-en-de --data-dir DATA
"""
import argparse
import json
import tempfile
from pathlib import Path

from tqdm import tqdm

from annotated_transformer import data, trainer
from annotated_transformer.config import RUN_PRESETS, RunConfig, TransformerConfig
from annotated_transformer.performance import batch_lengths, training_flops


def replay(run_dir: Path, data_dir: Path, preset: str) -> float:
    config = run_dir / "config.json"
    if config.is_file():
        settings = json.loads(config.read_text())
        model, run = TransformerConfig(**settings["model"]), RunConfig(**settings["run"])
    else:
        (model, run), settings = RUN_PRESETS[preset], {}
    run = run.replace(data_dir=str(data_dir))
    logged = {r["step"]: r for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
              if "tgt_tokens" in r}
    splits = trainer.load_splits(run)
    with tempfile.TemporaryDirectory() as folder:  # the vocabulary is trained again, in memory
        vocab = Path(folder) / data.vocab_file(splits[0], model.vocab_size)
        _, train_pairs, _, _ = trainer.prepare_data(run, model.vocab_size, vocab, splits, say=lambda *a: None)
    stream = trainer.UpdateStream(train_pairs, run, settings.get("world_size", 1), 0)
    at, total = trainer.Position(), 0.0
    for _ in tqdm(range(max(logged)), desc="replaying updates", unit="update"):
        micro = stream.next(at)
        src, tgt = batch_lengths(micro)
        total += training_flops(model, src, tgt)
        at.step, at.src_tokens, at.tgt_tokens = at.step + 1, at.src_tokens + sum(src), at.tgt_tokens + sum(tgt)
        if at.step in logged and (logged[at.step]["src_tokens"], logged[at.step]["tgt_tokens"]) != (
                at.src_tokens, at.tgt_tokens):
            raise SystemExit(f"update {at.step}: the replay has {at.src_tokens:,} source and {at.tgt_tokens:,} "
                             f"target tokens, the run logged {logged[at.step]['src_tokens']:,} and "
                             f"{logged[at.step]['tgt_tokens']:,}: the batches are not the run's")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a stored run folder with config.json and results.json")
    parser.add_argument("--data-dir", type=Path, required=True, help="the data directory the run trained on")
    parser.add_argument("--preset", default="multi30k", help="the settings of a run without config.json")
    args = parser.parse_args()
    flops = replay(args.run, args.data_dir, args.preset)
    path = args.run / "results.json"
    results = json.loads(path.read_text())
    results["train_flops"] = float(f"{flops:.4g}")
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{args.run}: {results['updates']:,} updates, {flops:.4g} FLOP of training")


if __name__ == "__main__":
    main()
