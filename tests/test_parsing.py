"""Treebank reading, linearization, repair and labeled bracket F1, against hand-counted
examples, and the parsing command end to end."""

import json

import pytest

from annotated_transformer.parsing import (
    bracket_scores,
    clean,
    delinearize,
    linearize,
    parse_bracketed,
    tags,
    tree_words,
)

GOLD = "( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (-NONE- *T*-1)) (. .)) )"


def _gold():
    return clean(parse_bracketed(GOLD)[0])


def test_cleaning_strips_function_tags_empty_elements_and_the_outer_bracket():
    tree = _gold()
    assert tree.label == "S"
    assert [c.label for c in tree.children] == ["NP", "VP", "."]
    assert tree_words(tree) == ["The", "cat", "sat", "."] and tags(tree) == [
        "DT",
        "NN",
        "VBD",
        ".",
    ]
    assert linearize(tree) == "(S (NP The cat )NP (VP sat )VP . )S"
    assert linearize(tree, "XX") == "(S (NP XX XX )NP (VP XX )VP XX )S"


def test_f1_against_a_hand_count():
    # gold brackets without the final period: S(0,3) NP(0,2) VP(2,3)
    # predicted: S(0,3) NP(0,1) VP(1,3); only S matches: P = R = F1 = 1/3
    predicted, repaired = delinearize("(S (NP XX )NP (VP XX XX )VP XX )S", 4)
    assert not repaired
    scores = bracket_scores([_gold()], [predicted])
    assert (scores["matched"], scores["gold"], scores["predicted"]) == (1, 3, 3)
    assert scores["f1"] == pytest.approx(1 / 3)
    # an output with the words reads as one with XX in their place
    for placeholder in (None, "XX"):
        perfect, repaired = delinearize(linearize(_gold(), placeholder), 4)
        assert not repaired and bracket_scores([_gold()], [perfect])["f1"] == 1.0


def test_f1_counts_brackets_as_a_multiset_and_treats_prt_as_advp():
    gold = clean(
        parse_bracketed("((S (NP (NP (PRP it))) (VP (VBD gave) (PRT (RP up)))))")[0]
    )
    # gold: S(0,3) NP(0,1) NP(0,1) VP(1,3) PRT=ADVP(2,3): 5 brackets
    # 4 brackets, all match
    one_np, _ = delinearize("(S (NP XX )NP (VP XX (ADVP XX )ADVP )VP )S", 3)
    scores = bracket_scores([gold], [one_np])
    assert (scores["matched"], scores["gold"], scores["predicted"]) == (4, 5, 4)
    assert scores["recall"] == pytest.approx(4 / 5) and scores["precision"] == 1.0


@pytest.mark.parametrize(
    "output, expected",
    [
        # unclosed: closed at the end
        ("(S (NP XX XX )NP (VP XX )VP XX", "(S (NP XX XX )NP (VP XX )VP XX )S"),
        # ')NP' closes S
        (
            "(S (NP XX XX )NP )NP (VP XX XX )VP )S",
            "(S (S (NP XX XX )NP )S (VP XX XX )VP )S",
        ),
        # an XX too many is dropped
        ("(S (NP XX XX XX XX XX )NP )S", "(S (NP XX XX XX XX )NP )S"),
        ("(S (NP XX )NP )S", "(S (NP XX )NP XX XX XX )S"),  # missing words are appended
        # two roots joined under S
        ("(NP XX XX )NP (VP XX XX )VP", "(S (NP XX XX )NP (VP XX XX )VP )S"),
        # an empty constituent is removed
        ("(S (NP )NP XX XX XX XX )S", "(S XX XX XX XX )S"),
    ],
)
def test_ill_formed_output_is_repaired_and_counted(output, expected):
    tree, repaired = delinearize(output, 4)
    assert repaired
    assert linearize(tree, "XX") == expected


def test_unbalanced_treebank_text_is_an_error():
    with pytest.raises(ValueError, match="unbalanced"):
        parse_bracketed("((S (NP (DT a))")


def test_a_run_folder_refuses_another_corpus(tmp_path, capsys):
    from annotated_transformer.parsing import main

    (tmp_path / "parsing.json").write_text('{"leaves": "XX", "train_fraction": 1.0}\n')
    assert main(["--run", str(tmp_path), "--no-progress"]) == 2
    assert "--leaves" in capsys.readouterr().err
    assert main(["--run", str(tmp_path), "--train-fraction", "1.5"]) == 2
    assert "--train-fraction" in capsys.readouterr().err


@pytest.mark.slow
def test_the_command_trains_parses_and_scores_what_it_stores(
    shared_data, tmp_path, capsys
):
    """parsing.main end to end on the real treebank sample: a tiny budget, two test
    sentences. The F1 it reports must be the one its stored outputs give against the
    gold trees, and a second run resumes."""
    from annotated_transformer.parsing import SPLITS, load_treebank, main

    run = tmp_path / "parse"
    argv = [
        "--run",
        str(run),
        "--data-dir",
        str(shared_data),
        "--limit",
        "2",
        "--beam",
        "2",
        "--max-extra",
        "6",
        "--no-progress",
    ]
    assert main([*argv, "--max-steps", "2"]) == 0
    result = json.loads((run / "parse-results.json").read_text())
    outputs = (run / "test.parses").read_text(encoding="utf-8").splitlines()
    trees = load_treebank(shared_data)
    gold = [t for n in SPLITS["test"] for t in trees.get(f"wsj_{n:04d}", [])][:2]
    parsed = [
        delinearize(text, len(tree_words(t)))[0] for text, t in zip(outputs, gold)
    ]
    assert result["sentences"] == len(outputs) == 2 and result["updates"] == 2
    assert result["f1"] == bracket_scores(gold, parsed)["f1"]
    assert (result["beam"], result["max_extra"]) == (2, 6)
    assert f"labeled F1 {100 * result['f1']:.2f}" in capsys.readouterr().out
    assert main([*argv, "--max-steps", "3"]) == 0  # the same run, one update further
    assert json.loads((run / "parse-results.json").read_text())["updates"] == 3


@pytest.fixture(scope="module")
def treebank_vocab():
    """The treebank sample's trees (by split), a SentencePiece model trained on its
    training pairs, and the training trees' labels and deepest nesting; skipped without
    the data."""
    import os
    from pathlib import Path

    import sentencepiece as spm

    from annotated_transformer.data import train_vocab
    from annotated_transformer.parsing import SPLITS, grammar, load_treebank

    data_dir = Path(os.environ.get("AT_DATA_DIR", "/nonexistent"))
    if not (data_dir / "ptb" / "treebank.zip").is_file():
        pytest.skip(
            "AT_DATA_DIR does not point at a data directory with ptb/treebank.zip"
        )
    trees = load_treebank(data_dir)
    split = {
        name: [t for n in numbers for t in trees.get(f"wsj_{n:04d}", [])]
        for name, numbers in SPLITS.items()
    }
    sp = spm.SentencePieceProcessor(
        model_proto=train_vocab(
            [(" ".join(tree_words(t)), linearize(t)) for t in split["train"]], 1000
        )
    )
    return split, sp, grammar(split["train"])


def test_every_held_out_tree_keeps_to_the_rule_and_other_outputs_do_not(treebank_vocab):
    from annotated_transformer.data import EOS
    from annotated_transformer.parsing import TreeOfSentence

    split, sp, (labels, depth) = treebank_vocab
    test = split["test"]
    rule = TreeOfSentence(sp, labels, [tree_words(t) for t in test], depth)
    for i, tree in enumerate(test):
        tokens = sp.encode(linearize(tree)) + [EOS]
        assert all(tokens[j] in rule(i, tokens[:j]) for j in range(len(tokens))), (
            linearize(tree)
        )
    words = tree_words(test[0])
    # a word left out
    for wrong in (
        linearize(test[0]).replace(f" {words[1]} ", " ", 1),
        # one repeated
        linearize(test[0]).replace(f" {words[0]} ", f" {words[0]} {words[0]} ", 1),
        # the last bracket closes another label
        linearize(test[0]).rsplit(" ", 1)[0] + " )NP",
    ):
        tokens = sp.encode(wrong) + [EOS]
        assert not all(tokens[j] in rule(0, tokens[:j]) for j in range(len(tokens))), (
            wrong
        )


def test_a_search_held_to_the_rule_returns_trees_over_the_sentence(treebank_vocab):
    """Even an untrained model, whose free output is noise, writes trees of its sentence
    under the rule."""
    import torch

    from annotated_transformer.config import DecodeConfig, TransformerConfig
    from annotated_transformer.decoding import decode_ids
    from annotated_transformer.model import make_model
    from annotated_transformer.parsing import TreeOfSentence

    split, sp, _ = treebank_vocab
    sentences = [tree_words(t) for t in split["test"] if len(tree_words(t)) <= 6][:3]
    torch.manual_seed(0)
    model = make_model(
        TransformerConfig(
            vocab_size=sp.get_piece_size(), n_layers=1, d_model=32, d_ff=64, n_heads=2
        )
    )
    rule = TreeOfSentence(sp, ["NP", "S", "VP"], sentences, max_depth=3)
    settings = DecodeConfig(beam_size=4, alpha=1.0, max_extra=200)
    outputs = decode_ids(
        model,
        sp.encode([" ".join(s) for s in sentences]),
        "cpu",
        settings,
        allowed=rule,
    )
    for words, output in zip(sentences, outputs):
        text = sp.decode(output)
        tree, repaired = delinearize(text, len(words))
        assert (
            not repaired
            and [t for t in text.split() if not t.startswith(("(", ")"))] == words
        ), text
        assert {t[1:] for t in text.split() if t[0] in "()"} <= {"NP", "S", "VP"}


def test_a_tree_with_a_repeated_word_draws_each_word_in_its_own_place():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from annotated_transformer.parsing import draw_tree, parse_bracketed, tree_words

    (tree,) = parse_bracketed(
        "( (NP (NP (NN part)) (PP (IN of) (NP (NN one) (PP (IN of) (NN them))))) )"
    )
    words = tree_words(tree)
    fig, ax = plt.subplots()
    draw_tree(tree, ax, words)
    placed = sorted(
        (round(text.get_position()[0]), text.get_text())
        for text in ax.texts
        if text.get_text() in words
    )
    plt.close(fig)
    # every word once, at its own position: the second "of" is not drawn over the first
    assert placed == list(enumerate(words))
