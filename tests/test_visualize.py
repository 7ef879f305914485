"""Capturing attention weights, merging pieces into words, the three views, the head
search and the command."""

import dataclasses
import json
import math
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch

from annotated_transformer import visualize
from annotated_transformer.attention import MultiHeadedAttention
from annotated_transformer.config import TransformerConfig
from annotated_transformer.figures import (
    capture,
    explorer,
    instrument,
    measures,
    store,
    views,
)
from annotated_transformer.figures.capture import SentenceAttention
from annotated_transformer.layers import subsequent_mask
from annotated_transformer.model import make_model

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ["▁It", "▁is", "▁making", "▁it", "▁more", "▁d", "iff", "icult", "</s>"]
TARGET = ["<s>", "▁Es", "▁macht", "▁es", "▁schwer", "er"]


def distributions(rng, *shape):
    w = rng.random(shape)
    return w / w.sum(-1, keepdims=True)


def planted(layer=5, head=3, weight=0.9, seed=0) -> SentenceAttention:
    """6 layers x 8 heads of random rows, except that (layer, head) sends `weight` from
    'making' to '▁d'."""
    rng = np.random.default_rng(seed)
    s, t = len(SOURCE), len(TARGET)
    encoder = distributions(rng, 6, 8, s, s) * 0.5
    encoder /= encoder.sum(-1, keepdims=True)
    row = np.full(s, (1 - weight) / (s - 1))
    row[SOURCE.index("▁d")] = weight
    encoder[layer - 1, head - 1, SOURCE.index("▁making")] = row
    decoder = distributions(rng, 6, 8, t, t) * np.tril(np.ones((t, t)))
    decoder /= decoder.sum(-1, keepdims=True)
    return SentenceAttention(
        "It is making it more difficult",
        "Es macht es schwerer",
        SOURCE,
        TARGET,
        encoder,
        decoder,
        distributions(rng, 6, 8, t, s),
    )


@pytest.fixture()
def tiny():
    torch.manual_seed(0)
    return make_model(
        TransformerConfig(vocab_size=20, n_layers=2, d_model=32, d_ff=64, n_heads=4)
    )


def batch():
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]])
    tgt = torch.tensor([[1, 11, 12, 13], [1, 14, 15, 0]])
    return (
        src,
        tgt,
        (src != 0).unsqueeze(-2),
        (tgt != 0).unsqueeze(-2) & subsequent_mask(4),
    )


def test_capture_changes_no_output_and_restores_the_model(tiny):
    src, tgt, src_mask, tgt_mask = batch()
    tiny.train()  # the state a training loop would leave
    modules = [m for m in tiny.modules() if isinstance(m, MultiHeadedAttention)]
    modules[0].fused = True  # a layer on the fused kernel gets it back
    tiny.eval()
    before = tiny(src, tgt, src_mask, tgt_mask)
    tiny.train()
    capture.attention_maps(tiny, src, tgt, src_mask, tgt_mask)
    assert tiny.training
    assert [m.fused for m in modules] == [True] + [False] * (len(modules) - 1)
    assert not any(m.dropout._forward_hooks for m in modules)  # the hooks are gone
    tiny.eval()
    assert torch.equal(before, tiny(src, tgt, src_mask, tgt_mask))
    modules[0].fused = False


def test_weights_are_distributions_with_padding_and_future_at_zero(tiny):
    src, tgt, src_mask, tgt_mask = batch()
    maps = capture.attention_maps(tiny, src, tgt, src_mask, tgt_mask)
    assert maps["encoder"].shape == (2, 2, 4, 5, 5)
    assert maps["decoder"].shape == (2, 2, 4, 4, 4)
    assert maps["cross"].shape == (2, 2, 4, 4, 5)  # target queries x source keys
    for w in maps.values():
        assert torch.allclose(w.sum(-1), torch.ones(()), atol=1e-6)
    assert maps["encoder"][1, ..., 3:].abs().max() == 0  # padded source keys
    assert maps["cross"][1, ..., 3:].abs().max() == 0
    # future target positions
    assert torch.triu(maps["decoder"], diagonal=1).abs().max() == 0
    assert maps["decoder"][1, ..., 3].abs().max() == 0  # the padded target key


def test_captured_weights_are_eq1_of_the_first_layer(tiny):
    """Independent reference: softmax(x W_q (x W_k)^T / sqrt(d_k)) from the layer's own
    projections."""
    src, tgt, src_mask, tgt_mask = batch()
    maps = capture.attention_maps(tiny, src, tgt, src_mask, tgt_mask)
    tiny.eval()
    with torch.no_grad():
        # (5, 32): the first layer's input (post-norm: no norm before)
        x = tiny.src_embed(src[:1])[0]
        attn = tiny.encoder.layers[0].self_attn
        q = (x @ attn.w_q.weight.T + attn.w_q.bias).view(5, 4, 8).transpose(0, 1)
        k = (x @ attn.w_k.weight.T + attn.w_k.bias).view(5, 4, 8).transpose(0, 1)
        expected = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(8), dim=-1)
    assert torch.allclose(maps["encoder"][0, 0], expected, atol=1e-6)


def test_pieces_merge_into_words_and_rows_stay_distributions():
    attn = planted()
    merged = capture.word_level(attn)
    assert merged.src_labels == [
        "It",
        "is",
        "making",
        "it",
        "more",
        "difficult",
        "</s>",
    ]
    assert merged.tgt_labels == ["<s>", "Es", "macht", "es", "schwerer"]
    assert np.allclose(merged.encoder.sum(-1), 1) and np.allclose(
        merged.cross.sum(-1), 1
    )
    # the weight on "difficult" is the sum over its 3 pieces; from "schwerer" the mean
    # of its 2 rows
    assert np.isclose(merged.encoder[0, 0, 2, 5], attn.encoder[0, 0, 2, 5:8].sum())
    assert np.isclose(merged.cross[1, 2, 4, 0], attn.cross[1, 2, 4:6, 0].mean())


def test_line_view_draws_one_line_per_weight_from_the_query():
    attn = planted(layer=5, head=3, weight=0.9)
    ax = views.line_view(attn, layer=5, heads=[3], queries=["making"])
    left = [t.get_text() for t in ax.texts if t.get_position()[0] < 0.5]
    right = [t.get_text() for t in ax.texts if t.get_position()[0] > 0.5]
    assert left == right == [p.replace("▁", "") for p in SOURCE]
    query = SOURCE.index("▁making")
    weights = attn.encoder[4, 2, query]
    lines = ax.get_lines()
    assert len(lines) == int((weights >= 0.02).sum())
    for line in lines:
        start, end = line.get_ydata()
        assert start == query  # every line leaves from the chosen query
        assert line.get_alpha() == pytest.approx(weights[int(end)])
        assert matplotlib.colors.same_color(line.get_color(), views.HEAD_COLOURS[2])
    strongest = max(lines, key=lambda line: line.get_alpha())
    assert strongest.get_ydata()[1] == SOURCE.index("▁d")
    matplotlib.pyplot.close("all")


def test_grid_view_puts_queries_down_and_keys_across():
    attn = planted()
    fig = views.grid_view(attn, "cross", layers=[1, 2], heads=[1, 2, 3])
    axes = np.array(fig.axes).reshape(2, 3)
    image = axes[1, 2].images[0].get_array()
    assert image.shape == (len(TARGET), len(SOURCE))  # target x source
    assert np.allclose(image, attn.cross[1, 2])
    assert [t.get_text() for t in axes[0, 0].get_yticklabels()] == [
        p.replace("▁", "") for p in TARGET
    ]
    assert [t.get_text() for t in axes[1, 0].get_xticklabels()] == [
        p.replace("▁", "") for p in SOURCE
    ]
    assert axes[1, 2].get_title() == "layer 2, head 3"
    # the colour scale ends at the largest weight shown, and the title says which
    darkest = attn.cross[:2, :3].max()
    assert axes[1, 2].images[0].get_clim() == (0, pytest.approx(darkest))
    assert f"the darkest blue: weight {darkest:.2f}" in fig._suptitle.get_text()
    matplotlib.pyplot.close("all")


def test_grid_view_wraps_its_panels_into_rows_of_columns():
    attn = planted()
    fig = views.grid_view(attn, "encoder", layers=[5, 6], heads=None, columns=4)
    axes = np.array(fig.axes).reshape(4, 4)
    assert axes[3, 0].get_title() == "layer 6, head 5"  # the 13th of 16 panels
    assert np.allclose(axes[2, 1].images[0].get_array(), attn.encoder[5, 1])
    assert [t.get_text() for t in axes[3, 3].get_xticklabels()] == [
        p.replace("▁", "") for p in SOURCE
    ]
    assert not [t.get_text() for t in axes[2, 3].get_xticklabels() if t.get_text()]
    matplotlib.pyplot.close("all")


def test_explorer_embeds_oriented_data_and_loads_nothing():
    attn = capture.word_level(planted())
    page = explorer.explorer([attn])
    payload = json.loads(
        re.search(
            r'<script type="application/json" class="at-data">(.*?)</script>',
            page,
            re.S,
        ).group(1)
    )
    sentence = payload["sentences"][0]
    assert sentence["labels"]["cross"] == [attn.tgt_labels, attn.src_labels]
    cross = np.array(sentence["weights"]["cross"])
    assert cross.shape == attn.cross.shape
    assert np.allclose(cross, attn.cross, atol=0.005)
    assert payload["layers"] == 6 and payload["heads"] == 8
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")
    assert page.count("<select") == 4


def test_head_search_finds_the_planted_head_and_the_table_measures_it():
    attn = capture.word_level(planted(layer=5, head=3, weight=0.9))
    scores = measures.weight_between(attn, "making", ["difficult"])
    assert measures.best_heads(scores) == [(5, 3)]
    # "▁d" planted, "iff" and "icult" share the rest
    assert scores[4, 2] == pytest.approx(0.9 + 2 * 0.1 / 8)
    shift = np.eye(7, k=-1)
    shift[0, 0] = 1  # each word looks at the word before it (the first at itself)
    attn.encoder[0, 0] = shift
    row = next(
        r for r in measures.head_table(attn) if (r["layer"], r["head"]) == (1, 1)
    )
    assert row["previous"] == pytest.approx(1.0) and row["next"] == 0
    assert row["entropy"] == pytest.approx(0, abs=1e-9)
    assert row["distance"] == pytest.approx(6 / 7)


def test_neighbour_share_is_the_larger_of_previous_and_next_word_shares():
    attn = capture.word_level(planted())
    n = len(attn.src_labels)  # the last word is </s>, never a query nor a neighbour
    attn.encoder[0, 0] = np.eye(n, k=-1) + np.eye(n, 1)  # the word before (first: 0)
    attn.encoder[0, 1] = np.eye(n, k=1) + np.eye(n, 1, -(n - 1))  # the word after
    share = measures.neighbour_share([attn, attn])
    assert share[0, 0] == share[0, 1] == 1.0
    # brute force: where each word but </s> puts its largest weight
    for layer, head in np.ndindex(*share.shape):
        w = attn.encoder[layer, head]
        largest = [int(np.argmax(w[i])) for i in range(n - 1)]
        before = sum(largest[i] == i - 1 for i in range(1, n - 1))
        after = sum(largest[i] == i + 1 for i in range(n - 2))
        assert share[layer, head] == pytest.approx(max(before, after) / (n - 2))
    assert measures.POSITIONAL_SHARE == 0.9  # Voita et al.'s mark


def test_stored_weights_round_trip_in_float16(tmp_path):
    attn = planted()
    store.save_attention(tmp_path / "a.npz", [attn], {"command": "test"})
    (loaded,), about = store.load_attention(tmp_path / "a.npz")
    assert about == {"command": "test"}
    assert loaded.src_labels == SOURCE and loaded.target == attn.target
    assert np.allclose(loaded.encoder, attn.encoder, atol=1e-3)


@pytest.fixture()
def stored(tmp_path):
    path = tmp_path / "stored.npz"
    store.save_attention(path, [planted(), planted(seed=1)], {"command": "test"})
    return path


def test_command_draws_from_stored_weights(stored, tmp_path):
    png, page = tmp_path / "fig.png", tmp_path / "page.html"
    assert (
        visualize.main(
            [
                "--stored",
                str(stored),
                "--index",
                "2",
                "--query",
                "making",
                "-o",
                str(png),
            ]
        )
        == 0
    )
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert (
        visualize.main(["--stored", str(stored), "--view", "explorer", "-o", str(page)])
        == 0
    )
    assert 'class="at-explorer"' in page.read_text()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--heads", "9"], "head [9] out of range: this model has heads 1 to 8"),
        (["--layer", "7"], "layer [7] out of range"),
        (["--layer", "0"], "layer [0] out of range"),
        (["--view", "grid", "--layer", "0"], "layer [0] out of range"),
        (["--query", "nowhere"], "'nowhere' is not a token of this sentence"),
        (["--index", "3"], "--index 3"),
    ],
)
def test_command_rejects_bad_choices_clearly(stored, argv, message, capsys):
    assert visualize.main(["--stored", str(stored), *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "heads, message", [("3-1", "empty range"), ("two", "write numbers like")]
)
def test_command_refuses_head_lists_it_cannot_read(stored, heads, message, capsys):
    with pytest.raises(SystemExit) as stop:
        visualize.main(["--stored", str(stored), "--heads", heads])
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_grid_view_draws_only_the_layer_asked_for(stored, tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(
        visualize,
        "grid_view",
        lambda attn, kind, layers=None, heads=None: (
            drawn.append(layers) or visualize.plt.figure()
        ),
    )
    assert (
        visualize.main(
            [
                "--stored",
                str(stored),
                "--view",
                "grid",
                "--layer",
                "2",
                "-o",
                str(tmp_path / "g.png"),
            ]
        )
        == 0
    )
    assert drawn == [[2]]


def test_command_rejects_an_empty_sentence_and_a_missing_run(tmp_path, capsys):
    assert visualize.main(["--run", str(tmp_path / "nothing"), "A sentence."]) == 2
    assert "no checkpoints" in capsys.readouterr().err
    assert visualize.main(["--stored", str(tmp_path / "missing.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert visualize.main(["  "]) == 2
    assert "the sentence is empty" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert visualize.main(["-i", str(empty)]) == 2
    assert "has no sentence" in capsys.readouterr().err


def test_a_damaged_or_foreign_stored_file_is_a_one_line_error(stored, tmp_path, capsys):
    truncated, foreign, text = (
        tmp_path / "cut.npz",
        tmp_path / "other.npz",
        tmp_path / "notes.npz",
    )
    truncated.write_bytes(stored.read_bytes()[:200])
    np.savez(foreign, weights=np.zeros(3))
    text.write_text("not weights")
    for path in (truncated, foreign, text):
        assert visualize.main(["--stored", str(path)]) == 2
        err = capsys.readouterr().err
        assert (
            f"{path} is not a file of attention weights" in err
            and "Traceback" not in err
        )


def test_punctuation_is_a_word_of_its_own():
    pieces = ["▁more", "▁d", "iff", "icult", ".", "</s>"]
    assert capture.word_spans(pieces) == [(0, 1), (1, 4), (4, 5), (5, 6)]


def law_sentence() -> SentenceAttention:
    """The Figure 4 sentence in words, 6 layers x 8 heads of even rows, except: layer
    5 head 2 sends 0.8 of "its" to "Law", head 4 looks at the previous word, head 6
    at the end of the clause, and head 8 sends 0.3 of every word to </s>."""
    words = "▁The ▁Law ▁will ▁be ▁just , ▁but ▁its ▁application ▁is ▁missing . </s>"
    labels = words.split()
    n = len(labels)
    encoder = np.full((6, 8, n, n), 1 / n)
    its, law = labels.index("▁its"), labels.index("▁Law")
    encoder[4, 1, its] = 0.2 / (n - 1)
    encoder[4, 1, its, law] = 0.8
    encoder[4, 3] = np.eye(n, k=-1)
    encoder[4, 3, 0, 0] = 1
    ends = [labels.index(","), labels.index("."), n - 1]
    encoder[4, 5] = 0
    for i in range(n):
        encoder[4, 5, i, min([j for j in ends if j > i] or [i])] = 1
    encoder[4, 7] = 0.7 / (n - 1)
    encoder[4, 7, :, -1] = 0.3
    return SentenceAttention(
        "The Law will be just, but its application is missing.",
        "",
        labels,
        ["<s>"],
        encoder,
        np.ones((6, 8, 1, 1)),
        np.full((6, 8, 1, n), 1 / n),
    )


def test_structural_shares_are_one_for_a_head_that_follows_its_pattern():
    shares = measures.pattern_shares(law_sentence())
    assert shares["previous"][4, 3] == pytest.approx(1.0)
    assert shares["clause end"][4, 5] == pytest.approx(1.0)
    assert shares["</s>"][4, 7] == pytest.approx(0.3)
    n = len(law_sentence().src_labels)
    assert shares["next"][0, 0] == pytest.approx(1 / n)  # an even head: 1/n on each
    with pytest.raises(ValueError, match="self-attention"):
        measures.pattern_shares(law_sentence(), "cross")


def test_paper_figures_finds_the_planted_heads_in_the_layer_asked_for():
    making = planted(layer=5, head=3, weight=0.9)
    record = measures.paper_figures([making, law_sentence()])
    assert record["layer"] == 5 and record["n_heads"] == 8
    assert record["its → Law"]["best"] == {"layer": 5, "head": 2, "weight": 0.8}
    # '▁d' of "difficult" holds the planted 0.9; its other pieces and "more" share
    # the rest with the other 5 keys
    figure3 = record["making → more difficult"]["best"]
    assert (figure3["layer"], figure3["head"]) == (5, 3)
    assert figure3["weight"] == pytest.approx(0.9 + 3 * 0.1 / 8)
    followed = {(h["head"], h["pattern"]) for h in record["structure"]["heads"]}
    assert followed == {
        (4, "previous"),
        (6, "clause end"),
    }  # head 8's 0.3 is too little
    with pytest.raises(ValueError, match="no stored sentence contains"):
        measures.paper_figures([making])


def test_command_writes_svg_with_words_as_text_and_the_measurements(tmp_path):
    stored = tmp_path / "figures.npz"
    store.save_attention(stored, [planted(), law_sentence()], {"command": "test"})
    measured = tmp_path / "figures.json"
    assert visualize.main(["--stored", str(stored), "--measure", str(measured)]) == 0
    assert json.loads(measured.read_text()) == json.loads(
        json.dumps(measures.paper_figures(store.load_attention(stored)[0]))
    )
    svg = tmp_path / "figure4.svg"
    argv = ["--stored", str(stored), "--index", "2", "--query", "its"]
    assert visualize.main([*argv, "-o", str(svg)]) == 0
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert ">application<" in text  # a word, not a drawn outline
    assert visualize.main([*argv, "--format", "svg", "-o", str(tmp_path / "f")]) == 0
    assert (tmp_path / "f.svg").read_text().count("<svg") == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["-o", "x.svg", "--format", "png"], "-o x.svg is .svg but --format is png"),
        (["-o", "x.jpg"], "not .jpg"),
        (["--view", "explorer", "--format", "svg"], "the explorer is HTML"),
    ],
)
def test_clashing_image_formats_are_one_line_errors(stored, argv, message, capsys):
    assert visualize.main(["--stored", str(stored), *argv]) == 2
    assert message in capsys.readouterr().err


def visualize_process(*argv: str, limit: int | None = None):
    """The command in a process of its own, its files limited to ``limit`` bytes (as
    ``ulimit -f`` does)."""

    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "annotated_transformer.visualize", *argv],
        capture_output=True,
        preexec_fn=set_limit if limit else None,
    )


def test_an_image_write_cut_short_leaves_the_old_image_and_one_line(stored, tmp_path):
    keep = tmp_path / "keep.png"
    grid = ["--stored", str(stored), "--view", "grid", "-o", str(keep)]
    assert visualize.main(grid) == 0
    before = keep.read_bytes()
    assert len(before) > 8192
    result = visualize_process(*grid, limit=8192)
    assert result.returncode == 2
    assert keep.read_bytes() == before
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot write {keep}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.png", "stored.npz"]


def test_images_go_into_new_folders_and_streams_and_a_device_is_one_line(
    stored, tmp_path, capsys
):
    deep = tmp_path / "missing" / "sub" / "x.png"
    assert visualize.main(["--stored", str(stored), "-o", str(deep)]) == 0
    assert deep.read_bytes()[:4] == b"\x89PNG"
    explorer = ["--stored", str(stored), "--view", "explorer", "-o", "/dev/full"]
    assert visualize.main(explorer) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: /dev/full is a device, where -o writes a file")
    assert err.count("\n") == 1
    # an SVG into standard output, not into a new file /dev/stdout.svg
    result = visualize_process(
        "--stored", str(stored), "-o", "/dev/stdout", "--format", "svg"
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert out.startswith("<?xml") and out.endswith("wrote /dev/stdout\n")
    assert not Path("/dev/stdout.svg").exists()


def test_a_sentence_that_looks_like_markup_leaves_the_explorer_whole():
    attn = dataclasses.replace(planted(), source="a <!--<script> and </script> b")
    page = explorer.explorer([attn])
    data = re.search(
        r'<script type="application/json" class="at-data">(.*?)</script>', page, re.S
    ).group(1)
    assert "<" not in data  # nothing in it can end its block or open a comment
    assert json.loads(data)["sentences"][0]["source"] == attn.source


@pytest.mark.slow
def test_a_trained_pattern_survives_capture_float16_and_words(tmp_path):
    """Appendix D's instrument check: a model that must reverse its source shows the
    reversal in encoder–decoder attention, read through the same capture, float16
    file and word merging as chapter 15's figures."""
    record = instrument.instrument_check(tmp_path / "trained.npz")
    assert record["best"]["weight"] >= 0.8
    assert record["float16_change"] < 1e-3
    # the measure is not generous: after one update no head finds the reversal
    untrained = instrument.instrument_check(tmp_path / "untrained.npz", steps=1)
    assert untrained["best"]["weight"] < 2 * untrained["even_spread"]


@pytest.mark.slow
def test_the_gpu_figure_script_runs_unchanged_at_a_tiny_size(shared_data, tmp_path):
    """tools/figure_gpu.sh trains, scores, captures, measures and draws; here with a
    tiny model for two updates on the CPU, the options given after STORE winning."""
    tiny = "--device cpu --threads 1 --d-model 32 --d-ff 64 --vocab-size 400"
    tiny += " --max-train-pairs 300 --batch-tokens 600 --max-steps 2 --warmup 10"
    tiny += " --beam-size 1 --max-extra 2 --average 1"
    kept = tmp_path / "store"
    script = ROOT / "tools" / "figure_gpu.sh"
    done = subprocess.run(
        ["bash", str(script), str(shared_data), str(kept), *tiny.split()],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # the corpus says in one line what it read
    assert "19,000 from europarl-v7-sample" in done.stdout
    record = json.loads((kept / "figure-attention.json").read_text())
    assert (record["layer"], record["n_layers"], record["n_heads"]) == (5, 6, 8)
    assert json.loads((kept / "results.json").read_text())["updates"] == 2
    sentences, _ = store.load_attention(kept / "figure-attention.npz")
    assert len(sentences) == 11
    for n in (3, 4, 5):
        assert (kept / f"figure-{n}.png").read_bytes()[:4] == b"\x89PNG"
