"""Watch a short Multi30k run from the inside: per layer, the gradient norm, how alike
the encoder's positions are, and how evenly the encoder-decoder attention spreads over
the source.

python tools/depth_probe.py --init xavier --out
book/measured/depth-diagnosis/probe-xavier.jsonl

Every ``--every`` updates (and at update 0) one JSON line: the validation loss on the
first 500 pairs, ``position_similarity`` (per encoder layer, the mean cosine similarity
between the outputs at two different positions of one sentence, over the first 200
validation sentences), ``source_entropy`` (per decoder layer, as in ``metrics.jsonl``)
and ``grad_norm`` (per encoder and per decoder layer, of that update's gradient)."""

import argparse
import json
from pathlib import Path

from annotated_transformer import data
from annotated_transformer.config import INITIALIZATIONS, RunConfig, TransformerConfig
from annotated_transformer.figures.diagnostics import (
    position_similarity,
    source_alignment,
)
from annotated_transformer.running import run_data, trainer


def layer_grad_norms(layers) -> list[float]:
    return [
        round(
            sum(
                float(p.grad.pow(2).sum())
                for p in layer.parameters()
                if p.grad is not None
            )
            ** 0.5,
            4,
        )
        for layer in layers
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--init", choices=INITIALIZATIONS, default="pytorch")
    parser.add_argument("--n-layers", type=int, default=6)
    parser.add_argument(
        "--norm-first",
        action="store_true",
        help="pre-norm instead of the paper's post-norm",
    )
    parser.add_argument("--warmup", type=int, default=400)
    parser.add_argument("--lr-factor", type=float, default=0.25)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    parser.add_argument(
        "--data-dir", default="", help="data directory (default: $AT_DATA_DIR)"
    )
    a = parser.parse_args()
    config = TransformerConfig(
        vocab_size=8000,
        n_layers=a.n_layers,
        d_model=128,
        d_ff=512,
        n_heads=4,
        norm_first=a.norm_first,
        init=a.init,
    )
    run = RunConfig(
        batch_tokens=1100,
        warmup=a.warmup,
        lr_factor=a.lr_factor,
        max_steps=a.steps,
        data_dir=a.data_dir,
        out_dir=f"runs/diag/{a.out.stem}",
    )
    s = trainer.start(config, run)
    encoder, decoder = s.model.encoder.layers, s.model.decoder.layers
    at, records = run_data.Position(), []

    # runs inside train_step, after backward and before the optimizer's update
    def record_gradients(*_):
        if at.step % a.every == 0:
            records[-1]["grad_norm"] = {
                "encoder": layer_grad_norms(encoder),
                "decoder": layer_grad_norms(decoder),
            }

    s.update.optimizer.register_step_pre_hook(record_gradients)
    for step in range(a.steps + 1):
        if step % a.every == 0:
            # one batch
            sample = next(
                data.validation_batches(
                    s.data.valid_pairs[:200], 10**6, s.folder.device
                )
            )
            records.append(
                {
                    "step": step,
                    "valid_nll": round(
                        trainer.validation_loss(
                            s.model, s.data.valid_pairs[:500], 3000, s.folder.device
                        ),
                        4,
                    ),
                    "position_similarity": [
                        round(x, 4)
                        for x in position_similarity(
                            s.model, sample.src, sample.src_mask
                        )
                    ],
                    "source_entropy": [
                        round(x, 4)
                        for x in source_alignment(
                            s.model, s.data.valid_pairs, 3000, s.folder.device, 200
                        )
                    ],
                }
            )
            print(json.dumps(records[-1]), flush=True)
        if step < a.steps:
            # one optimizer update, exactly as the train command makes it
            trainer.train_step(s, at)
    a.out.write_text("".join(json.dumps(r) + "\n" for r in records))


if __name__ == "__main__":
    main()
