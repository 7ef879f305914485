"""The reduced Table 3: how rows are scaled, and how a sweep knows what it has done."""

import json

import pytest

from annotated_transformer import variations
from annotated_transformer.config import MULTI30K_MODEL, PRESETS


@pytest.mark.parametrize("scale, widths", [("quarter", 4), ("half", 2)])
def test_rows_are_scaled_in_proportion_to_the_papers(scale, widths):
    for row in variations.ROWS:
        ours, paper = variations.row_config(row, scale), PRESETS[row]
        assert ours.n_layers * 2 == paper.n_layers
        assert (ours.d_model * widths, ours.d_ff * widths) == (
            paper.d_model,
            paper.d_ff,
        )
        # d_k and d_v follow the widths
        assert tuple(widths * d for d in ours.head_dims) == paper.head_dims
        assert (ours.n_heads, ours.dropout, ours.label_smoothing, ours.positional) == (
            paper.n_heads,
            paper.dropout,
            paper.label_smoothing,
            paper.positional,
        )


def test_the_two_bases():
    quarter, half = (
        variations.row_config("base", "quarter"),
        variations.row_config("base", "half"),
    )
    assert (
        quarter.n_layers,
        quarter.d_model,
        quarter.d_ff,
        quarter.n_heads,
        quarter.head_dims,
    ) == (3, 128, 512, 8, (16, 16))
    # half the paper's widths and depth, on the default preset's vocabulary
    paper = PRESETS["base"]
    assert (half.n_layers, half.d_model, half.d_ff, half.vocab_size) == (
        paper.n_layers // 2,
        paper.d_model // 2,
        paper.d_ff // 2,
        MULTI30K_MODEL.vocab_size,
    )
    assert (half.n_heads, half.head_dims) == (8, (32, 32))


def test_a_sweep_skips_rows_it_has_and_refuses_bad_settings(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    stored = {
        "size": "half",
        "row": "base",
        "seed": 0,
        "updates": 7,
        "model": {"init": "pytorch"},
    }
    results.write_text(
        json.dumps(stored)
        + "\n"
        + json.dumps({**stored, "model": {}, "seed": 1})
        + "\n\n"
    )
    # a record without an init was trained before the option existed, with Xavier's
    assert variations.done_rows(results) == {
        ("half", "base", 0, 7, "pytorch"),
        ("half", "base", 1, 7, "xavier"),
    }
    assert variations.done_rows(tmp_path / "missing.jsonl") == set()
    assert (
        variations.main(
            [
                "--rows",
                "base",
                "--size",
                "half",
                "--seeds",
                "1",
                "--max-steps",
                "7",
                "--results",
                str(results),
                "--no-progress",
            ]
        )
        == 0
    )
    assert "1 of 1 rows already in" in capsys.readouterr().out
    # with --init xavier, the stored row of seed 1 is the one that counts
    xavier = ["--init", "xavier", "--first-seed", "1", "--results", str(results)]
    argv = ["--rows", "base", "--size", "half", "--seeds", "1", "--max-steps", "7"]
    assert variations.main([*argv, *xavier, "--no-progress"]) == 0
    assert "1 of 1 rows already in" in capsys.readouterr().out
    assert variations.row_config("big", "half", "xavier").init == "xavier"
    assert variations.row_config("big", "half").init == PRESETS["big"].init
    assert variations.main(["--rows", "base", "Z-h3", "--results", str(results)]) == 2
    assert "unknown row 'Z-h3'" in capsys.readouterr().err
    assert (
        variations.main(
            ["--rows", "base", "--first-seed", "-1", "--results", str(results)]
        )
        == 2
    )
    assert "--first-seed" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        variations.main(["--size", "tenth"])


@pytest.mark.parametrize("last", ["", "\n"])
def test_a_file_that_is_not_results_is_refused_before_anything_is_cut(
    tmp_path, capsys, last
):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\nthe last line" + last)
    before = notes.read_bytes()
    argv = ["--rows", "base", "--size", "half", "--results", str(notes)]
    assert variations.main([*argv, "--max-steps", "7", "--no-progress"]) == 2
    assert f"{notes} line 1 is not a result" in capsys.readouterr().err
    assert notes.read_bytes() == before


def test_a_result_cut_short_is_left_out_and_cut_from_the_file(tmp_path):
    results = tmp_path / "results.jsonl"
    whole = json.dumps(
        {"size": "half", "row": "base", "seed": 0, "updates": 7, "model": {}}
    )
    results.write_text(whole + "\n" + whole[:20])
    assert variations.done_rows(results) == {("half", "base", 0, 7, "xavier")}
