"""The reduced Table 3: how rows are scaled, and how a sweep knows what it has done."""
import json

from annotated_transformer import variations
from annotated_transformer.config import PRESETS


def test_rows_are_scaled_in_proportion_to_the_papers():
    base = variations.row_config("base")
    assert (base.n_layers, base.d_model, base.d_ff, base.n_heads, base.head_dims) == (3, 128, 512, 8, (16, 16))
    for row in variations.ROWS:
        ours, paper = variations.row_config(row), PRESETS[row]
        assert ours.n_layers * 2 == paper.n_layers
        assert (ours.d_model * 4, ours.d_ff * 4) == (paper.d_model, paper.d_ff)
        assert tuple(4 * d for d in ours.head_dims) == paper.head_dims  # d_k and d_v follow the widths
        assert (ours.n_heads, ours.dropout, ours.label_smoothing, ours.positional) == (
            paper.n_heads, paper.dropout, paper.label_smoothing, paper.positional)


def test_a_sweep_skips_rows_it_has_and_refuses_unknown_ones(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"row": "base", "seed": 0, "updates": 7}) + "\n\n")
    assert variations.done_rows(results) == {("base", 0, 7)}
    assert variations.done_rows(tmp_path / "missing.jsonl") == set()
    assert variations.main(["--rows", "base", "Z-h3", "--results", str(results)]) == 2
    assert "unknown row 'Z-h3'" in capsys.readouterr().err
