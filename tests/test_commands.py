"""The translate and evaluate commands, checkpoint averaging and the paper's tokenized BLEU."""

import io
import json
import sys

import pytest
import torch

from annotated_transformer import evaluate, train, translate
from annotated_transformer.checkpoints import average_checkpoints, checkpoints, load_checkpoint
from annotated_transformer.evaluate import scores, split_compounds


@pytest.fixture(scope="module")
def trained_run(text_corpus, tmp_path_factory):
    """A tiny model trained for 12 updates on the synthetic corpus, with checkpoints every 4."""
    out_dir = tmp_path_factory.mktemp("run") / "tiny"
    argv = ["--corpus", "text", "--data-dir", str(text_corpus), "--out-dir", str(out_dir), "--vocab-size", "80",
            "--n-layers", "1", "--d-model", "32", "--d-ff", "64", "--n-heads", "2", "--batch-tokens", "300",
            "--warmup", "10", "--valid-every", "1000", "--save-every", "4", "--max-steps", "12",
            "--average", "2", "--no-progress"]
    assert train.main(argv) == 0
    return out_dir


def test_training_ends_with_beam_search_on_averaged_checkpoints(trained_run):
    results = json.loads((trained_run / "results.json").read_text())
    assert results["beam"] == 4 and results["alpha"] == 0.6
    assert results["checkpoints"] == ["step-0000008.pt", "step-0000012.pt"]
    assert results["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")


def test_average_is_the_elementwise_mean(trained_run):
    paths = checkpoints(trained_run)[-3:]
    mean = average_checkpoints(paths)
    weights = [load_checkpoint(p)["model"] for p in paths]
    for name in ("encoder.layers.0.feed_forward.w_1.weight", "src_embed.0.lut.weight"):
        assert torch.allclose(mean[name], sum(w[name] for w in weights) / 3, atol=1e-7)
    assert not torch.equal(weights[0][name], weights[-1][name])  # the checkpoints do differ


def test_translate_reads_stdin_and_keeps_line_count(trained_run, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("the red cat runs\n\na dog sleeps\n"))
    assert translate.main(["--run", str(trained_run), "--no-progress"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""  # three translations, the empty one kept


def test_commands_average_as_the_run_did(trained_run, capsys):
    assert evaluate.main(["--run", str(trained_run), "--limit", "3", "--no-progress"]) == 0
    assert "step-0000008.pt, step-0000012.pt" in capsys.readouterr().err  # the run's --average 2
    logged = json.loads((trained_run / "eval" / "results.jsonl").read_text().splitlines()[-1])
    assert logged["checkpoints"] == ["step-0000008.pt", "step-0000012.pt"]


def test_translate_files_with_averaging(trained_run, tmp_path, text_corpus):
    out = tmp_path / "out.de"
    argv = ["--run", str(trained_run), "--input", str(text_corpus / "test.en"), "--output", str(out),
            "--average", "3", "--beam", "2", "--no-progress"]
    assert translate.main(argv) == 0
    assert len(out.read_text().splitlines()) == len((text_corpus / "test.en").read_text().splitlines())


@pytest.mark.parametrize("argv, message", [
    (["--average", "9"], "cannot average the last 9 checkpoints"),
    (["--input", "/nonexistent.txt"], "no input file"),
    (["--beam", "0"], "--beam and --batch-tokens must be positive"),
])
def test_translate_bad_input_is_a_clear_error(trained_run, capsys, argv, message):
    assert translate.main(["--run", str(trained_run), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_run_says_how_to_train(tmp_path, capsys):
    assert evaluate.main(["--run", str(tmp_path / "none")]) == 2
    assert "train first with python -m annotated_transformer.train" in capsys.readouterr().err


def test_evaluate_prints_signatures_and_logs_results(trained_run, capsys):
    argv = ["--run", str(trained_run), "--beam", "1", "--limit", "10", "--average", "1", "--no-progress"]
    assert evaluate.main(argv) == 0
    out = capsys.readouterr().out
    assert "signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" in out
    assert "chrF2 = " in out and "tokenized BLEU" in out
    logged = json.loads((trained_run / "eval" / "results.jsonl").read_text().splitlines()[-1])
    assert logged["test_set"] == "text-test" and logged["sentences"] == 10 and logged["beam"] == 1
    assert len((trained_run / "eval" / "text-test.beam1.alpha0.6.avg1.hyp").read_text().splitlines()) == 10


def test_newstest2014_offline(shared_data, trained_run, capsys):
    argv = ["--run", str(trained_run), "--test-set", "newstest2014", "--data-dir", str(shared_data),
            "--limit", "5", "--beam", "1", "--max-extra", "5", "--no-progress"]
    assert evaluate.main(argv) == 0
    assert "newstest2014 en->de" in capsys.readouterr().err


def test_compound_splitting_and_tokenized_bleu():
    assert split_compounds("Die Rock-Musik ist laut .") == "Die Rock ##AT##-##AT## Musik ist laut ."
    result = scores(["Das ist Rock-Musik."], ["Das ist Rock-Pop."], "de")
    # Detokenized, 13a splits off the period only: "Rock-Musik" and "Rock-Pop" are different words.
    assert result["bleu"].precisions[0] == pytest.approx(100 * 3 / 4)
    # Tokenized with compounds split, three of the four compound tokens match.
    assert result["tokenized_bleu"].precisions[0] == pytest.approx(100 * 5 / 6)
