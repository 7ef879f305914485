"""Files and processes that get in a run's way: a second trainer started on the same new
folder, links planted where the package writes, an output folder that holds a user's
files, damaged fields in the files that a run reads back. Each case checks the exit
status, the one line said, and that nothing outside what the command owns changed."""

import io
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import HANG, TORCHRUN_TRAIN, Child, train_argv
from test_run_folder import hashes, one_line_error

from annotated_transformer import (
    bundle,
    cli,
    evaluate,
    parsing,
    train,
    translate,
    visualize,
)
from annotated_transformer.data import train_vocab
from annotated_transformer.figures import capture, store
from annotated_transformer.model import make_model
from annotated_transformer.running import checkpoints, devices, files, loading, run_data
from annotated_transformer.text import corpora

TRAIN = [sys.executable, "-m", "annotated_transformer.train"]
TRANSLATE = [sys.executable, "-m", "annotated_transformer.translate"]
BUNDLE = [sys.executable, "-m", "annotated_transformer.bundle"]


def test_a_trainer_that_fails_removes_nothing_another_trainer_wrote(
    text_corpus, tmp_path, monkeypatch, capsys
):
    run = tmp_path / "run"
    other = {}
    prepare = run_data.prepare_data

    def another_trainer_arrives(*args, **kwargs):
        # while this trainer prepares its data, a second one starts on the folder
        try:
            other["lock"] = files.RunLock(run)
            (run / "theirs.txt").write_text("kept")
        except ValueError as refused:
            other["refused"] = str(refused)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(run_data, "prepare_data", another_trainer_arrives)
    too_small = train_argv(text_corpus, run, 2, "--batch-tokens", "8")
    assert train.main(too_small) == 2
    assert "fewer than the longest kept pair" in capsys.readouterr().err
    # the folder was this trainer's, under its lock: the other one was refused
    assert "is being trained by process" in other["refused"] and not run.exists()


@pytest.mark.slow
def test_a_second_trainer_that_fails_never_removes_the_first_ones_files(
    text_corpus, tmp_path
):
    # The second trainer's batches are too small for the longest pair, so its data
    # preparation fails. Started at 20 moments from a second before the first one to
    # a second after it, it must never take the folder that the first one is filling.
    # (Whichever takes the run's lock first trains; the other is refused at once.)
    first_command = [*TRAIN, *train_argv(text_corpus, Path("RUN"), 2)]
    second_command = [*first_command, "--batch-tokens", "8"]
    trained = 0
    for attempt in range(20):
        run = tmp_path / f"run{attempt}"
        delay = 0.1 * attempt - 1.0  # below 0: the second one starts first
        commands = [
            [str(run) if a == "RUN" else a for a in c]
            for c in (first_command, second_command)
        ]
        started = {}
        for which in sorted((0, 1), key=lambda w: delay if w == 1 else 0.0):
            started[which] = subprocess.Popen(
                commands[which],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            time.sleep(abs(delay))
        first_err = started[0].communicate(timeout=HANG)[1]
        second_err = started[1].communicate(timeout=HANG)[1]
        assert started[1].returncode == 2, second_err
        if started[0].returncode == 2 and "is being trained by" in first_err:
            continue  # the second one held the lock: the first made nothing
        assert started[0].returncode == 0, (attempt, first_err)
        made = {p.relative_to(run).parts[0] for p in run.rglob("*") if p.is_file()}
        assert {"vocab", "config.json", "checkpoints", "results.json"} <= made, attempt
        trained += 1
    assert trained >= 5  # the first one trains whenever it gets there first


def test_a_link_planted_at_any_path_of_a_run_is_refused_and_its_target_kept(
    finished_run, text_corpus, tmp_path
):
    # every path of a finished and scored run, files and folders
    scored = tmp_path / "scored"
    shutil.copytree(finished_run, scored)
    score = ["--limit", "3", "--beam-size", "1", "--no-progress"]
    assert evaluate.main(["--run", str(scored), *score]) == 0
    paths = sorted(p.relative_to(scored) for p in scored.rglob("*"))
    assert {"eval", "tokens", "train.lock", "metrics.jsonl"} <= {
        p.parts[0] for p in paths
    }
    victim = tmp_path / "victim"
    for path in paths:
        shutil.rmtree(victim, ignore_errors=True)
        victim.mkdir()
        (victim / "file").write_text("not the run's\n")
        (victim / "folder").mkdir()
        (victim / "folder" / "file").write_text("not the run's either\n")
        before = hashes(victim)
        run = tmp_path / "run"
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(scored, run)
        planted = run / path
        target = victim / ("folder" if planted.is_dir() else "file")
        shutil.rmtree(planted) if planted.is_dir() else planted.unlink()
        planted.symlink_to(target)
        # training on (two updates more) and scoring again: each stops, or writes
        # only its own files
        statuses = [
            train.main(train_argv(text_corpus, run, 6)),
            evaluate.main(["--run", str(run), *score]),
        ]
        assert set(statuses) <= {0, 2}, (path, statuses)
        assert hashes(victim) == before, path
        assert planted.is_symlink(), path


def inflated(model_file: Path, out: Path, model: dict | None = None, vocab: int = 0):
    """A copy of ``model_file`` whose settings describe ``model`` (its weights then
    stride-0 views of one stored number, of the shapes those settings give), or whose
    vocabulary claims ``vocab`` bytes stored as one; its fingerprint made to match."""
    state = torch.load(model_file, weights_only=True)
    if model:
        state["settings"]["model"].update(model)
        config, _ = checkpoints.configs_of({"run": {}, **state["settings"]})
        with torch.device("meta"):
            expected = make_model(config).state_dict()
        state["model"] = {
            k: torch.zeros(1).expand(v.shape) for k, v in expected.items()
        }
    if vocab:
        state["sentencepiece"] = torch.zeros(1, dtype=torch.uint8).expand(vocab)
    state["settings_sha256"] = loading.settings_fingerprint(state["settings"])
    torch.save(state, out)
    return out


def limited_to_4_gb():
    resource.setrlimit(resource.RLIMIT_AS, (4_000_000 * 1024, 4_000_000 * 1024))


def test_a_small_model_file_that_claims_gigabytes_is_refused_before_allocating(
    finished_run, text_corpus, tmp_path
):
    shared = tmp_path / "model.pt"
    assert bundle.main(["--run", str(finished_run), "-o", str(shared)]) == 0
    big = {"d_model": 8192, "d_ff": 32768, "n_heads": 16, "n_layers": 3}
    for damaged, claimed in (
        (inflated(shared, tmp_path / "big-model.pt", model=big), 19e9),
        (inflated(shared, tmp_path / "big-vocab.pt", vocab=10 * 2**30), 10 * 2**30),
    ):
        assert damaged.stat().st_size < 300_000
        state = torch.load(damaged, weights_only=True)
        numbers = sum(t.numel() * t.element_size() for t in state["model"].values())
        assert numbers + state["sentencepiece"].numel() > claimed
        translated = subprocess.run(
            [
                sys.executable,
                "-m",
                "annotated_transformer.translate",
                "--checkpoint",
                str(damaged),
                "-i",
                str(text_corpus / "test.en"),
                "--no-progress",
            ],
            capture_output=True,
            text=True,
            preexec_fn=limited_to_4_gb,
            timeout=HANG,
        )
        lines = translated.stderr.strip().splitlines()
        assert translated.returncode == 2 and len(lines) == 1, translated.stderr
        assert str(damaged) in lines[0] and "Traceback" not in translated.stderr


def test_a_model_file_whose_parts_do_not_fit_each_other_is_refused(
    finished_run, tmp_path, text_corpus, capsys
):
    shared = tmp_path / "model.pt"
    assert bundle.main(["--run", str(finished_run), "-o", str(shared)]) == 0
    good = torch.load(shared, weights_only=True)

    def translated(state: dict, name: str) -> int:
        path = tmp_path / name
        torch.save(state, path)
        capsys.readouterr()
        argv = ["--checkpoint", str(path), "-i", str(text_corpus / "test.en")]
        return translate.main([*argv, "--no-progress"])

    # weights of whole numbers, with the right shapes
    state = {**good, "model": {k: v.long() for k, v in good["model"].items()}}
    assert translated(state, "int64.pt") == 2
    one_line_error(capsys, "int64.pt", "not of a floating-point type")
    # the fingerprint of the settings deleted
    state = {k: v for k, v in good.items() if k != "settings_sha256"}
    assert translated(state, "no-fingerprint.pt") == 2
    one_line_error(capsys, "no-fingerprint.pt", "fingerprint of them is gone")
    # a model for 60 pieces with the vocabulary of 80
    settings = json.loads(json.dumps(good["settings"]))
    settings["model"]["vocab_size"] = 60
    config, _ = checkpoints.configs_of({"run": {}, **settings})
    state = {
        **good,
        "settings": settings,
        "settings_sha256": loading.settings_fingerprint(settings),
        "model": make_model(config).state_dict(),
    }
    assert translated(state, "60-pieces.pt") == 2
    one_line_error(
        capsys, "60-pieces.pt", "a vocabulary of 80 pieces for a model of 60"
    )
    # and a model of 100 pieces with it: ids 80 to 99 could not be written out
    settings["model"]["vocab_size"] = 100
    config, _ = checkpoints.configs_of({"run": {}, **settings})
    state.update(
        settings_sha256=loading.settings_fingerprint(settings),
        model=make_model(config).state_dict(),
    )
    assert translated(state, "100-pieces.pt") == 2
    one_line_error(capsys, "a vocabulary of 80 pieces for a model of 100")


def test_settings_nested_too_deep_to_fingerprint_are_refused(tmp_path):
    nested = []
    for _ in range(50_000):
        nested = [nested]
    state = {"settings": {"model": {}, "run": {"x": nested}}, "settings_sha256": "0"}
    with pytest.raises(checkpoints.CheckpointError, match="bundle the run again"):
        loading.check_settings_fingerprint(state, tmp_path / "deep.pt")


def test_a_file_given_as_a_run_folder_is_named_as_such(text_corpus, capsys):
    one_file = text_corpus / "test.en"
    for command in (translate, evaluate):
        assert command.main(["--run", str(one_file), "--no-progress"]) == 2
        one_line_error(capsys, f"--run {one_file} is a file, not a run folder")


@pytest.mark.parametrize("minutes", ["abc", "nan", "1e300", "0"])
def test_a_bad_rank_timeout_is_one_line_and_help_still_works(minutes, tmp_path):
    env = {**os.environ, "AT_RANK_TIMEOUT_MINUTES": minutes}
    helped = subprocess.run([*TRAIN, "--help"], capture_output=True, text=True, env=env)
    assert helped.returncode == 0 and "usage" in helped.stdout
    trained = subprocess.run(
        [*TRAIN, "--out-dir", str(tmp_path / "run"), "--max-steps", "1"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert trained.returncode == 2 and trained.stderr.count("\n") == 1, trained.stderr
    assert "AT_RANK_TIMEOUT_MINUTES must be a number" in trained.stderr
    assert not (tmp_path / "run").exists()


def resumed(corpus: Path, run: Path, capsys) -> tuple[int, str]:
    """Train ``run`` on to update 6; (exit status, what it said on standard error)."""
    capsys.readouterr()
    status = train.main(train_argv(corpus, run, 6))
    return status, capsys.readouterr().err


def damaged_checkpoint(run: Path, change) -> Path:
    path = run / "checkpoints" / "step-0000004.pt"
    state = torch.load(path, weights_only=True)
    change(state)
    torch.save(state, path)
    return path


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.pop("optimizer"),
        lambda s: s.update(rng=[5]),
        lambda s: s["rng"][0].update(cpu=torch.zeros(3, dtype=torch.uint8)),
        lambda s: s.update(step="abc"),
        lambda s: s.update(step=40),
        lambda s: s["optimizer"]["state"][0].update(exp_avg=torch.zeros(3)),
        lambda s: s.update(scheduler={"base_lrs": "x"}),
    ],
    ids=[
        "no-optimizer",
        "rng-5",
        "rng-3-bytes",
        "step-abc",
        "step-40",
        "exp-avg",
        "scheduler",
    ],
)
def test_a_damaged_part_of_the_newest_checkpoint_says_delete_it(
    run, text_corpus, capsys, change, request
):
    path = damaged_checkpoint(run, change)
    before = hashes(run)
    status, err = resumed(text_corpus, run, capsys)
    assert status == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert f"{path} cannot be resumed from" in err and "Delete it" in err
    if "exp_avg" in request.node.name:
        assert "its optimizer is damaged" in err
    assert hashes(run) == before


@pytest.mark.parametrize("world", [0, "2", None, True])
def test_an_edited_world_size_names_config_json(run, text_corpus, capsys, world):
    config = run / "config.json"
    settings = json.loads(config.read_text())
    config.write_text(json.dumps({**settings, "world_size": world}))
    status, err = resumed(text_corpus, run, capsys)
    assert status == 2 and len(err.splitlines()) == 1, err
    assert f"{config} is not the settings a run writes" in err and "world_size" in err


def test_an_edited_model_setting_names_config_json_not_the_checkpoints(
    run, text_corpus, capsys
):
    config = run / "config.json"
    settings = json.loads(config.read_text())
    settings["model"]["d_model"] = 64
    config.write_text(json.dumps(settings))
    status, err = resumed(text_corpus, run, capsys)
    assert status == 2 and len(err.splitlines()) == 1, err
    assert f"{config} was edited" in err and "--d-model" in err
    assert "move it out" not in err


def test_a_metrics_log_with_a_huge_step_or_other_bytes_is_handled(
    run, text_corpus, capsys
):
    log = run / "metrics.jsonl"
    with log.open("a") as file:
        file.write('{"step": 1e999}\n')
    status, err = resumed(text_corpus, run, capsys)
    assert status == 0 and "Traceback" not in err, err
    log.write_bytes(log.read_bytes() + b"\xea\n")
    status, err = resumed(text_corpus, run, capsys)
    assert status == 0  # finished: the score is read, the log is not
    status, err = train.main(train_argv(text_corpus, run, 8)), capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1, err
    assert f"{log} is not the UTF-8 text" in err


def flipped(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[10:14] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "name, damage",
    [
        ("src.ids", flipped),
        ("src.ids", lambda p: p.write_bytes(p.read_bytes()[:-20])),
        ("meta.json", lambda p: p.write_text("{bad")),
        ("meta.json", lambda p: p.write_text('{"dtype": "object", "kept": 400}')),
        ("src.offsets", lambda p: p.write_bytes(b"")),
    ],
    ids=["flipped", "truncated", "bad-json", "object-dtype", "empty-offsets"],
)
def test_a_damaged_token_cache_says_to_delete_the_caches(
    run, text_corpus, capsys, name, damage
):
    (cache,) = (run / "tokens").iterdir()
    damage(cache / name)
    status, err = resumed(text_corpus, run, capsys)
    assert status == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert f"the token cache {cache} is damaged" in err
    assert f"delete {run / 'tokens'}" in err
    shutil.rmtree(run / "tokens")  # as the message says: then the run goes on
    assert resumed(text_corpus, run, capsys)[0] == 0


def test_every_error_line_is_printable_and_one_line(capsys):
    @cli.command
    def hostile(argv):
        raise ValueError("named \x1b]0;retitled\x07 in\na file")

    assert hostile([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err
    assert "\\x1b]0;retitled\\x07 in\\na file" in err


def stored_attention(tmp_path: Path, first_label: str = "a") -> Path:
    """A file of stored attention weights: one sentence, its first label given."""
    weights = {k: np.full((1, 1, 2, 2), 0.5) for k in ("encoder", "decoder", "cross")}
    sentence = capture.SentenceAttention(
        source="a",
        target="b",
        src_labels=[first_label, "</s>"],
        tgt_labels=["<s>", "b"],
        **weights,
    )
    stored = tmp_path / "stored.npz"
    store.save_attention(stored, [sentence])
    return stored


def test_a_stored_files_labels_reach_the_terminal_escaped(tmp_path, capsys):
    stored = stored_attention(tmp_path, first_label="\x1b]0;retitled\x07")
    argv = ["--stored", str(stored), "--query", "x", "-o", str(tmp_path / "f.png")]
    assert visualize.main(argv) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;retitled" in err


def test_stored_weights_without_a_record_draw_and_are_not_saved_again(tmp_path, capsys):
    stored = stored_attention(tmp_path)
    with np.load(stored) as arrays:  # a file whose meta has no "about"
        files = dict(arrays)
    meta = json.loads(str(files["meta"]))
    del meta["about"]
    files["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "no-about.npz", **files)
    figure = tmp_path / "f.png"
    argv = ["--stored", str(tmp_path / "no-about.npz"), "-o", str(figure)]
    assert visualize.main(argv) == 0 and figure.is_file()
    copy = tmp_path / "copy.npz"
    assert visualize.main(["--stored", str(stored), "--save", str(copy)]) == 2
    one_line_error(capsys, "copy the file instead")
    assert not copy.exists()


def test_a_target_longer_than_the_model_covers_is_refused_before_its_mask(
    run, tmp_path, capsys
):
    target = " ".join(["Hund"] * 1100)
    argv = [
        "--run",
        str(run),
        "Ein Hund.",
        "--target",
        target,
        "-o",
        str(tmp_path / "f.png"),
    ]
    assert visualize.main([*argv, "--no-progress"]) == 2
    one_line_error(capsys, "the target has", "positions this model covers")


def test_a_resumed_run_may_keep_more_checkpoints_to_average_more(
    run, text_corpus, capsys
):
    # the run kept 2 checkpoints to average 2; it goes on keeping 3 to average 3
    more = ["--keep-checkpoints", "3", "--average", "3"]
    assert train.main([*train_argv(text_corpus, run, 6), *more]) == 0
    assert "average of the checkpoints of updates 2, 4, 6" in capsys.readouterr().out


def test_more_threads_than_the_machine_has_are_refused(run, text_corpus, capsys):
    argv = ["--run", str(run), "-i", str(text_corpus / "test.en"), "--no-progress"]
    assert translate.main([*argv, "--threads", "10000"]) == 2
    one_line_error(capsys, "--threads 10000 is more than the")


def test_an_openmp_list_of_thread_counts_fixes_the_first(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "4,2")
    assert devices.fixed_threads() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "abc")
    assert devices.fixed_threads() == 0


def test_a_test_split_in_a_model_file_that_leads_out_of_the_data_is_refused(
    finished_run, tmp_path, text_corpus, capsys
):
    shared = tmp_path / "model.pt"
    assert bundle.main(["--run", str(finished_run), "-o", str(shared)]) == 0
    state = torch.load(shared, weights_only=True)
    state["settings"]["run"]["test_split"] = "../../victim/x"
    state["settings"]["run"]["data_dir"] = str(text_corpus)
    state["settings_sha256"] = loading.settings_fingerprint(state["settings"])
    torch.save(state, shared)
    capsys.readouterr()
    assert evaluate.main(["--checkpoint", str(shared), "--no-progress"]) == 2
    one_line_error(
        capsys, str(shared), "--test-split must be a name", "'../../victim/x'"
    )
    assert not (tmp_path / "model.eval").exists()


def test_a_test_split_the_corpus_lacks_is_refused_before_training(tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["--corpus", "figure", "--data-dir", str(tmp_path), "--out-dir", str(run)]
    assert train.main(argv) == 2
    one_line_error(
        capsys,
        "--test-split: the figure corpus has the splits train, valid, not 'test'",
    )
    assert not run.exists()
    # its folders missing, the figure corpus names itself
    assert train.main([*argv, "--test-split", "valid"]) == 2
    assert "--corpus text" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "given",
    ["rel dir", "rel", "/abs/with space", "it's data", "x'; touch PWNED; echo '"],
)
@pytest.mark.parametrize("where", ["environment", "command line"])
def test_the_makefile_passes_the_data_folder_on_whole_and_absolute(
    given, where, tmp_path
):
    """No shell reads the value: a quote is a character of the name, and nothing in it
    runs."""
    root = Path(__file__).resolve().parent.parent
    show = ["make", "-s", "-f", str(root / "Makefile"), "--eval"]
    show += ['show: ; @printf "%s" "$$AT_DATA_DIR"', "show"]
    env = {**os.environ, "AT_DATA_DIR": given}
    if where == "command line":
        show.append(f"AT_DATA_DIR={given}")
        env.pop("AT_DATA_DIR")
    shown = subprocess.run(show, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert shown.stderr == ""
    assert shown.stdout == (given if given.startswith("/") else f"{tmp_path}/{given}")
    assert list(tmp_path.iterdir()) == []  # PWNED was not touched


def test_the_instrument_check_refuses_its_output_and_steps_before_training(tmp_path):
    tool = Path(__file__).resolve().parent.parent / "tools" / "instrument_check.py"
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for argv, expected in (
        ([str(tmp_path)], "is a folder"),
        ([str(a_file / "out.json")], "is a file, not a folder"),
        ([str(tmp_path / "out.json"), "--steps", "0"], "--steps"),
    ):
        done = subprocess.run(
            [sys.executable, str(tool), *argv], capture_output=True, text=True
        )
        assert done.returncode == 2 and expected in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == [a_file]


@pytest.mark.parametrize(
    "record", ["a string", {"en": None, "de": "x"}, {"en": 5, "de": "x"}, {"de": "x"}]
)
def test_a_parquet_record_of_another_kind_is_one_line(tmp_path, record):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "train.parquet"
    column = pa.array([json.dumps({"en": "a", "de": "b"}), json.dumps(record)])
    pq.write_table(pa.table({"translation": column}), path)  # strings, not records
    with pytest.raises(corpora.DataError, match="row 1: the translation record"):
        corpora.read_parquet_pairs([path], "en", "de")
    if isinstance(record, dict):  # as a record of its own column type
        pq.write_table(pa.table({"translation": [record]}), path)
        with pytest.raises(corpora.DataError, match="row 1: the translation record"):
            corpora.read_parquet_pairs([path], "en", "de")
    pq.write_table(pa.table({"other": ["x"]}), path)
    with pytest.raises(corpora.DataError) as error:
        corpora.read_parquet_pairs([path], "en", "de")
    assert "\n" not in str(error.value)


def europarl_archive(path: Path, member_is_folder: bool = False) -> Path:
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for lang in ("en", "de"):
            name = f"europarl-v7.de-en.{lang}"
            info = tarfile.TarInfo(name)
            if member_is_folder and lang == "en":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                text = b"a line\n" * 1000
                info.size = len(text)
                tar.addfile(info, io.BytesIO(text))
    return path


def test_a_damaged_europarl_archive_is_one_line_that_says_to_delete_it(tmp_path):
    root = tmp_path / "europarl-v7"
    root.mkdir()
    archive = europarl_archive(root / "de-en.tgz")
    archive.write_bytes(archive.read_bytes()[:-200])  # cut short
    with pytest.raises(corpora.DataError, match="is not a whole Europarl archive"):
        corpora.load_europarl("full", "en", "de", tmp_path)
    europarl_archive(archive, member_is_folder=True)
    with pytest.raises(corpora.DataError, match="is not a file"):
        corpora.load_europarl("full", "en", "de", tmp_path)
    assert not list(root.glob("*.part"))


def treebank_zip(folder: Path, text: bytes, **info) -> Path:
    """A ptb/treebank.zip with one member of ``text``, its ZipInfo fields set."""
    import zipfile

    path = folder / "ptb" / "treebank.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        member = zipfile.ZipInfo("treebank/combined/wsj_0001.mrg")
        member.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(member, text)
    if info:  # rewrite the header fields in place
        data = bytearray(path.read_bytes())
        for offset in (0, data.rfind(b"PK\x01\x02")):
            local = offset == 0
            if "flag" in info:
                at = offset + (6 if local else 8)
                data[at] |= info["flag"]
            if "method" in info:
                at = offset + (8 if local else 10)
                data[at : at + 2] = info["method"].to_bytes(2, "little")
        path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    "text, info, expected",
    [
        (b"(" * 100_000 + b"x" + b")" * 100_000, {}, "nested deeper than 500"),
        (b"( (S (NN x)) )", {"flag": 1}, "encrypted"),
        (b"( (S (NN x)) )", {"method": 99}, "compression"),
        (b"\0" * (2**26 + 1), {}, "unpacks to more than"),
    ],
    ids=["nested", "encrypted", "unknown-compression", "bomb"],
)
def test_a_hostile_treebank_archive_is_one_line(tmp_path, text, info, expected):
    treebank_zip(tmp_path, text, **info)
    with pytest.raises(corpora.DataError) as error:
        parsing.load_treebank(tmp_path)
    assert expected in str(error.value) and "\n" not in str(error.value)
    assert "treebank.zip" in str(error.value)


@pytest.mark.slow
def test_a_signal_that_reaches_one_process_stops_the_run_unscored(
    text_corpus, tmp_path
):
    import psutil

    run = tmp_path / "run"
    command = [*TORCHRUN_TRAIN, *train_argv(text_corpus, run, 400, "--log-every", "1")]
    child = Child(command, env={**os.environ, "OMP_NUM_THREADS": "1"})
    child.read_until("update 3/")
    workers = psutil.Process(child.process.pid).children()
    (second,) = [w for w in workers if w.environ().get("RANK") == "1"]
    second.send_signal(signal.SIGTERM)  # as a scheduler stops one process of a job
    child.process.wait(timeout=HANG)
    output = child.output(wait=True)
    # both processes stopped at the same update and saved it (a scheduled checkpoint
    # if the stop fell on one); nothing was scored
    saved = checkpoints.load_checkpoint(checkpoints.latest_checkpoint(run))
    assert len(saved["rng"]) == 2 and saved["step"] < 400, output
    assert not (run / "results.json").exists(), output
    assert "BLEU" not in output


def test_misleading_messages_now_name_what_is_wrong(run, text_corpus, tmp_path, capsys):
    # a data folder given as a run folder
    assert evaluate.main(["--run", str(text_corpus), "--no-progress"]) == 2
    one_line_error(capsys, f"{text_corpus} is not a run folder")
    # visualize -i with a folder, and with bytes that are not text
    draw = ["--run", str(run), "-o", str(tmp_path / "f.png"), "--no-progress"]
    assert visualize.main([*draw, "-i", str(tmp_path)]) == 2
    one_line_error(capsys, f"-i {tmp_path} is a folder")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00 not text")
    assert visualize.main([*draw, "-i", str(binary)]) == 2
    one_line_error(capsys, f"-i {binary} is not UTF-8 text")
    # a whole disk as a run folder is refused by its contents' names at once
    assert train.main(["--out-dir", "/", "--corpus", "text"]) == 2
    one_line_error(capsys, "/ is a folder this package did not make")


def test_a_vocabulary_size_that_cannot_train_names_the_size_that_can(
    text_corpus, tmp_path, capsys
):
    run = tmp_path / "run"
    # fewer pieces than any vocabulary holds: refused before the text is read
    assert train.main(train_argv(text_corpus, run, 2, "--vocab-size", "3")) == 2
    one_line_error(capsys, "error: --vocab-size must be at least 6, got 3: ")
    # fewer than this text's 28 characters and the 4 reserved pieces, or more pieces
    # than it makes: said in the options' terms, not SentencePiece's
    for size, expected in (("20", "32 or more"), ("5000", "330 or less")):
        assert train.main(train_argv(text_corpus, run, 2, "--vocab-size", size)) == 2
        err = one_line_error(capsys, f"error: --vocab-size {size} is ", expected)
        assert "INTERNAL" not in err and ".cc" not in err
    assert not run.exists()
    pairs = corpora.load_pairs("text", "train", "en", "de", text_corpus)
    for size in (32, 330):  # the sizes named train
        assert train_vocab(pairs, size)


def test_a_batch_larger_than_the_training_data_is_capped_and_says_so(
    text_corpus, tmp_path, capsys
):
    huge = ["--batch-tokens", "99999999999999999999"]
    capped = re.compile(
        r"model: .*; (\d[\d,]*) tokens per update = 1 process\(es\) x 1 "
        r"micro-batch\(es\) x \1 \(--batch-tokens 99999999999999999999 is more than "
        r"the \1 tokens of the training data, which one micro-batch holds at most\)\n"
    )
    run = tmp_path / "huge"
    assert train.main(train_argv(text_corpus, run, 2, *huge)) == 0
    whole = capped.search(capsys.readouterr().out)[1]
    # a resumed run says so again, and goes on with the same batches
    assert train.main(train_argv(text_corpus, run, 4, *huge)) == 0
    assert capped.search(capsys.readouterr().out)[1] == whole
    exact = tmp_path / "exact"
    tokens = whole.replace(",", "")
    assert train.main(train_argv(text_corpus, exact, 4, "--batch-tokens", tokens)) == 0
    assert "is more than the" not in capsys.readouterr().out
    weights = [
        checkpoints.load_checkpoint(r / "checkpoints" / "step-0000004.pt")["model"]
        for r in (run, exact)
    ]
    for name, value in weights[0].items():
        assert torch.equal(value, weights[1][name]), name
    # batches of one shape: rows for the training data at most, not for 10**20 tokens
    packed = tmp_path / "packed"
    assert train.main(train_argv(text_corpus, packed, 2, *huge, "--pack")) == 0
    assert capped.search(capsys.readouterr().out)[1] == whole


def test_a_text_corpus_may_gzip_one_language_and_not_the_other(text_corpus, tmp_path):
    import gzip

    for split in ("train", "valid", "test"):
        shutil.copy(text_corpus / f"{split}.en", tmp_path)
        data = (text_corpus / f"{split}.de").read_bytes()
        (tmp_path / f"{split}.de.gz").write_bytes(gzip.compress(data))
    pairs = corpora.load_pairs("text", "train", "en", "de", tmp_path)
    assert pairs == corpora.load_pairs("text", "train", "en", "de", text_corpus)


def test_empty_target_lines_are_not_blamed_on_the_length_limit(
    text_corpus, tmp_path, capsys
):
    for split in ("train", "valid", "test"):
        shutil.copy(text_corpus / f"{split}.en", tmp_path)
        lines = (text_corpus / f"{split}.de").read_text().count("\n")
        (tmp_path / f"{split}.de").write_text("\n" * lines)
    assert train.main(train_argv(tmp_path, tmp_path / "run", 2)) == 2
    err = one_line_error(capsys, "each pair has an empty side")
    assert "--max-sentence-tokens" not in err


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_full_standard_output_is_one_line_and_status_2(run, text_corpus, unbuffered):
    # /dev/full takes nothing: every write fails as on a full disk
    command = [*TRANSLATE, "--run", str(run), "-i", str(text_corpus / "train.en")]
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*command, "--beam-size", "1", "--no-progress"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": unbuffered},
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "error: cannot write standard output: No space left on device"
    )
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_reader_that_goes_away_is_status_141_and_quiet(run, unbuffered):
    bundled = subprocess.Popen(
        [*BUNDLE, "--run", str(run), "-o", "/dev/stdout"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": unbuffered},
    )
    assert bundled.stdout.read(10)
    bundled.stdout.close()  # as `head -c 10` does
    assert bundled.wait(timeout=HANG) == 141
    assert bundled.stderr.read() == b""


def test_an_endless_or_binary_input_is_refused_at_its_first_chunk(run, capsys):
    assert translate.main(["--run", str(run), "-i", "/dev/zero", "--no-progress"]) == 2
    one_line_error(capsys, "/dev/zero holds NUL bytes: it is not a text file")


def test_a_full_device_is_not_called_a_full_disk(run, text_corpus):
    # a device is no -o, but standard output may be sent to one
    argv = ["--run", str(run), "-i", str(text_corpus / "test.en"), "--no-progress"]
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [*TRANSLATE, *argv, "--beam-size", "1", "-o", "/dev/stdout"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert done.returncode == 2, done.stderr
    err = done.stderr.splitlines()[-1]
    assert err == "error: cannot write standard output: No space left on device"
    assert "free" not in err


def test_a_closed_standard_output_given_as_dev_stdout_is_named_as_closed(
    run, text_corpus
):
    done = subprocess.run(
        [*TRANSLATE, "--run", str(run), "-i", str(text_corpus / "test.en")]
        + ["-o", "/dev/stdout"],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),  # as `>&-` does
    )
    assert done.returncode == 2
    assert done.stderr == "error: cannot write /dev/stdout: standard output is closed\n"


def test_output_paths_of_the_wrong_kind_are_refused_before_the_work(
    run, tmp_path, capsys
):
    pytest.importorskip("ctranslate2")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep")
    assert bundle.main(["--run", str(run), "--ct2", str(a_file)]) == 2
    one_line_error(capsys, "notes.txt is a file; --ct2 writes a folder")
    assert a_file.read_text() == "keep"
    from annotated_transformer import benchmark

    argv = ["decode", "--random-weights", "--limit", "2", "--no-progress"]
    assert benchmark.main([*argv, "-o", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert out.err == f"error: {tmp_path} is a folder; give the file to write with -o\n"
    assert out.out == ""  # nothing was timed


def test_stored_weights_that_are_not_numbers_or_no_sentence_are_named(tmp_path, capsys):
    stored = stored_attention(tmp_path)
    with np.load(stored) as arrays:
        nan, none = dict(arrays), {"meta": arrays["meta"]}
    nan["0_cross"] = np.full((1, 1, 2, 2), np.nan, np.float16)
    meta = json.loads(str(none["meta"]))
    none["meta"] = np.array(json.dumps({**meta, "sentences": []}))
    for name, arrays, message in (
        ("nan.npz", nan, "sentence 1's cross weights are not all finite numbers"),
        ("none.npz", none, "none.npz holds no sentence; capture some with --save"),
    ):
        np.savez(tmp_path / name, **arrays)
        argv = ["--stored", str(tmp_path / name), "-o", str(tmp_path / "f.png")]
        assert visualize.main(argv) == 2
        one_line_error(capsys, message)


def test_a_band_of_a_run_twice_of_a_diverged_run_or_a_list_is_named(
    run, tmp_path, capsys
):
    from annotated_transformer import band

    out = ["-o", str(tmp_path / "band.json")]
    assert band.main([str(run), str(run), *out]) == 2
    one_line_error(capsys, "a run folder is given twice")
    with (run / "metrics.jsonl").open("a") as log:
        log.write('{"step": 9, "valid_nll": NaN}\n')
    assert band.main([str(run), *out]) == 2
    one_line_error(capsys, "not a finite number")
    (run / "results.json").write_text("[]")
    assert band.main([str(run), *out]) == 2
    err = one_line_error(capsys, "results.json is not what a finished run writes (")
    assert "(no " not in err
    assert not (tmp_path / "band.json").exists()


def test_a_warning_is_one_line_without_its_source_line(tmp_path, capsys):
    # labels of a script the plotting font lacks: matplotlib warns of each glyph
    stored = stored_attention(tmp_path, first_label="漢字")
    assert visualize.main(["--stored", str(stored), "-o", str(tmp_path / "f.png")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("warning: Glyph ") for line in err), err


def test_a_lost_process_names_gloos_cause_not_its_source_file():
    from annotated_transformer.running import processes

    gloo = (
        "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by "
        "peer [127.0.0.1]:5678"
    )
    with pytest.raises(ValueError) as raised:
        with processes.all_answering(world=2):
            raise RuntimeError(gloo)
    assert "(Connection closed by peer [127.0.0.1]:5678)" in str(raised.value)
    assert "pair.cc" not in str(raised.value)


def test_the_figure_script_leaves_no_store_and_asks_for_the_sample(tmp_path):
    script = Path(__file__).resolve().parents[1] / "tools" / "figure_gpu.sh"
    usage = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stdout == ""
    assert "figure_gpu.sh DATA STORE" in usage.stderr
    store = tmp_path / "store"
    done = subprocess.run(
        ["bash", str(script), str(tmp_path / "no-data"), str(store), "--device", "cpu"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert done.returncode == 2 and not store.exists()
    assert "europarl-v7-sample/ (its first 20,000 pairs)" in done.stderr


def test_a_failed_test_set_download_leaves_no_lock_in_sacrebleus_cache(
    tmp_path, monkeypatch
):
    import sacrebleu.utils

    def offline(test_set, pair):
        raw = tmp_path / "cache" / test_set / "raw"
        raw.mkdir(parents=True)
        (raw / "wmt14.tgz.lock").write_text("")
        raise OSError("Name or service not known")

    monkeypatch.setattr(sacrebleu.utils, "SACREBLEU_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sacrebleu.utils, "get_source_file", offline)
    with pytest.raises(OSError, match="service not known"):
        corpora._fetch_sacrebleu("wmt14", "en", "de")
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("planted", ["eval", "eval/results.jsonl"])
def test_a_link_planted_after_the_look_is_refused_at_every_level(tmp_path, planted):
    """``open_own`` walks from the run folder with O_NOFOLLOW: a folder or file swapped
    for a link after ``links_in`` looked is refused, and the link's target kept."""
    from annotated_transformer.running.files import WriteError, open_own

    run, victim = tmp_path / "run", tmp_path / "victim"
    (run / "eval").mkdir(parents=True)
    victim.mkdir()
    (victim / "results.jsonl").write_text("theirs\n")
    link = run / planted
    if link.is_dir():
        link.rmdir()
    link.symlink_to(victim if planted == "eval" else victim / "results.jsonl")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    with pytest.raises(WriteError, match=f"{link} is a symbolic link"):
        open_own(run / "eval" / "results.jsonl", flags, root=run)
    assert (victim / "results.jsonl").read_text() == "theirs\n"
    assert sorted(p.name for p in victim.iterdir()) == ["results.jsonl"]
