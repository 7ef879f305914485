"""Shared fixtures: a tiny synthetic parallel corpus in the formats the loaders read,
and the options of a tiny training run on it."""

import importlib.util
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

EN = (
    "the a red blue green big small old young cat dog bird horse man woman child runs "
    "sleeps eats sees jumps sings"
).split()
DE = (
    "der ein rote blaue grüne große kleine alte junge katze hund vogel pferd mann frau "
    "kind läuft schläft isst sieht springt singt"
).split()
LEXICON = dict(zip(EN, DE))


TOOLS = Path(__file__).resolve().parents[1] / "tools"


def load_tool(name: str):
    """The script ``tools/NAME.py`` as a module (the tools are not a package)."""
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # where its dataclasses look themselves up
    spec.loader.exec_module(module)
    return module


# The training options the tests share: the text corpus, a one-layer model of d_model 32
# and 300-token updates (each test adds its data folder, run folder and schedule).
TINY_RUN = (
    "--corpus text --vocab-size 80 --n-layers 1 --d-model 32 --d-ff 64 --n-heads 2 "
    "--batch-tokens 300 --warmup 10 --valid-every 1000"
).split()

# two CPU processes under torchrun (followed by the script to run)
TORCHRUN = [
    sys.executable,
    "-m",
    "torch.distributed.run",
    "--standalone",
    "--nproc_per_node=2",
]
# two CPU training processes under torchrun (followed by the training options)
TORCHRUN_TRAIN = [*TORCHRUN, "-m", "annotated_transformer.train"]


def tiny_run(corpus: Path, run: Path, *extra) -> list[str]:
    """The options of a tiny run on ``corpus`` into the folder ``run``: the one place
    that builds them (each test adds its schedule in ``extra``)."""
    return [*TINY_RUN, "--data-dir", str(corpus), "--out-dir", str(run), *extra]


def train_argv(corpus: Path, run: Path, steps: int, *extra) -> list[str]:
    """The options of a tiny scheduled run of ``steps`` updates on ``corpus``."""
    schedule = ["--save-every", "2", "--average", "2", "--no-progress"]
    return tiny_run(corpus, run, "--max-steps", str(steps), *schedule, *extra)


def synthetic_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """Word-for-word 'translations' over a 22-word lexicon: learnable, and no network
    needed."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        words = [rng.choice(EN) for _ in range(rng.randint(3, 8))]
        pairs.append((" ".join(words), " ".join(LEXICON[w] for w in words)))
    return pairs


@pytest.fixture(name="synthetic_pairs")
def synthetic_pairs_fixture():
    return synthetic_pairs


@pytest.fixture(scope="session")
def text_corpus(tmp_path_factory) -> Path:
    """A ``--corpus text`` folder: train/valid/test .en and .de files."""
    root = tmp_path_factory.mktemp("corpus")
    for split, n, seed in (("train", 400, 0), ("valid", 30, 1), ("test", 20, 2)):
        pairs = synthetic_pairs(n, seed)
        (root / f"{split}.en").write_text(
            "\n".join(s for s, _ in pairs) + "\n", encoding="utf-8"
        )
        (root / f"{split}.de").write_text(
            "\n".join(t for _, t in pairs) + "\n", encoding="utf-8"
        )
    return root


@pytest.fixture
def shared_data() -> Path:
    """The real data directory ($AT_DATA_DIR); tests that need it are skipped without
    it."""
    path = Path(os.environ.get("AT_DATA_DIR", "/nonexistent"))
    if not (path / "wmt14").is_dir():
        pytest.skip("AT_DATA_DIR does not point at a data directory with wmt14/")
    return path


@pytest.fixture(scope="module")
def finished_run(text_corpus, tmp_path_factory) -> Path:
    """A tiny run trained for 4 updates (checkpoints at 2 and 4) and scored; each test
    works on its own copy."""
    from annotated_transformer import train

    run = tmp_path_factory.mktemp("finished") / "run"
    assert train.main(train_argv(text_corpus, run, 4)) == 0
    return run


@pytest.fixture
def run(finished_run, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy)
    return copy


# Tests that stop a process with a signal. A test run started as a background job
# inherits SIGINT ignored, and a child would then never stop: every such test resets the
# signals it sends and waits a bounded time. The bound guards against a hang only; it
# is far longer than the few updates the tests wait for take on a busy machine.
HANG = 600  # seconds

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _default_stop_signals() -> None:
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_DFL)


class Child:
    """A command started with SIGINT and SIGTERM at their defaults, its standard
    output and error read line by line."""

    def __init__(self, command: list[str], env: dict | None = None):
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            preexec_fn=_default_stop_signals,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._queue.put(line)
        self._queue.put("")  # the output ended

    def read_until(self, text: str) -> str:
        """Read until a line holds ``text``; return that line."""
        while not self.lines or text not in self.lines[-1]:
            try:
                self.lines.append(self._queue.get(timeout=HANG))
            except queue.Empty:
                self.process.kill()
                message = f"no line with {text!r}:\n{self.output()}"
                raise AssertionError(message) from None
            assert self.lines[-1], f"the output ended first:\n{self.output()}"
        return self.lines[-1]

    def stop(self, number: int) -> str:
        """Send ``number``, wait for the end, and return the whole output."""
        self.process.send_signal(number)
        self.process.wait(timeout=HANG)
        return self.output(wait=True)

    def output(self, wait: bool = False) -> str:
        while wait:
            line = self._queue.get(timeout=HANG)
            wait = bool(line)
            self.lines.append(line)
        return "".join(self.lines)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode


@pytest.fixture
def default_stop_signals():
    """SIGINT and SIGTERM at their defaults in this process (a test that sends one to
    itself), restored afterwards."""
    saved = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for number, handler in saved.items():
        signal.signal(number, handler)
