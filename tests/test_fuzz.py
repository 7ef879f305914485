"""A hostile-input fuzzer: Hypothesis damages a finished tiny run, its model file and a
text to translate (fields deleted, retyped, resized or set to NaN, infinity, huge or
negative numbers; tensors moved to the meta device or made sparse; files truncated,
emptied, replaced by folders, links, named pipes nobody writes or links to devices;
bytes flipped) and runs one command on them: train (resume), translate, evaluate,
bundle or visualize. A second kind of example aims the output of a command that writes
where it is told (translate, visualize, bundle, band) at a file of the run folder, at
the model file it reads or at its own input, under any name; the command must refuse.

Every run must end with status 0 or 2 within a bound of wall-clock time, say at most
one error line and no traceback, print no raw control character, leave no thread
running that would keep the process from ending, leave every file outside its sandbox
as it was, change no file of the sandbox it does not own, and stay under a memory
bound. The fast profile runs a fixed set of examples with the tests, a named pipe in
place of each file of the run and of the model file for every command that reads it,
and every output aimed at a run or an input once; ``make fuzz MINUTES=N`` searches
both kinds with new random seeds for N minutes and stores each example that breaks a
rule under ``tests/fuzz-found/``, which every run replays first."""

import contextlib
import hashlib
import json
import math
import os
import re
import resource
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

import psutil
import pytest
import torch
from conftest import train_argv

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from annotated_transformer import (  # noqa: E402
    band,
    bundle,
    evaluate,
    train,
    translate,
    visualize,
)

FOUND = Path(__file__).parent / "fuzz-found"
MINUTES = float(os.environ.get("AT_FUZZ_MINUTES", "0"))
FAST_EXAMPLES = 150
# The memory a command may add to the test process (as address space): a tiny run
# needs a few hundred megabytes.
MEMORY_BOUND = 3 * 2**30
# The wall-clock time one command may take: a tiny run's command takes a second or
# two, ten at most on a busy machine, and the bound is ten times that again. It only
# turns a command that waits forever (on a named pipe nobody writes, on an endless
# device) into a broken rule instead of a test run that never ends.
HANG = 120  # seconds

COMMANDS = ("train", "translate", "translate-file", "evaluate", "bundle", "visualize")
# "fifo" puts a named pipe that nobody writes in the file's place, "device" a link to
# one of DEVICES (chosen by the damage's byte)
FILE_DAMAGES = (
    "truncate",
    "empty",
    "folder",
    "link",
    "flip",
    "append",
    "fifo",
    "device",
)
DEVICES = ("/dev/zero", "/dev/urandom", "/dev/null")
VALUE_DAMAGES = ("delete", "null", "text", "list", "nan", "inf", "huge", "negative")
TENSOR_DAMAGES = (
    "nan",
    "resize",
    "integers",
    "stride0",
    "empty",
    "meta",
    "sparse",
    "sparse-outside",
)
# The commands that write a file where they are told, and the option that tells them.
OUTPUT_COMMANDS = {
    "translate": ("-o", "--output"),
    "translate-file": ("-o", "--output"),
    "visualize": ("-o", "--output"),
    "visualize-explorer": ("-o", "--output"),
    "visualize-save": ("--save",),
    "visualize-measure": ("--measure",),
    "bundle": ("-o", "--output"),
    "band": ("-o", "--output"),
}
# The names a command's output takes when the example does not aim it (else "out")
OUTPUT_NAMES = {
    "visualize": "out.png",
    "visualize-explorer": "out.html",
    "visualize-save": "out.npz",
    "visualize-measure": "out.json",
    "band": "out.json",
}
# The text a command translates or draws (a copy of the corpus's first test lines in
# the sandbox), and two more names of it: a hard link and a symbolic link.
INPUT = "input.en"
INPUT_NAMES = (INPUT, "input-hard-link.en", "input-link.en")
# a symbolic link in the sandbox to the run's last checkpoint: a run's file by another
# name
CHECKPOINT_LINK = "checkpoint-link.pt"


@pytest.fixture(scope="module")
def pristine(finished_run, text_corpus, tmp_path_factory) -> Path:
    """A finished run, scored once by evaluate, its model file and a text to
    translate: what every example damages a copy of."""
    base = tmp_path_factory.mktemp("pristine")
    shutil.copytree(finished_run, base / "run")
    lines = (text_corpus / "test.en").read_text(encoding="utf-8").splitlines()
    text = "".join(line + "\n" for line in lines[:5])
    (base / INPUT).write_text(text, encoding="utf-8")
    with captured():
        score = ["--run", str(base / "run"), "--limit", "3", "--beam-size", "1"]
        assert evaluate.main([*score, "--no-progress"]) == 0
        model = ["--run", str(base / "run"), "-o", str(base / "model.pt")]
        assert bundle.main(model) == 0
    return base


def paths_of(pristine: Path) -> list[str]:
    """Every file and folder an example may damage, relative to the sandbox."""
    run = pristine / "run"
    inside = sorted(str(p.relative_to(pristine)) for p in run.rglob("*"))
    return ["model.pt", INPUT, *inside]


def reads_input(command: str) -> bool:
    return command.startswith(("translate", "visualize"))


def output_targets(pristine: Path, command: str) -> list[str]:
    """Where an output of ``command`` may not go, relative to the sandbox: every file
    of the run folder, a new file in it and in its checkpoints, a link to its last
    checkpoint, the model file the command reads, and its own input under each of its
    names."""
    run, name = pristine / "run", OUTPUT_NAMES.get(command, "out")
    files = sorted(str(p.relative_to(pristine)) for p in run.rglob("*") if p.is_file())
    return [
        *files,
        f"run/{name}",
        f"run/checkpoints/{name}",
        CHECKPOINT_LINK,
        *(["model.pt"] if command == "translate-file" else []),
        *(INPUT_NAMES if reads_input(command) else ()),
    ]


def damages(paths: list[str], targets: list[tuple[str, str]]):
    """An example: a command and one to three damages, or a command with its output
    aimed at one of ``targets`` (command, path) and up to two damages elsewhere. Each
    is a dict that JSON can store."""

    def one(paths: list[str]):
        return st.one_of(
            st.fixed_dictionaries(
                {
                    "path": st.sampled_from(paths),
                    "kind": st.sampled_from(FILE_DAMAGES),
                    "at": st.floats(0, 1),
                    "byte": st.integers(0, 255),
                }
            ),
            st.fixed_dictionaries(
                {
                    "path": st.sampled_from(
                        [p for p in paths if p.endswith((".json", ".jsonl", ".pt"))]
                    ),
                    "kind": st.just("value"),
                    "field": st.integers(0, 10_000),
                    "damage": st.sampled_from(VALUE_DAMAGES + TENSOR_DAMAGES),
                }
            ),
        )

    damaging = st.fixed_dictionaries(
        {
            "command": st.sampled_from(COMMANDS),
            "damages": st.lists(one(paths), min_size=1, max_size=3),
        }
    )

    def aimed(command: str, target: str):
        # the damages leave the input, the target and its folders as they are: a
        # damage there may make the aim lead out of the run (a link), where writing
        # is what was asked
        others = [
            p
            for p in paths
            if p not in (INPUT, target) and not target.startswith(p + "/")
        ]
        return st.fixed_dictionaries(
            {
                "command": st.just(command),
                "output": st.just(target),
                "damages": st.lists(one(others), max_size=2),
            }
        )

    aiming = st.sampled_from(targets).flatmap(lambda aim: aimed(*aim))
    # three damaging examples to one aimed output: the exhaustive test of outputs
    # tries every aim once without damage
    return st.sampled_from((damaging, damaging, damaging, aiming)).flatmap(
        lambda kind: kind
    )


def searched_targets(pristine: Path) -> list[tuple[str, str]]:
    """The aims the search combines with damages: every aim but two. Not translate
    --checkpoint's at a run folder it does not read (a damage may make that folder no
    run folder at all, and writing into it right), and not the link to a checkpoint
    (a damage may make the link lead out of the run, where writing is right)."""
    return [
        (command, target)
        for command in OUTPUT_COMMANDS
        for target in output_targets(pristine, command)
        if target != CHECKPOINT_LINK
        and not (command == "translate-file" and target.startswith("run/"))
    ]


# --- damaging a file ---


# the damages that put something else in a file's place
REPLACING = ("folder", "link", "fifo", "device")


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file itself (not a link, a folder, a named pipe or
    a device): the only kind of file the fuzzer ever opens in a sandbox."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def damage_file(path: Path, damage: dict, victim: Path, sandbox: Path) -> None:
    """Damage the file or folder at ``path``, never writing through a link that an
    earlier damage planted (that would change the victim itself) and never opening a
    named pipe or a device (that would wait forever, or read without end)."""
    if any(p.is_symlink() for p in path.parents if p.is_relative_to(sandbox)):
        return
    if not path.parent.is_dir():  # an earlier damage took its folder
        return
    kind, data = damage["kind"], b""
    if kind == "fifo" and path == sandbox / INPUT:
        return  # -i from a pipe (-i <(command)) rightly waits for its writer
    if path.is_symlink() and kind not in REPLACING:
        return
    if kind == "value":
        damage_value(path, damage)
        return
    if path.is_dir() and not path.is_symlink():
        if kind in REPLACING:
            shutil.rmtree(path)
        else:
            return  # a folder's bytes cannot be cut or flipped
    elif path.exists() or path.is_symlink():
        if kind in REPLACING:
            path.unlink()
        elif is_regular(path):
            data = path.read_bytes()
        else:
            return  # a named pipe's or a device's bytes are not the fuzzer's to read
    if kind == "truncate":
        path.write_bytes(data[: int(len(data) * damage["at"])])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "folder":
        path.mkdir()
    elif kind == "link":
        path.symlink_to(victim / ("folder" if path.suffix == "" else "file"))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to(DEVICES[damage["byte"] % len(DEVICES)])
    elif kind == "flip" and data:
        at = min(int(len(data) * damage["at"]), len(data) - 1)
        path.write_bytes(
            data[:at] + bytes([data[at] ^ (damage["byte"] or 1)]) + data[at + 1 :]
        )
    elif kind == "append":
        path.write_bytes(data + bytes([damage["byte"]]) * 7)


def places(value, where=()):
    """Every place inside nested dicts and lists: (path of keys, value)."""
    yield where, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from places(item, (*where, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from places(item, (*where, index))


def damaged(value, damage: str):
    if isinstance(value, torch.Tensor) and damage in TENSOR_DAMAGES:
        if damage == "nan":
            return (
                torch.full_like(value, math.nan) if value.is_floating_point() else value
            )
        if damage == "resize":
            return torch.zeros(*value.shape, 2) if value.dim() else torch.zeros(3)
        if damage == "integers":
            return value.long()
        if damage == "stride0":
            return torch.zeros(1, dtype=value.dtype).expand(*value.shape, 1000)
        if damage == "meta":
            return torch.empty_like(value, device="meta")
        if damage == "sparse":
            return value.to_sparse()
        if damage == "sparse-outside":
            return sparse_outside(value)
        return value[:0]
    return {
        "null": None,
        "text": "abc\x1b]0;retitled\x07",
        "list": [1, [2]],
        "nan": math.nan,
        "inf": math.inf,
        "huge": 10**30,
        "negative": -7,
    }.get(damage, value)


def sparse_outside(value: torch.Tensor) -> torch.Tensor:
    """A sparse tensor of ``value``'s shape (one element long if it has none) whose
    one element lies just past the end of its first dimension: an index no check made
    when it was built."""
    shape = value.shape or (1,)
    indices = torch.zeros(len(shape), 1, dtype=torch.long)
    indices[0, 0] = shape[0]
    values = torch.zeros(1, dtype=value.dtype)
    return torch.sparse_coo_tensor(indices, values, shape, check_invariants=False)


def damage_tree(tree, field: int, damage: str):
    found = list(places(tree))[1:]  # not the whole tree itself
    if not found:
        return tree
    where, value = found[field % len(found)]
    parent = tree
    for key in where[:-1]:
        parent = parent[key]
    if damage == "delete":
        del parent[where[-1]]
    else:
        parent[where[-1]] = damaged(value, damage)
    return tree


def damage_value(path: Path, damage: dict) -> None:
    """Damage one value inside a file that still reads (an earlier damage may have
    made it unreadable already)."""
    with contextlib.suppress(Exception):
        damage_readable_value(path, damage)


def damage_readable_value(path: Path, damage: dict) -> None:
    if not is_regular(path):
        return
    if path.suffix == ".pt":
        state = torch.load(path, weights_only=True)
        torch.save(damage_tree(state, damage["field"], damage["damage"]), path)
        return
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        lines = text.splitlines()
        if not lines:
            return
        k = damage["field"] % len(lines)
        lines[k] = json.dumps(
            damage_tree(json.loads(lines[k]), damage["field"], damage["damage"])
        )
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return
    tree = damage_tree(json.loads(text), damage["field"], damage["damage"])
    path.write_text(json.dumps(tree), encoding="utf-8")


# --- running a command and judging what it did ---


@contextlib.contextmanager
def captured():
    """Standard output and error, at the level of file descriptors (what a C library
    writes too), into ``said["out"]`` and ``said["err"]``."""
    said = {}
    files = {fd: tempfile.TemporaryFile() for fd in (1, 2)}
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    streams = sys.stdout, sys.stderr
    try:
        for fd, file in files.items():
            os.dup2(file.fileno(), fd)
        sys.stdout = open(1, "w", closefd=False, encoding="utf-8")
        sys.stderr = open(2, "w", closefd=False, encoding="utf-8")
        yield said
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr = streams
        for fd, file in files.items():
            os.dup2(saved[fd], fd)
            os.close(saved[fd])
            file.seek(0)
            said["out" if fd == 1 else "err"] = file.read().decode("utf-8", "replace")
            file.close()


def argv_of(
    command: str, sandbox: Path, corpus: Path, output: str | None = None
) -> tuple:
    """The command's module, its options, and what in the sandbox is its own to
    write (a name, or a folder ending in /). With ``output`` (relative to the
    sandbox), its output goes there and nothing in the sandbox is its own."""
    run, model = sandbox / "run", sandbox / "model.pt"
    name = output or OUTPUT_NAMES.get(command, "out")
    out = str(sandbox / name)
    quick = ["--beam-size", "1", "--no-progress"]
    source = ["-i", str(sandbox / INPUT)]
    drawn = ["--run", str(run), *source, "--no-progress"]
    if command == "visualize" and output is None:
        drawn = ["--run", str(run), "Ein Hund .", "--no-progress"]
    module, argv = {
        "train": (train, train_argv(corpus, run, 6)),
        "translate": (translate, ["--run", str(run), *source, "-o", out, *quick]),
        "translate-file": (
            translate,
            ["--checkpoint", str(model), *source, "-o", out, *quick],
        ),
        "evaluate": (evaluate, ["--run", str(run), "--limit", "3", *quick]),
        "bundle": (bundle, ["--run", str(run), "-o", out]),
        "visualize": (visualize, [*drawn, "-o", out]),
        "visualize-explorer": (visualize, [*drawn, "--view", "explorer", "-o", out]),
        "visualize-save": (visualize, [*drawn, "--save", out]),
        "visualize-measure": (visualize, [*drawn, "--measure", out]),
        "band": (band, [str(run), "-o", out]),
    }[command]
    owned = {"train": ("run/",), "evaluate": ("run/eval/",)}.get(command, (name,))
    return module, argv, () if output else owned


def owns(owned: tuple, path: str) -> bool:
    return any(
        path == own or own.endswith("/") and path.startswith(own) for own in owned
    )


class Hung(BaseException):
    """A command ran past HANG seconds (not an Exception: no handler of a command's
    errors catches it)."""


@contextlib.contextmanager
def bounded_time(rang: list):
    """Inside, the process may run at most HANG seconds of wall-clock time: then
    ``Hung`` is raised wherever it waits (an open or a read that waits is
    interrupted), and ``rang`` notes it even if the command swallowed it."""

    def ring(number, frame):
        rang.append(time.monotonic())
        raise Hung(f"still running after {HANG} s")

    saved = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, HANG)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, saved)


def release_pipes(sandbox: Path) -> None:
    """Open and close every named pipe in the sandbox for reading and writing at
    once (which never waits), so that whatever still waits to open one goes on: a
    reader meets the end of the file, a writer a broken pipe."""
    for path in sandbox.rglob("*"):
        with contextlib.suppress(OSError):
            if stat.S_ISFIFO(path.lstat().st_mode):
                os.close(os.open(path, os.O_RDWR | os.O_NONBLOCK))


def still_running(before: set, wait: float = 5.0) -> list[str]:
    """The threads started since ``before`` that would keep the process from ending
    (not daemons) and still run after ``wait`` seconds in all."""
    end = time.monotonic() + wait
    left = [t for t in threading.enumerate() if t not in before and not t.daemon]
    for thread in left:
        thread.join(max(0.0, end - time.monotonic()))
    return [t.name for t in left if t.is_alive()]


@contextlib.contextmanager
def bounded_memory():
    """Inside, the process may take at most MEMORY_BOUND more address space: an
    allocation beyond it fails (and the command must not call that a lack of memory
    on the machine, as damage caused it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    bound = psutil.Process().memory_info().vms + MEMORY_BOUND
    if hard != resource.RLIM_INFINITY:
        bound = min(bound, hard)
    resource.setrlimit(resource.RLIMIT_AS, (bound, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def hashes(folder: Path) -> dict:
    """The SHA-256 of every regular file under ``folder`` (no link followed, and no
    named pipe or device opened), by its path relative to ``folder``."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if is_regular(p)
    }


def changed(before: dict, after: dict) -> list[str]:
    return sorted(
        p for p in before.keys() | after.keys() if before.get(p) != after.get(p)
    )


def names_option(line: str, options: tuple) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", line) for o in options)


def broken_rules(example: dict, pristine: Path, corpus: Path) -> list[str]:
    """Damage a copy of the pristine run as ``example`` says, run its command, and
    list the rules the command broke."""
    return judged(example, pristine, corpus)["broken"]


def judged(example: dict, pristine: Path, corpus: Path) -> dict:
    """Run ``example`` in a sandbox: its status, the rules it broke, the files of its
    own it wrote, and what it said."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        sandbox, victim = root / "sandbox", root / "victim"
        shutil.copytree(pristine, sandbox, symlinks=True)
        os.link(sandbox / INPUT, sandbox / INPUT_NAMES[1])
        (sandbox / INPUT_NAMES[2]).symlink_to(INPUT)
        last = sorted((sandbox / "run" / "checkpoints").glob("step-*.pt"))[-1]
        (sandbox / CHECKPOINT_LINK).symlink_to(last.relative_to(sandbox))
        victim.mkdir()
        (victim / "file").write_text("not the run's\n")
        (victim / "folder").mkdir()
        (victim / "folder" / "file").write_text("not the run's either\n")
        outside = {f: hashes(f) for f in (victim, pristine, corpus)}
        for damage in example["damages"]:
            damage_file(sandbox / damage["path"], damage, victim, sandbox)
        output = example.get("output")
        module, argv, owned = argv_of(example["command"], sandbox, corpus, output)
        inside = hashes(sandbox)
        threads, running, rang = torch.get_num_threads(), set(threading.enumerate()), []
        try:
            with captured() as said, bounded_memory():
                try:
                    with bounded_time(rang):
                        status = module.main(argv)
                except SystemExit as stop:
                    status = stop.code
                except Hung:
                    pass
                except BaseException:  # what the rules are about
                    status = "traceback"
                    print(traceback.format_exc(), file=sys.stderr)
        finally:
            release_pipes(sandbox)  # nothing left waiting on a pipe of the sandbox
        status = "hung" if rang else status
        torch.set_num_threads(threads)
        left = still_running(running)
        broken = []
        if status == "hung":
            broken.append(f"hung: still running after {HANG} s")
        elif status not in (0, 2):
            broken.append(f"status {status}")
        text = said["out"] + said["err"]
        errors = [
            line for line in said["err"].splitlines() if line.startswith("error:")
        ]
        # (what a command stopped at the bound of time says is the stop's, not its own)
        if status != "hung" and ("Traceback" in text or len(errors) > 1):
            broken.append("a traceback or more than one error line")
        if status == 2 and not errors:
            broken.append("status 2 without an error line")
        if any(ord(c) < 32 and c not in "\n\t" for c in text):
            broken.append("a raw control character")
        if "out of memory" in text:
            broken.append("damage reported as a lack of memory")
        if left:
            broken.append(f"left a thread running: {left[0]}")
        for folder, before in outside.items():
            if paths := changed(before, hashes(folder)):
                broken.append(f"changed outside the sandbox: {folder / paths[0]}")
        paths = changed(inside, hashes(sandbox))
        if not_owned := [p for p in paths if not owns(owned, p)]:
            broken.append(f"changed a file it does not own: {not_owned[0]}")
        if output is not None:
            options = OUTPUT_COMMANDS[example["command"]]
            if status == 0:
                broken.append(f"did not refuse {options[0]} {output}")
            elif errors and not example["damages"]:
                if not names_option(errors[0], options):
                    broken.append(f"its error line does not name {options[0]}")
        if broken:
            broken.append(f"it said: {said['err'].strip()[-600:]!r}")
        written = [p for p in paths if owns(owned, p)]
        return {"status": status, "broken": broken, "written": written, "said": text}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def store(example: dict, broken: list[str]) -> Path:
    """Keep a damage that broke a rule, to be replayed by every later run."""
    FOUND.mkdir(exist_ok=True)
    text = json.dumps(example, sort_keys=True)
    path = FOUND / f"{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    path.write_text(json.dumps({"example": example, "broke": broken}, indent=1))
    return path


def test_the_stored_examples_break_no_rule(pristine, text_corpus):
    for path in sorted(FOUND.glob("*.json")):
        example = json.loads(path.read_text())["example"]
        broken = broken_rules(example, pristine, text_corpus)
        assert broken == [], (path.name, broken)


def test_a_planted_damage_is_judged_by_the_rules(pristine, text_corpus):
    # the fuzzer's judge sees a traceback, which a damage may not cause
    example = {"command": "translate", "damages": []}
    assert broken_rules(example, pristine, text_corpus) == []
    original = translate.main

    def crashes(argv):
        raise KeyError("planted")

    translate.main = crashes
    try:
        broken = broken_rules(example, pristine, text_corpus)
    finally:
        translate.main = original
    assert broken[:2] == ["status traceback", "a traceback or more than one error line"]


def test_a_planted_hang_and_a_planted_write_are_judged_by_the_rules(
    pristine, text_corpus, monkeypatch
):
    # a command that reads a named pipe nobody writes is stopped at the bound of time,
    # and one that writes a file of the run it does not own is seen doing so
    monkeypatch.setitem(globals(), "HANG", 2)
    pipe = {"path": "run/config.json", "kind": "fifo", "at": 0.0, "byte": 0}
    example = {"command": "translate", "damages": [pipe]}

    def reads(argv):
        run = Path(argv[argv.index("--run") + 1])
        return len((run / "config.json").read_bytes())

    def writes(argv):
        run = Path(argv[argv.index("--run") + 1])
        (run / "config.json").write_text("{}")
        return 0

    monkeypatch.setattr(translate, "main", reads)
    broken = broken_rules(example, pristine, text_corpus)
    assert broken[0] == "hung: still running after 2 s"
    monkeypatch.setattr(translate, "main", writes)
    broken = broken_rules(
        {"command": "translate", "damages": []}, pristine, text_corpus
    )
    assert broken[0] == "changed a file it does not own: run/config.json"


def test_every_damage_lands(pristine, tmp_path, monkeypatch):
    # each damage of a file puts what it says in the file's place, and each damage of
    # a tensor is saved and read back as it was made
    victim = tmp_path / "victim"
    (victim / "folder").mkdir(parents=True)
    (victim / "file").write_text("victim\n")
    sandbox = tmp_path / "sandbox"
    shutil.copytree(pristine, sandbox)
    model, size = pristine / "model.pt", (pristine / "model.pt").stat().st_size
    lands = {
        "truncate": lambda p: p.stat().st_size < size,
        "empty": lambda p: p.stat().st_size == 0,
        "folder": lambda p: p.is_dir(),
        "link": lambda p: p.readlink() == victim / "file",
        "flip": lambda p: p.read_bytes() != model.read_bytes(),
        "append": lambda p: p.stat().st_size > size,
        "fifo": lambda p: stat.S_ISFIFO(p.lstat().st_mode),
        "device": lambda p: str(p.readlink()) in DEVICES,
    }
    assert set(lands) == set(FILE_DAMAGES)
    # a later damage of a pipe or a device opens nothing (under the bound of time:
    # opening the pipe would wait forever)
    monkeypatch.setitem(globals(), "HANG", 60)
    later = [
        *(
            {"kind": k, "at": 0.5, "byte": 1}
            for k in FILE_DAMAGES
            if k not in REPLACING
        ),
        {"kind": "value", "field": 3, "damage": "nan"},
    ]
    for kind, landed in lands.items():
        path = sandbox / "model.pt"
        shutil.copy(model, path)
        damage_file(path, {"kind": kind, "at": 0.5, "byte": 1}, victim, sandbox)
        assert landed(path), kind
        if kind in ("fifo", "device"):
            with bounded_time([]):
                for damage in later:
                    damage_file(path, damage, victim, sandbox)
            assert landed(path), kind
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    # but the input stays a file: -i from a pipe rightly waits for its writer
    damage_file(sandbox / INPUT, {"kind": "fifo"}, victim, sandbox)
    assert is_regular(sandbox / INPUT)
    state = torch.load(pristine / "model.pt", weights_only=True)
    field, (where, value) = next(
        (k, place)
        for k, place in enumerate(list(places(state))[1:])
        if isinstance(place[1], torch.Tensor) and place[1].dim() == 2
    )
    read = {
        "meta": lambda t: t.is_meta and t.shape == value.shape,
        "sparse": lambda t: t.is_sparse and torch.equal(t.to_dense(), value),
        "sparse-outside": lambda t: t.is_sparse and t._indices()[0, 0] == len(value),
    }
    for damage in read:
        shutil.copy(pristine / "model.pt", sandbox / "model.pt")
        damage_value(
            sandbox / "model.pt",
            {"path": "model.pt", "kind": "value", "field": field, "damage": damage},
        )
        tree = torch.load(sandbox / "model.pt", weights_only=True)
        for key in where:
            tree = tree[key]
        assert read[damage](tree), damage


def test_the_commands_that_write_where_told_write_only_there(pristine, text_corpus):
    # what the test of aimed outputs runs: each command works when its output goes
    # to a new file, and writes only that; --measure works up to the measurement,
    # which needs the book's figure sentences in words the tiny vocabulary lacks
    for command in OUTPUT_COMMANDS:
        result = judged({"command": command, "damages": []}, pristine, text_corpus)
        if command == "visualize-measure":
            assert result["status"] == 2, result
            assert "error: no stored sentence contains" in result["said"], result
            assert result["broken"] == [] and result["written"] == [], result
            continue
        assert result["status"] == 0, (command, result)
        assert result["broken"] == [], (command, result)
        assert result["written"] == [OUTPUT_NAMES.get(command, "out")], command


def test_a_named_pipe_in_place_of_any_file_breaks_no_rule(pristine, text_corpus):
    # every command that reads the run, with a named pipe that nobody writes in place
    # of each file of the run in turn, and translate --checkpoint with one in place of
    # the model file: none waits for it (a hang costs the whole bound of time, so every
    # pair is tried here rather than left to chance)
    files = [p for p in paths_of(pristine) if (pristine / p).is_file()]
    run = [p for p in files if p.startswith("run/")]
    pairs = [
        ("translate-file", "model.pt"),
        *((c, p) for c in COMMANDS if c != "translate-file" for p in run),
    ]
    failures = []
    for command, path in pairs:
        pipe = {"path": path, "kind": "fifo", "at": 0.0, "byte": 0}
        example = {"command": command, "damages": [pipe]}
        if broken := broken_rules(example, pristine, text_corpus):
            failures.append(f"{command} with a pipe at {path}: {broken}")
    assert failures == [], "\n".join(failures)


def test_outputs_aimed_at_a_run_or_an_input_are_refused(pristine, text_corpus):
    # every command that writes where it is told, aimed at every file of the run
    # folder, at the model file it reads and at its own input under each of its names:
    # it refuses with one error line that names the option, and changes nothing
    failures = []
    for command, options in OUTPUT_COMMANDS.items():
        for target in output_targets(pristine, command):
            example = {"command": command, "output": target, "damages": []}
            if broken := broken_rules(example, pristine, text_corpus):
                failures.append(f"{command} {options[0]} {target}: {broken}")
    assert failures == [], "\n".join(failures)


def fuzz(pristine: Path, corpus: Path, examples: int, seed: int | None) -> None:
    """Try ``examples`` damages (the fixed set when ``seed`` is None); the first that
    breaks a rule is stored as it was found (shrinking it would cost minutes of
    commands) and fails the search."""
    paths, targets, last = paths_of(pristine), searched_targets(pristine), {}

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=seed is None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(damages(paths, targets))
    def check(example):
        broken = broken_rules(example, pristine, corpus)
        if broken:
            last.update(example=example, broken=broken)
        assert broken == [], (example, broken)

    if seed is not None:
        check = hypothesis.seed(seed)(check)
    try:
        check()
    except Exception:
        if last:
            store(last["example"], last["broken"])
        raise


def test_fast_profile(pristine, text_corpus):
    fuzz(pristine, text_corpus, FAST_EXAMPLES, seed=None)


@pytest.mark.skipif(MINUTES <= 0, reason="the long profile: make fuzz MINUTES=N")
def test_long_profile(pristine, text_corpus):
    end, seed, failures = time.monotonic() + 60 * MINUTES, int(time.time()), []
    tried = 0
    while time.monotonic() < end:
        try:
            fuzz(pristine, text_corpus, 25, seed)
        except Exception as failure:  # stored; the search goes on
            failures.append(str(failure)[:300])
        tried, seed = tried + 25, seed + 1
    print(
        f"long profile: up to {tried} examples in {MINUTES} minutes, "
        f"{len(failures)} searches found a damage that breaks a rule"
    )
    assert failures == [], failures
