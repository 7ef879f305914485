"""The translate and evaluate commands, checkpoint averaging and the paper's tokenized
BLEU."""

import argparse
import dataclasses
import importlib
import io
import json
import sys
from pathlib import Path

import pytest
import torch
from conftest import load_tool, tiny_run

from annotated_transformer import (
    bundle,
    cli,
    config,
    decoding,
    evaluate,
    model,
    train,
    translate,
    visualize,
)
from annotated_transformer.cli import split_lines
from annotated_transformer.running.checkpoints import (
    average_checkpoints,
    checkpoints,
    load_checkpoint,
)
from annotated_transformer.running.loading import load_model
from annotated_transformer.speed import choice
from annotated_transformer.text.scoring import scores, split_compounds

CPU = choice.fast_paths("cpu")  # what the commands decide on this machine's CPU


@pytest.fixture(scope="module")
def trained_run(text_corpus, tmp_path_factory):
    """A tiny model trained for 12 updates on the synthetic corpus, with checkpoints
    every 4."""
    out_dir = tmp_path_factory.mktemp("run") / "tiny"
    schedule = ["--save-every", "4", "--max-steps", "12", "--average", "2"]
    assert train.main(tiny_run(text_corpus, out_dir, *schedule, "--no-progress")) == 0
    return out_dir


def test_training_ends_with_beam_search_on_averaged_checkpoints(
    trained_run, text_corpus, tmp_path
):
    import sacrebleu

    results = json.loads((trained_run / "results.json").read_text())
    assert results["checkpoints"] == ["step-0000008.pt", "step-0000012.pt"]
    hypotheses = (trained_run / "test.hyp").read_text(encoding="utf-8").splitlines()
    references = (text_corpus / "test.de").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == len(references) == results["sentences"]
    # scored by sacreBLEU
    assert results["bleu"] == round(
        sacrebleu.corpus_bleu(hypotheses, [references]).score, 2
    )
    assert results["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    # the translations are beam 4, alpha 0.6 on the mean of the last two checkpoints
    again = tmp_path / "again.de"
    argv = [
        "--run",
        str(trained_run),
        "-i",
        str(text_corpus / "test.en"),
        "-o",
        str(again),
        "--average",
        "2",
        "--beam",
        "4",
        "--alpha",
        "0.6",
        "--no-progress",
    ]
    assert translate.main(argv) == 0
    assert again.read_text(encoding="utf-8").splitlines() == hypotheses


def test_average_is_the_elementwise_mean(trained_run):
    paths = checkpoints(trained_run)[-3:]
    mean = average_checkpoints(paths)
    weights = [load_checkpoint(p)["model"] for p in paths]
    for name in ("encoder.layers.0.feed_forward.w_1.weight", "src_embed.0.lut.weight"):
        assert torch.allclose(mean[name], sum(w[name] for w in weights) / 3, atol=1e-7)
    # the checkpoints do differ
    assert not torch.equal(weights[0][name], weights[-1][name])


def test_translate_reads_stdin_and_keeps_line_count(trained_run, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("the red cat runs\n\na dog sleeps\n"))
    assert translate.main(["--run", str(trained_run), "--no-progress"]) == 0
    lines = capsys.readouterr().out.split("\n")
    # three translations, the empty one kept
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""


def test_a_run_records_its_training_compute_as_a_replay_of_its_batches_counts_it(
    trained_run, text_corpus
):
    """results.json and the last metric line hold the FLOPs of the updates made;
    planning the same batches again and counting them with the book's formula (the tool
    that did this for older runs) agrees."""
    replay = load_tool("replay_compute")
    results = json.loads((trained_run / "results.json").read_text())
    last = [
        r
        for r in map(
            json.loads, (trained_run / "metrics.jsonl").read_text().splitlines()
        )
        if "train_flops" in r
    ]
    assert last[-1]["step"] == results["updates"] == 12
    assert results["train_flops"] == pytest.approx(last[-1]["train_flops"], rel=1e-3)
    # the compute after each logged update
    replayed = replay.replay(trained_run, text_corpus)
    assert set(replayed) == {r["step"] for r in last}
    assert all(
        replayed[r["step"]] == pytest.approx(r["train_flops"], rel=1e-3) for r in last
    )


def test_commands_average_as_the_run_did(trained_run, capsys):
    assert (
        evaluate.main(["--run", str(trained_run), "--limit", "3", "--no-progress"]) == 0
    )
    # the run's --average 2
    assert "step-0000008.pt, step-0000012.pt" in capsys.readouterr().err
    logged = json.loads(
        (trained_run / "eval" / "results.jsonl").read_text().splitlines()[-1]
    )
    assert logged["checkpoints"] == ["step-0000008.pt", "step-0000012.pt"]


def test_translate_files_with_averaging(trained_run, tmp_path, text_corpus):
    out = tmp_path / "out.de"
    argv = [
        "--run",
        str(trained_run),
        "--input",
        str(text_corpus / "test.en"),
        "--output",
        str(out),
        "--average",
        "3",
        "--beam",
        "2",
        "--no-progress",
    ]
    assert translate.main(argv) == 0
    assert len(out.read_text().splitlines()) == len(
        (text_corpus / "test.en").read_text().splitlines()
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--average", "9"], "cannot average the last 9 checkpoints"),
        (["--average", "0"], "--average must be at least 1"),
        (["--input", "/nonexistent.txt"], "no input file"),
        (["--beam", "0"], "--beam-size must be an integer of at least 1, got 0"),
        (["--max-extra", "-1"], "--max-extra must be an integer of at least 0, got -1"),
        (["--threads", "-1"], "--threads must be at least 0 (0: chosen), got -1"),
    ],
)
def test_translate_bad_input_is_a_clear_error(trained_run, capsys, argv, message):
    assert translate.main(["--run", str(trained_run), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def path_options(parser, before: tuple = ()):
    """(the arguments that reach it, the option) for every option of ``parser`` and of
    its subcommands that names a file or folder, and the options of a type ``Path``
    itself (which would read an empty name as the current folder)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from path_options(sub, (*before, name))
        elif action.type is Path or action.type is cli.path_argument:
            yield before, action
        elif isinstance(action.type, cli.SettingValue):
            if action.type.name in cli.PATH_SETTINGS:
                yield before, action


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_every_option_that_names_a_file_refuses_an_empty_name(name, capsys):
    parser = importlib.import_module(f"annotated_transformer.{name}").build_parser()
    found = list(path_options(parser))
    assert found
    for before, action in found:
        assert action.type is not Path, action.option_strings
        given = [*before, *action.option_strings[:1], ""]
        with pytest.raises(SystemExit) as stopped:
            parser.parse_args(given)
        assert stopped.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].endswith(
            ": expected the name of a file or folder, got an empty one"
        ), (given, err)


def test_missing_run_says_how_to_train(tmp_path, capsys):
    assert evaluate.main(["--run", str(tmp_path / "none")]) == 2
    assert (
        "train first with python -m annotated_transformer.train"
        in capsys.readouterr().err
    )


def test_evaluate_scores_its_own_translations_with_sacrebleu(
    trained_run, text_corpus, capsys
):
    import sacrebleu

    argv = [
        "--run",
        str(trained_run),
        "--beam",
        "1",
        "--limit",
        "10",
        "--average",
        "1",
        "--no-progress",
    ]
    assert evaluate.main(argv) == 0
    out = capsys.readouterr().out
    assert "signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" in out
    logged = json.loads(
        (trained_run / "eval" / "results.jsonl").read_text().splitlines()[-1]
    )
    # --limit scores part of the set, and files it under a name that says so
    assert (
        logged["test_set"] == "text-test.first-10"
        and logged["sentences"] == 10
        and logged["beam"] == 1
    )
    hypotheses = (
        (trained_run / "eval" / "text-test.first-10.beam1.alpha0.6.avg1.hyp")
        .read_text()
        .splitlines()
    )
    references = (text_corpus / "test.de").read_text(encoding="utf-8").splitlines()[:10]
    bleu, chrf = (
        sacrebleu.corpus_bleu(hypotheses, [references]),
        sacrebleu.corpus_chrf(hypotheses, [references]),
    )
    assert (logged["bleu"], logged["chrf"]) == (
        round(bleu.score, 2),
        round(chrf.score, 2),
    )
    assert f"chrF2 = {chrf.score:.2f}" in out
    # the hypotheses are greedy translations of the first ten sources, as translate
    # makes them
    sources = (text_corpus / "test.en").read_text(encoding="utf-8").splitlines()[:10]
    net, sp, _ = load_model(checkpoints(trained_run)[-1:], "cpu", CPU)
    assert hypotheses == decoding.translate_sentences(
        net, sp, sources, settings=config.DecodeConfig(beam_size=1)
    )


def test_newstest2014_offline(shared_data, trained_run, capsys):
    argv = [
        "--run",
        str(trained_run),
        "--test-set",
        "newstest2014",
        "--data-dir",
        str(shared_data),
        "--limit",
        "5",
        "--beam",
        "1",
        "--max-extra",
        "5",
        "--no-progress",
    ]
    assert evaluate.main(argv) == 0
    assert "newstest2014.first-5 en->de" in capsys.readouterr().err


def test_compound_splitting_and_tokenized_bleu():
    assert (
        split_compounds("Die Rock-Musik ist laut .")
        == "Die Rock ##AT##-##AT## Musik ist laut ."
    )
    result = scores(["Das ist Rock-Musik."], ["Das ist Rock-Pop."], "de")
    # Detokenized, 13a splits off the period only: "Rock-Musik" and "Rock-Pop" are
    # different words.
    assert result["bleu"].precisions[0] == pytest.approx(100 * 3 / 4)
    # Tokenized with compounds split, three of the four compound tokens match.
    assert result["tokenized_bleu"].precisions[0] == pytest.approx(100 * 5 / 6)


def _translate_stdin(trained_run, text, monkeypatch, capsys, *argv):
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert translate.main(["--run", str(trained_run), "--beam-size", "1", *argv]) == 0
    return capsys.readouterr()


def test_translate_keeps_one_line_per_line_whatever_it_contains(
    trained_run, monkeypatch, capsys
):
    # Python's str.splitlines() would break each of these lines in two: U+2028, U+0085,
    # a form feed, U+2029 and a carriage return. Only "\n" ends a line; the empty line
    # and the "\r\n" ending are kept too.
    text = (
        "the cat\u2028runs\na dog\x85sleeps\nthe bird\x0csings\n\nthe "
        "man\u2029eats\r\nthe horse\rjumps\n"
    )
    out = _translate_stdin(trained_run, text, monkeypatch, capsys, "--no-progress").out
    assert out.count("\n") == text.count("\n") == 6
    # the empty line is translated to an empty line, in its place
    assert out.split("\n")[3] == ""
    assert split_lines(text)[0] == "the cat runs"


def test_translate_empty_input_writes_nothing(trained_run, monkeypatch, capsys):
    # progress bars on
    captured = _translate_stdin(trained_run, "", monkeypatch, capsys)
    assert captured.out == "" and "translating (beam" not in captured.err


def test_translate_cuts_a_line_too_long_for_the_model_and_says_which(
    trained_run, monkeypatch, capsys
):
    # --max-extra 1000 leaves 1024 - 1000 - 2 = 22 source tokens; the second line has
    # many more.
    text = "the cat runs\n" + "the red dog sees a small bird " * 10 + "\na man sleeps\n"
    captured = _translate_stdin(
        trained_run, text, monkeypatch, capsys, "--max-extra", "1000", "--no-progress"
    )
    assert captured.out.count("\n") == 3
    assert (
        "warning: line 2 has" in captured.err
        and "line 1 " not in captured.err
        and "line 3" not in captured.err
    )


def test_translate_interactive_answers_each_line(trained_run, monkeypatch, capsys):
    captured = _translate_stdin(
        trained_run,
        "the cat runs\na dog sleeps\n",
        monkeypatch,
        capsys,
        "--interactive",
        "--no-progress",
    )
    assert captured.out.count("\n") == 2 and "Ctrl-D" in captured.err


def test_a_bundle_is_one_file_that_translates_as_the_run_does(
    trained_run, tmp_path, text_corpus, capsys
):
    shared = tmp_path / "shared" / "tiny.pt"
    assert bundle.main(["--run", str(trained_run), "-o", str(shared)]) == 0
    # averaged as the run was scored
    assert "step-0000008.pt, step-0000012.pt" in capsys.readouterr().out
    outputs = []
    for weights in (["--run", str(trained_run)], ["--checkpoint", str(shared)]):
        out = tmp_path / f"out{len(outputs)}.de"
        assert (
            translate.main(
                [
                    *weights,
                    "-i",
                    str(text_corpus / "test.en"),
                    "-o",
                    str(out),
                    "--no-progress",
                ]
            )
            == 0
        )
        outputs.append(out.read_text())
    assert outputs[0] == outputs[1] and outputs[0].count("\n") == 20
    # Without the package's loaders: torch.load with weights_only and the model builder,
    # as docs/guide.md shows.
    import sentencepiece as spm

    f = torch.load(shared, weights_only=True)
    net = model.make_model(config.TransformerConfig(**f["settings"]["model"]))
    net.load_state_dict(f["model"])
    sp = spm.SentencePieceProcessor(model_proto=f["sentencepiece"].numpy().tobytes())
    first = (text_corpus / "test.en").read_text().splitlines()[:3]
    assert (
        decoding.translate_sentences(net.eval(), sp, first)
        == outputs[0].splitlines()[:3]
    )
    assert "optimizer" not in f


@pytest.mark.parametrize("beam_size", [1, 4])
def test_decoding_with_the_fused_attention_kernel_writes_the_same_translations(
    trained_run, text_corpus, beam_size
):
    """The one fast path decoding keeps is a library's: PyTorch's fused attention kernel
    (``fused``, on by itself on a GPU). A trained model decodes the same tokens with it
    as with eq. 1 written out, greedily and with a beam."""
    from annotated_transformer.attention import MultiHeadedAttention
    from annotated_transformer.running.loading import load_model, run_weights

    net, sp, _ = load_model(run_weights(trained_run), "cpu", CPU)
    sentences = (text_corpus / "test.en").read_text(encoding="utf-8").splitlines()
    settings = config.DecodeConfig(beam_size=beam_size)
    outputs = []
    for fused in (False, True):
        for module in net.modules():
            if isinstance(module, MultiHeadedAttention):
                module.fused = fused
        outputs.append(
            decoding.translate_sentences(net, sp, sentences, settings=settings)
        )
    assert outputs[0] == outputs[1] and len(outputs[0]) == 20


def test_the_guides_ctranslate2_snippet_translates_a_bundled_folder(
    trained_run, tmp_path, capsys
):
    """``bundle --ct2 DIR`` writes everything a server needs: the snippet of
    docs/guide.md, which imports only ctranslate2 and sentencepiece, translates with the
    folder."""
    import re

    folder = tmp_path / "served"
    assert bundle.main(["--run", str(trained_run), "--ct2", str(folder)]) == 0
    guide = (Path(__file__).parents[1] / "docs/guide.md").read_text(encoding="utf-8")
    snippet = re.search(r"<!-- ct2-snippet -->\n```python\n(.*?)```", guide, re.S)[1]
    assert "annotated_transformer" not in snippet
    capsys.readouterr()
    exec(snippet.replace('"DIR', f'"{folder}'), {})
    printed = eval(capsys.readouterr().out)
    assert len(printed) == 2 and all(isinstance(t, str) for t in printed)
    # Greedily, CTranslate2 and the book's decoding write the same translations.
    greedy = snippet.replace("beam_size=4, length_penalty=0.6", "beam_size=1")
    assert greedy != snippet
    exec(greedy.replace('"DIR', f'"{folder}'), {})
    served = eval(capsys.readouterr().out)
    from annotated_transformer.running.loading import load_model, run_weights

    net, sp, _ = load_model(run_weights(trained_run), "cpu", CPU)
    sentences = ["A man is riding a bicycle.", "Two dogs play in the snow."]
    assert sentences[0] in snippet and sentences[1] in snippet
    greedy_settings = config.DecodeConfig(beam_size=1)
    ours = decoding.translate_sentences(net, sp, sentences, settings=greedy_settings)
    # This tiny model rarely ends a sentence: CTranslate2 writes up to 256 tokens, ours
    # each sentence's length + 50, so ours is where CTranslate2's output begins.
    assert all(theirs.startswith(mine) for theirs, mine in zip(served, ours))
    assert min(map(len, ours)) > 20


def test_a_decoding_benchmark_worker_decodes_as_translate_does(
    trained_run, tmp_path, text_corpus
):
    """``benchmark decode`` runs each engine in a worker process that gets its job as
    JSON: the worker must decode with the settings it was given, as ``translate`` would
    with the same options."""
    from annotated_transformer.measure.decoding import decode_worker

    shared = tmp_path / "tiny.pt"
    assert bundle.main(["--run", str(trained_run), "-o", str(shared)]) == 0
    sources = (text_corpus / "test.en").read_text(encoding="utf-8").splitlines()[:6]
    (tmp_path / "sentences.txt").write_text("\n".join(sources), encoding="utf-8")
    settings = config.DecodeConfig(
        beam_size=3, alpha=0.2, max_extra=4, eval_batch_tokens=40
    )
    job = {
        "engine": "ours",
        "settings": dataclasses.asdict(settings),
        "threads": 1,
        "device": "cpu",
        "model_file": str(shared),
        "sentences": str(tmp_path / "sentences.txt"),
    }
    # as the benchmark writes
    requests = ['{"profile": true}\n', '{"profile": false, "step_batches": [1, 3]}\n']
    # answers travel as JSON
    out, again = json.loads(json.dumps(list(decode_worker(job, requests))))
    translations = tmp_path / "translate.de"
    assert (
        translate.main(
            [
                "--checkpoint",
                str(shared),
                "-i",
                str(tmp_path / "sentences.txt"),
                "-o",
                str(translations),
                "--beam",
                "3",
                "--alpha",
                "0.2",
                "--max-extra",
                "4",
                "--eval-batch-tokens",
                "40",
                "--no-progress",
            ]
        )
        == 0
    )
    _, sp, _ = load_model([shared], "cpu", CPU)
    assert [sp.decode(ids) for ids in out["outputs"]] == translations.read_text(
        encoding="utf-8"
    ).splitlines()
    # the profiled pass: its largest operators, then all of them
    *top, every = out["profile"]
    assert (
        every["op"] == "every operator"
        and 0 < sum(p["ms_per_step"] for p in top) <= every["ms_per_step"]
    )
    assert len(top) == 12 and every["calls"] >= sum(p["calls"] for p in top) > 0
    assert out["matrix_flops"] > 0 and out["steps"] > 0
    # A second request decodes again, the same outputs, without profiling.
    assert again["outputs"] == out["outputs"]
    assert not {"profile", "steps", "matrix_flops"} & set(again)
    # step costs only when asked for
    assert out["step_ms"] == {} and list(again["step_ms"]) == ["1", "3"]


def test_a_checkpoint_out_of_its_run_folder_says_what_is_missing(
    trained_run, tmp_path, capsys
):
    alone = tmp_path / "step-0000012.pt"
    alone.write_bytes((trained_run / "checkpoints" / "step-0000012.pt").read_bytes())
    assert translate.main(["--checkpoint", str(alone), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert (
        "needs its run folder" in err
        and "annotated_transformer.bundle" in err
        and "Traceback" not in err
    )


def test_evaluate_accepts_sacrebleu_names(shared_data, trained_run, capsys):
    argv = [
        "--run",
        str(trained_run),
        "--test-set",
        "wmt14/full",
        "--data-dir",
        str(shared_data),
        "--limit",
        "2",
        "--beam",
        "1",
        "--max-extra",
        "2",
        "--no-progress",
    ]
    assert evaluate.main(argv) == 0
    assert "newstest2014.first-2 en->de: 2 sentences" in capsys.readouterr().err


def test_interactive_translation_survives_a_line_that_is_not_utf8(
    trained_run, monkeypatch, capsys
):
    typed = io.TextIOWrapper(
        io.BytesIO(b"A dog runs.\n\xff\xfe broken\nA cat sits.\n"), encoding="utf-8"
    )
    monkeypatch.setattr(sys, "stdin", typed)
    assert (
        translate.main(
            ["--run", str(trained_run), "--interactive", "--beam", "1", "--no-progress"]
        )
        == 0
    )
    out, err = capsys.readouterr()
    # one output line for each line in: the broken one gets an empty line
    lines = out.splitlines()
    assert len(lines) == 3 and lines[1] == "" and lines[0] and lines[2]
    assert "that line is not UTF-8 text" in err and "Traceback" not in err


def test_translate_and_bundle_refuse_an_output_they_cannot_write_before_any_work(
    trained_run, tmp_path, capsys
):
    # root too
    unwritable = (
        (Path("/proc/nope/x.txt"), "cannot write"),
        (Path("/proc/x.pt"), "cannot write"),
    )
    for target, message in ((tmp_path, "is a folder"), *unwritable):
        assert (
            translate.main(
                ["--run", str(trained_run), "-o", str(target), "--no-progress"]
            )
            == 2
        )
        err = capsys.readouterr().err
        assert message in err and "translating" not in err and "Traceback" not in err
        assert bundle.main(["--run", str(trained_run), "-o", str(target)]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err


def test_the_explorer_of_an_input_file_holds_every_sentence(trained_run, tmp_path):
    sentences, page = tmp_path / "in.txt", tmp_path / "page.html"
    sentences.write_text("the red cat runs\na dog sleeps\n")
    assert (
        visualize.main(
            [
                "--run",
                str(trained_run),
                "-i",
                str(sentences),
                "--view",
                "explorer",
                "-o",
                str(page),
                "--beam",
                "1",
            ]
        )
        == 0
    )
    text = page.read_text()
    assert "the red cat runs" in text and "a dog sleeps" in text


def test_one_function_chooses_the_weights_of_a_run(trained_run):
    from annotated_transformer.running.loading import run_weights

    # its --average 2
    assert [p.name for p in run_weights(trained_run)] == [
        "step-0000008.pt",
        "step-0000012.pt",
    ]
    assert [p.name for p in run_weights(trained_run, average=3)] == [
        "step-0000004.pt",
        "step-0000008.pt",
        "step-0000012.pt",
    ]
    assert [p.name for p in run_weights(trained_run, average=1)] == ["step-0000012.pt"]
    named = checkpoints(trained_run)[0]
    assert run_weights(trained_run, named) == [named]
    with pytest.raises(
        ValueError, match="one named --checkpoint has nothing to average"
    ):
        run_weights(trained_run, named, average=2)


MEASURED = Path(__file__).parents[1] / "book" / "measured"


@pytest.mark.parametrize(
    "folder",
    [
        p.name
        for p in sorted(MEASURED.glob("europarl-figure*"))
        if (p / "config.json").is_file()
    ]
    + ["multi30k-figure"],
)
def test_a_stored_runs_readme_command_gives_its_stored_settings(folder, capsys):
    """The command in the README of a run that chapter 15 or appendix F cites resolves
    to the settings the run stored (fields that have been added to the settings since
    are left out; so are the folders, which differ on every machine)."""
    import re
    import shlex

    from annotated_transformer import train

    stored = MEASURED / folder
    readme = (stored / "README.md").read_text()
    command = re.search(
        r"python -m annotated_transformer\.train (.*?)\n\n", readme, re.S
    ).group(1)
    argv = shlex.split(command.replace("\\\n", " "))
    assert train.main([*argv, "--print-config"]) == 0
    resolved = json.loads(capsys.readouterr().out)
    config = json.loads((stored / "config.json").read_text())
    for part in ("model", "run"):
        shared = (set(config[part]) & set(resolved[part])) - {"data_dir", "out_dir"}
        assert {k: resolved[part][k] for k in shared} == {
            k: config[part][k] for k in shared
        }
