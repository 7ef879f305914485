import json
import statistics
import sys
import time

import torch

from annotated_transformer import speed
from annotated_transformer.benchmark import real_batches
from annotated_transformer.config import RUN_PRESETS
from annotated_transformer.model import make_model
from annotated_transformer.trainer import make_update

rounds, block, untimed = int(sys.argv[1]), int(sys.argv[2]), 3
torch.set_num_threads(2)
config, run = RUN_PRESETS["multi30k"]
configs = {"0.0": config, "0.1": config.replace(attention_dropout=0.1)}
batches = real_batches(config, ("multi30k", "train"), 2200, untimed + rounds * block)
updates = {}
for name, c in configs.items():  # as training makes its update on this device
    torch.manual_seed(0)
    model = make_model(c).train()
    updates[name] = make_update(model, c, run, speed.fast_paths("cpu", run))
    for b in batches[:untimed]:
        updates[name]([b])
ms = {name: [] for name in configs}
for r in range(rounds):  # the same block of batches for both, in alternating order
    chunk = batches[untimed + r * block : untimed + (r + 1) * block]
    for name in list(configs)[:: 1 if r % 2 == 0 else -1]:
        start = time.perf_counter()
        for b in chunk:
            updates[name]([b])
        ms[name].append(1000 * (time.perf_counter() - start) / block)
ratios = [b / a for a, b in zip(ms["0.0"], ms["0.1"])]
report = {
    "command": "python - " + " ".join(sys.argv[1:]) + " < interleaved.py",
    "torch": torch.__version__,
    "threads": torch.get_num_threads(),
    "rounds": rounds,
    "updates_per_round": block,
    "untimed_updates": untimed,
    "ms_per_update": {f"attention_dropout {k}": v for k, v in ms.items()},
    "ratio_per_round": ratios,
    "median_ratio": statistics.median(ratios),
}
print(json.dumps(report, indent=1))
