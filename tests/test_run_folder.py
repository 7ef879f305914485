"""A run folder guards its data and is never half-written; every command fails in one
line.

Each case runs a command on a tiny trained run (or with bad input) and checks the exit
status, the message (which names the file or the option) and, where a run folder is
involved, that every file in it is byte-identical afterwards."""

import hashlib
import importlib
import json
import os
import re
import shutil
import sys
import types
from pathlib import Path

import pytest
import sacrebleu.utils
from conftest import train_argv

from annotated_transformer import (
    benchmark,
    bundle,
    data,
    evaluate,
    parsing,
    train,
    translate,
    variations,
    visualize,
)
from annotated_transformer.config import RunConfig
from annotated_transformer.figures import capture
from annotated_transformer.running import checkpoints, run_data
from annotated_transformer.text import corpora


def hashes(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and the SHA-256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def one_line_error(capsys, *expected: str) -> str:
    """Standard error is one line that contains each expected text, and no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for text in expected:
        assert text in err, (text, err)
    return err


def test_resuming_with_changed_training_text_is_refused_and_changes_nothing(
    run, text_corpus, tmp_path, capsys
):
    changed = tmp_path / "changed"
    shutil.copytree(text_corpus, changed)
    lines = (changed / "train.en").read_text(encoding="utf-8").splitlines(keepends=True)
    (changed / "train.en").write_text(
        "a dog sees the small bird\n" + "".join(lines[1:]), encoding="utf-8"
    )
    before = hashes(run)
    assert train.main(train_argv(changed, run, 8)) == 2
    err = one_line_error(
        capsys, f"{run} was started on other training data", "another --run"
    )
    # the run's fingerprint and the new data's
    assert len(set(re.findall(r"\b[0-9a-f]{16}\b", err))) == 2
    assert hashes(run) == before
    # the run's own data: it goes on
    assert train.main(train_argv(text_corpus, run, 6)) == 0
    assert len(list((run / "vocab").glob("*.model"))) == 1


def test_a_run_without_a_recorded_fingerprint_is_judged_by_its_vocabulary(
    run, text_corpus, tmp_path, capsys
):
    config = json.loads((run / "config.json").read_text())
    del config["data"]  # as runs made before the fingerprint was recorded
    (run / "config.json").write_text(json.dumps(config))
    changed = tmp_path / "changed"
    shutil.copytree(text_corpus, changed)
    (changed / "train.de").write_text(
        "ein hund\n" + (text_corpus / "train.de").read_text().split("\n", 1)[1]
    )
    before = hashes(run)
    assert train.main(train_argv(changed, run, 8)) == 2
    one_line_error(capsys, "was started on other training data")
    assert hashes(run) == before


@pytest.mark.parametrize(
    "name, command, argv",
    [
        ("config.json", train.main, lambda run, corpus: train_argv(corpus, run, 8)),
        (
            "config.json",
            translate.main,
            lambda run, corpus: ["--run", str(run), "-i", str(corpus / "test.en")],
        ),
        (
            "config.json",
            evaluate.main,
            lambda run, corpus: ["--run", str(run), "--limit", "2"],
        ),
        (
            "config.json",
            bundle.main,
            lambda run, corpus: ["--run", str(run), "-o", str(run.parent / "m.pt")],
        ),
        ("results.json", train.main, lambda run, corpus: train_argv(corpus, run, 4)),
    ],
)
def test_a_damaged_json_file_is_named_with_what_to_do(
    run, text_corpus, capsys, name, command, argv
):
    # what a crash in the middle of a plain write leaves
    (run / name).write_text('{"model": {"vocab_size": 8')
    before = hashes(run)
    assert command(argv(run, text_corpus)) == 2
    one_line_error(capsys, f"{run / name} cannot be read as JSON", "delete it")
    assert hashes(run) == before


def test_a_damaged_checkpoint_of_the_run_is_refused_before_anything_is_written(
    run, text_corpus, capsys
):
    (run / "checkpoints" / "step-0000004.pt").write_bytes(b"x" * 100)
    before = hashes(run)
    assert train.main(train_argv(text_corpus, run, 8)) == 2
    one_line_error(
        capsys,
        "step-0000004.pt is truncated, corrupt or not a checkpoint",
        "Delete it to resume",
    )
    assert hashes(run) == before  # not even the lock file was touched


def test_a_write_cut_short_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "results.json"
    checkpoints.write_atomically(path, '{"bleu": 1}\n')

    def crash(f):
        f.write(b'{"bleu": 2')
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        checkpoints.write_atomically(path, crash)
    assert path.read_text() == '{"bleu": 1}\n' and [
        p.name for p in tmp_path.iterdir()
    ] == ["results.json"]


def test_checkpoint_writes_reach_the_disk(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    checkpoints.save_checkpoint(
        tmp_path / "checkpoints" / "step-0000001.pt", {"step": 1}
    )
    assert len(synced) == 2  # the file, then the folder's entry for its new name
    assert checkpoints.load_checkpoint(
        tmp_path / "checkpoints" / "step-0000001.pt"
    ) == {"step": 1}


def test_leftovers_of_killed_writes_are_removed_and_a_torn_log_line_is_cut(
    run, text_corpus, capsys
):
    leftover = run / "checkpoints" / ".step-0000006.pt.a1b2c3d4.tmp"
    leftover.write_bytes(b"half a checkpoint")
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as f:
        f.write('{"step": 5, "loss": 3.1')  # a line cut off by kill -9
    assert train.main(train_argv(text_corpus, run, 6)) == 0
    assert f"removed {leftover}" in capsys.readouterr().out
    assert not leftover.exists()
    records = [
        json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
    ]
    assert max(r["step"] for r in records) == 6


def test_training_files_of_blank_lines_write_nothing(text_corpus, tmp_path, capsys):
    blank = tmp_path / "blank"
    shutil.copytree(text_corpus, blank)
    for lang in ("en", "de"):
        (blank / f"train.{lang}").write_text("\n" * 50)
    assert train.main(train_argv(blank, tmp_path / "run", 4)) == 2
    one_line_error(
        capsys, "split under", "has no text: every line of both languages is blank"
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "flag, value",
    [("--max-steps", "0"), ("--keep-checkpoints", "1"), ("--warmup", "-3")],
)
def test_bad_settings_name_the_option(text_corpus, tmp_path, capsys, flag, value):
    assert train.main([*train_argv(text_corpus, tmp_path / "run", 4), flag, value]) == 2
    one_line_error(capsys, flag)
    assert not (tmp_path / "run").exists()


def test_a_damaged_checkpoint_the_user_named_gets_advice_for_a_named_file(
    run, tmp_path, capsys
):
    named = tmp_path / "model.pt"
    named.write_bytes((run / "checkpoints" / "step-0000004.pt").read_bytes()[:3000])
    for command in (translate.main, evaluate.main, visualize.main):
        argv = ["--run", str(run), "--checkpoint", str(named)] + (
            ["a red cat"] if command is visualize.main else []
        )
        assert command(argv) == 2
        err = one_line_error(
            capsys,
            f"{named} is truncated, corrupt or not a checkpoint",
            "a model file written by python -m annotated_transformer.bundle",
        )
        # the cause, a whole sentence
        assert "Delete it" not in err and re.search(r"\(\w+: [^)]*[a-z]\)", err)


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "module, patched, argv",
    [
        # during setup
        (
            train,
            "running.run_data.load_splits",
            lambda run, corpus: train_argv(corpus, run.parent / "new", 4),
        ),
        # scoring after training
        (train, "translate_and_score", lambda run, corpus: train_argv(corpus, run, 6)),
        (
            translate,
            "translate_lines",
            lambda run, corpus: ["--run", str(run), "-i", str(corpus / "test.en")],
        ),
        (evaluate, "evaluate", lambda run, corpus: ["--run", str(run), "--limit", "2"]),
        (
            bundle,
            "bundle_run",
            lambda run, corpus: ["--run", str(run), "-o", str(run.parent / "m.pt")],
        ),
        (visualize, "capture", lambda run, corpus: ["--run", str(run), "a red cat"]),
        (
            parsing,
            "load_treebank",
            lambda run, corpus: ["--run", str(run.parent / "parse")],
        ),
        (
            variations,
            "run_row",
            lambda run, corpus: [
                "--rows",
                "base",
                "--seeds",
                "1",
                "--no-progress",
                "--results",
                str(run.parent / "rows.jsonl"),
                "--runs",
                str(run.parent),
            ],
        ),
        (benchmark, "time_cache", lambda run, corpus: ["cache"]),
    ],
)
def test_ctrl_c_anywhere_exits_130_in_one_line(
    run, text_corpus, monkeypatch, capsys, module, patched, argv
):
    owner, _, name = patched.rpartition(".")
    # a module the command imports, or one of the package's that it reaches
    where = module
    if owner:
        where = getattr(module, owner, None) or importlib.import_module(
            f"annotated_transformer.{owner}"
        )
    monkeypatch.setattr(where, name, _interrupt)
    try:
        status = module.main(argv(run, text_corpus))
    except KeyboardInterrupt:
        pytest.fail(f"Ctrl-C escaped {module.__name__}.main as a traceback")
    assert status == 130
    err = capsys.readouterr().err  # what the command said before, then one line
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(
        "interrupted"
    )


def test_unwritable_visualize_outputs_are_refused_before_any_work(
    run, tmp_path, capsys
):
    for option in ("-o", "--save"):
        assert (
            visualize.main(["--run", str(run), option, str(tmp_path), "a red cat"]) == 2
        )
        one_line_error(
            capsys, f"{tmp_path} is a folder; give the file to write with {option}"
        )


def test_visualize_translates_as_translate_does_and_offers_no_batching(
    run, monkeypatch, capsys
):
    seen = {}

    def spy(model, sp, sentences, device, settings, *rest):
        seen.update(
            beam=settings.beam_size, alpha=settings.alpha, max_extra=settings.max_extra
        )
        return ["ein kind"]

    monkeypatch.setattr(capture, "translate_sentences", spy)
    out = run.parent / "a.npz"
    argv = [
        "--run",
        str(run),
        "--beam",
        "2",
        "--alpha",
        "0.2",
        "--max-extra",
        "7",
        "--save",
        str(out),
        "a cat",
    ]
    assert visualize.main(argv) == 0
    assert seen == {"beam": 2, "alpha": 0.2, "max_extra": 7}
    with pytest.raises(SystemExit):
        visualize.main(["--run", str(run), "--eval-batch-tokens", "100", "a cat"])
    assert "unrecognized arguments: --eval-batch-tokens" in capsys.readouterr().err


def test_the_copy_task_refuses_options_it_would_ignore(capsys):
    assert (
        train.main(["--task", "copy", "--d-model", "64", "--batch-tokens", "100"]) == 2
    )
    one_line_error(
        capsys,
        "uses only --max-steps, --seed, --device and --progress",
        "drop --d-model, --batch-tokens",
    )
    assert train.main(["--task", "copy", "--preset", "base"]) == 2
    one_line_error(capsys, "drop --preset")


def test_a_failed_download_leaves_no_folders(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(corpora.urllib.request, "urlopen", offline)
    with pytest.raises(data.DataError, match="could not be downloaded"):
        corpora.load_pairs("multi30k", "train", "en", "de", tmp_path / "typo" / "data")

    # what sacreBLEU does when its download fails
    def sacrebleu_fails(test_set, langpair):
        sys.exit(1)

    monkeypatch.setattr(sacrebleu.utils, "get_source_file", sacrebleu_fails)
    with pytest.raises(data.DataError, match="sacreBLEU could not download it"):
        corpora.load_pairs("wmt14", "test", "en", "de", tmp_path / "typo" / "data")

    def hub_fails(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setitem(
        sys.modules, "datasets", types.SimpleNamespace(load_dataset=hub_fails)
    )
    with pytest.raises(data.DataError, match="could not be downloaded"):
        corpora.load_pairs("wmt14", "train", "en", "de", tmp_path / "typo" / "data")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_download_keeps_folders_that_were_there(tmp_path, monkeypatch):
    (tmp_path / "data" / "notes").mkdir(parents=True)
    monkeypatch.setattr(
        corpora.urllib.request,
        "urlopen",
        lambda *a, **k: (_ for _ in ()).throw(OSError("offline")),
    )
    with pytest.raises(data.DataError):
        corpora.load_pairs("multi30k", "valid", "en", "de", tmp_path / "data")
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["notes"]


def test_the_cached_vocabulary_is_named_by_its_fingerprint_and_reused(
    synthetic_pairs, tmp_path
):
    pairs = synthetic_pairs(200, 0)
    sp = corpora.train_shared_vocab(pairs, 60, tmp_path)
    (path,) = tmp_path.glob("*.model")
    assert path.name == data.vocab_file(pairs, 60)
    # training is deterministic
    assert sp.serialized_model_proto() == data.train_vocab(pairs, 60)
    assert (
        run_data.prepare_data(
            RunConfig(),
            60,
            path,
            (pairs, pairs[:20]),
            say=lambda *a: None,
            token_cache=False,
        )[3]
        is None
    )
