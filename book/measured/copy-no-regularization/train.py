"""Chapter 9, exercise 1: the copy model without dropout or label smoothing.

Run from the repository root: python book/measured/copy-no-regularization/train.py STEPS
(one thread: the model is small, and the machine was shared).
Writes losses.json beside this script: the loss of every update (nats per target token).
"""

import json
import platform
import sys
import time
from pathlib import Path

import torch

from annotated_transformer.config import COPY_MODEL
from annotated_transformer.copy_task import CopyTask, train_copy_task

torch.set_num_threads(1)
steps = int(sys.argv[1])
task = CopyTask()
config = COPY_MODEL.replace(dropout=0.0, label_smoothing=0.0)
started = time.perf_counter()
_, losses = train_copy_task(task, config, steps=steps)
seconds = time.perf_counter() - started
record = {
    "command": f"python book/measured/copy-no-regularization/train.py {steps}",
    "call": "train_copy_task(CopyTask(), COPY_MODEL.replace(dropout=0.0, "
    f"label_smoothing=0.0), steps={steps})",
    "seconds": round(seconds, 1),
    "threads": torch.get_num_threads(),
    "torch": torch.__version__,
    "machine": platform.processor() or platform.machine(),
    "losses": losses,
}
path = Path(__file__).with_name("losses.json")
path.write_text(json.dumps(record) + "\n")
print(f"{steps} updates in {seconds:.0f} s; last loss {losses[-1]:.3g}; wrote {path}")
