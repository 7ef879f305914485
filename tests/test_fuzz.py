"""A hostile-input fuzzer: Hypothesis damages a finished tiny run and its model file
(fields deleted, retyped, resized or set to NaN, infinity, huge or negative numbers;
files truncated, emptied, replaced by folders or links; bytes flipped) and runs one
command on them: train (resume), translate, evaluate, bundle or visualize.

Every run must end with status 0 or 2, say at most one error line and no traceback,
print no raw control character, leave every file outside its sandbox as it was, and
stay under a memory bound. The fast profile runs a fixed set of examples with the
tests; ``make fuzz MINUTES=N`` searches with new random seeds for N minutes and stores
each damage that breaks a rule under ``tests/fuzz-found/``, which every run replays
first."""

import contextlib
import hashlib
import json
import math
import os
import resource
import shutil
import sys
import tempfile
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

from annotated_transformer import bundle, evaluate, train, translate, visualize  # noqa: E402

FOUND = Path(__file__).parent / "fuzz-found"
MINUTES = float(os.environ.get("AT_FUZZ_MINUTES", "0"))
FAST_EXAMPLES = 150
# The memory a command may add to the test process (as address space): a tiny run
# needs a few hundred megabytes.
MEMORY_BOUND = 3 * 2**30

COMMANDS = ("train", "translate", "translate-file", "evaluate", "bundle", "visualize")
FILE_DAMAGES = ("truncate", "empty", "folder", "link", "flip", "append")
VALUE_DAMAGES = ("delete", "null", "text", "list", "nan", "inf", "huge", "negative")
TENSOR_DAMAGES = ("nan", "resize", "integers", "stride0", "empty")


@pytest.fixture(scope="module")
def pristine(finished_run, tmp_path_factory) -> Path:
    """A finished run, scored once by evaluate, and its model file: what every
    example damages a copy of."""
    base = tmp_path_factory.mktemp("pristine")
    shutil.copytree(finished_run, base / "run")
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
    return ["model.pt", *inside]


def damages(paths: list[str]):
    """One to three damages, each a dict that JSON can store."""
    one = st.one_of(
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
    return st.fixed_dictionaries(
        {
            "command": st.sampled_from(COMMANDS),
            "damages": st.lists(one, min_size=1, max_size=3),
        }
    )


# --- damaging a file ---


def damage_file(path: Path, damage: dict, victim: Path, sandbox: Path) -> None:
    """Damage the file or folder at ``path``, never writing through a link that an
    earlier damage planted (that would change the victim itself)."""
    if any(p.is_symlink() for p in path.parents if p.is_relative_to(sandbox)):
        return
    if not path.parent.is_dir():  # an earlier damage took its folder
        return
    if path.is_symlink() and damage["kind"] not in ("folder", "link"):
        return
    kind, data = damage["kind"], b""
    if kind == "value":
        damage_value(path, damage)
        return
    if path.is_dir() and not path.is_symlink():
        if kind in ("folder", "link"):
            shutil.rmtree(path)
        else:
            return  # a folder's bytes cannot be cut or flipped
    elif path.exists() or path.is_symlink():
        data = path.read_bytes() if path.is_file() else b""
        if kind in ("folder", "link"):
            path.unlink()
    if kind == "truncate":
        path.write_bytes(data[: int(len(data) * damage["at"])])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "folder":
        path.mkdir()
    elif kind == "link":
        path.symlink_to(victim / ("folder" if path.suffix == "" else "file"))
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
    if not path.is_file():
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


def argv_of(command: str, sandbox: Path, corpus: Path) -> tuple:
    run, model, out = sandbox / "run", sandbox / "model.pt", sandbox / "out"
    quick = ["--beam-size", "1", "--no-progress"]
    source = ["-i", str(corpus / "test.en")]
    return {
        "train": (train, train_argv(corpus, run, 6)),
        "translate": (translate, ["--run", str(run), *source, "-o", str(out), *quick]),
        "translate-file": (
            translate,
            ["--checkpoint", str(model), *source, "-o", str(out), *quick],
        ),
        "evaluate": (evaluate, ["--run", str(run), "--limit", "3", *quick]),
        "bundle": (bundle, ["--run", str(run), "-o", str(out)]),
        "visualize": (
            visualize,
            ["--run", str(run), "Ein Hund .", "-o", str(out) + ".png", "--no-progress"],
        ),
    }[command]


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
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def broken_rules(example: dict, pristine: Path, corpus: Path) -> list[str]:
    """Damage a copy of the pristine run as ``example`` says, run its command, and
    list the rules the command broke."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        sandbox, victim = root / "sandbox", root / "victim"
        shutil.copytree(pristine, sandbox, symlinks=True)
        victim.mkdir()
        (victim / "file").write_text("not the run's\n")
        (victim / "folder").mkdir()
        (victim / "folder" / "file").write_text("not the run's either\n")
        outside = {f: hashes(f) for f in (victim, pristine, corpus)}
        for damage in example["damages"]:
            damage_file(sandbox / damage["path"], damage, victim, sandbox)
        module, argv = argv_of(example["command"], sandbox, corpus)
        threads = torch.get_num_threads()
        with captured() as said, bounded_memory():
            try:
                status = module.main(argv)
            except SystemExit as stop:
                status = stop.code
            except BaseException:  # what the rules are about
                status = "traceback"
                print(traceback.format_exc(), file=sys.stderr)
        torch.set_num_threads(threads)
        broken = []
        if status not in (0, 2):
            broken.append(f"status {status}")
        text = said["out"] + said["err"]
        errors = [
            line for line in said["err"].splitlines() if line.startswith("error:")
        ]
        if "Traceback" in text or len(errors) > 1:
            broken.append("a traceback or more than one error line")
        if status == 2 and not errors:
            broken.append("status 2 without an error line")
        if any(ord(c) < 32 and c not in "\n\t" for c in text):
            broken.append("a raw control character")
        if "out of memory" in text:
            broken.append("damage reported as a lack of memory")
        for folder, before in outside.items():
            after = hashes(folder)
            changed = [
                p for p in before.keys() | after.keys() if before.get(p) != after.get(p)
            ]
            if changed:
                broken.append(
                    f"changed outside the sandbox: {folder / sorted(changed)[0]}"
                )
        if broken:
            broken.append(f"it said: {said['err'].strip()[-600:]!r}")
        return broken
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


def fuzz(pristine: Path, corpus: Path, examples: int, seed: int | None) -> None:
    """Try ``examples`` damages (the fixed set when ``seed`` is None); the first that
    breaks a rule is stored as it was found (shrinking it would cost minutes of
    commands) and fails the search."""
    paths, last = paths_of(pristine), {}

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=seed is None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(damages(paths))
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
