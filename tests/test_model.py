"""The assembled model (§3): causality, weight tying, post-norm, Table 3 sizes,
configuration checks."""

import pytest
import torch
import torch.nn.functional as F

from annotated_transformer.config import (
    BASE,
    INITIALIZATIONS,
    PRESETS,
    TABLE3_ROWS,
    TransformerConfig,
    preset,
)
from annotated_transformer.layers import subsequent_mask
from annotated_transformer.model import count_parameters, make_model

SMALL = TransformerConfig(vocab_size=50, n_layers=2, d_model=32, d_ff=64, n_heads=4)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _decoder_log_probs(model, src, tgt):
    src_mask = torch.ones(src.size(0), 1, src.size(1), dtype=torch.bool)
    return model.generator(model(src, tgt, src_mask, subsequent_mask(tgt.size(1))))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_is_causal(norm_first):
    model = make_model(SMALL.replace(norm_first=norm_first)).eval()
    src, tgt = torch.randint(3, 50, (2, 9)), torch.randint(3, 50, (2, 8))
    before = _decoder_log_probs(model, src, tgt)
    for i in range(tgt.size(1) - 1):
        changed = tgt.clone()
        changed[:, i + 1 :] = torch.randint(3, 50, changed[:, i + 1 :].shape)
        after = _decoder_log_probs(model, src, changed)
        torch.testing.assert_close(after[:, : i + 1], before[:, : i + 1])
        # ...and the change is visible afterwards, so the test can tell a broken mask
        # apart.
        assert not torch.allclose(after[:, i + 1 :], before[:, i + 1 :])


def test_three_way_weight_tying_is_one_tensor():
    model = make_model(SMALL)
    src_w = model.src_embed[0].lut.weight
    assert src_w is model.tgt_embed[0].lut.weight is model.generator.proj.weight
    # One Parameter: counted once, and a gradient from any use lands in the same place.
    names = [n for n, p in model.named_parameters() if p is src_w]
    assert len(names) == 1
    log_probs = _decoder_log_probs(
        model, torch.randint(3, 50, (2, 5)), torch.randint(3, 50, (2, 4))
    )
    log_probs.sum().backward()
    assert src_w.grad is not None and src_w.grad.abs().sum() > 0


def test_untied_model_has_three_matrices():
    tied, untied = make_model(SMALL), make_model(SMALL.replace(tie_embeddings=False))
    assert count_parameters(untied) - count_parameters(tied) == 2 * 50 * 32
    assert untied.src_embed[0].lut.weight is not untied.generator.proj.weight


def test_sublayers_are_post_norm_by_default():
    model = make_model(SMALL).eval()
    layer = model.encoder.layers[0]
    x = torch.randn(2, 6, 32)
    mask = torch.ones(2, 1, 6, dtype=torch.bool)
    norm1, norm2 = layer.sublayers[0].norm, layer.sublayers[1].norm
    # LayerNorm(x + Sublayer(x)), twice, computed by hand from the layer's own parts.
    h = F.layer_norm(
        x + layer.self_attn(x, x, x, mask), (32,), norm1.weight, norm1.bias, norm1.eps
    )
    expected = F.layer_norm(
        h + layer.feed_forward(h), (32,), norm2.weight, norm2.bias, norm2.eps
    )
    out = layer(x, mask)
    torch.testing.assert_close(out, expected)
    # A post-norm output is normalized at every position; no extra norm ends the stack.
    torch.testing.assert_close(out.mean(-1), torch.zeros(2, 6), atol=1e-5, rtol=0)
    assert isinstance(model.encoder.norm, torch.nn.Identity) and isinstance(
        model.decoder.norm, torch.nn.Identity
    )


def test_pre_norm_option_normalizes_before_the_sublayer():
    model = make_model(SMALL.replace(norm_first=True)).eval()
    layer = model.decoder.layers[0]
    x, memory = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    src_mask, tgt_mask = torch.ones(2, 1, 7, dtype=torch.bool), subsequent_mask(5)
    n1, n2, n3 = (s.norm for s in layer.sublayers)
    h = x + layer.self_attn(n1(x), n1(x), n1(x), tgt_mask)
    h = h + layer.src_attn(n2(h), memory, memory, src_mask)
    expected = h + layer.feed_forward(n3(h))
    torch.testing.assert_close(layer(x, memory, src_mask, tgt_mask), expected)
    assert isinstance(model.decoder.norm, torch.nn.LayerNorm)


def test_parameter_counts_match_table_3():
    # Table 3 with a 37000-token shared vocabulary and three-way tying: ~63.1M (base),
    # ~214M (big).
    base = count_parameters(make_model(preset("base").replace(vocab_size=37000)))
    big = count_parameters(make_model(preset("big").replace(vocab_size=37000)))
    assert abs(base - 63.1e6) <= 0.5e6, base
    assert abs(big - 214e6) <= 1e6, big


def test_parameter_count_by_hand_for_a_small_model():
    d, f, v, n = 32, 64, 50, 2
    attention = 4 * (d * d + d)
    ffn = d * f + f + f * d + d
    encoder_layer = attention + ffn + 2 * 2 * d
    decoder_layer = 2 * attention + ffn + 3 * 2 * d
    assert (
        count_parameters(make_model(SMALL))
        == n * (encoder_layer + decoder_layer) + v * d
    )


# Table 3 of the paper as FACTS.md gives it: (N, d_model, d_ff, h, d_k, d_v, P_drop,
# eps_ls, positional) per row, blanks filled from base, and the parameter count
# (millions) where the table has one.
TABLE3 = {
    "base": ((6, 512, 2048, 8, 64, 64, 0.1, 0.1, "sinusoidal"), 65),
    "A-h1": ((6, 512, 2048, 1, 512, 512, 0.1, 0.1, "sinusoidal"), None),
    "A-h4": ((6, 512, 2048, 4, 128, 128, 0.1, 0.1, "sinusoidal"), None),
    "A-h16": ((6, 512, 2048, 16, 32, 32, 0.1, 0.1, "sinusoidal"), None),
    "A-h32": ((6, 512, 2048, 32, 16, 16, 0.1, 0.1, "sinusoidal"), None),
    "B-dk16": ((6, 512, 2048, 8, 16, 64, 0.1, 0.1, "sinusoidal"), 58),
    "B-dk32": ((6, 512, 2048, 8, 32, 64, 0.1, 0.1, "sinusoidal"), 60),
    "C-N2": ((2, 512, 2048, 8, 64, 64, 0.1, 0.1, "sinusoidal"), 36),
    "C-N4": ((4, 512, 2048, 8, 64, 64, 0.1, 0.1, "sinusoidal"), 50),
    "C-N8": ((8, 512, 2048, 8, 64, 64, 0.1, 0.1, "sinusoidal"), 80),
    "C-d256": ((6, 256, 2048, 8, 32, 32, 0.1, 0.1, "sinusoidal"), 28),
    "C-d1024": ((6, 1024, 2048, 8, 128, 128, 0.1, 0.1, "sinusoidal"), 168),
    "C-dff1024": ((6, 512, 1024, 8, 64, 64, 0.1, 0.1, "sinusoidal"), 53),
    "C-dff4096": ((6, 512, 4096, 8, 64, 64, 0.1, 0.1, "sinusoidal"), 90),
    "D-drop0.0": ((6, 512, 2048, 8, 64, 64, 0.0, 0.1, "sinusoidal"), None),
    "D-drop0.2": ((6, 512, 2048, 8, 64, 64, 0.2, 0.1, "sinusoidal"), None),
    "D-ls0.0": ((6, 512, 2048, 8, 64, 64, 0.1, 0.0, "sinusoidal"), None),
    "D-ls0.2": ((6, 512, 2048, 8, 64, 64, 0.1, 0.2, "sinusoidal"), None),
    "E-learned": ((6, 512, 2048, 8, 64, 64, 0.1, 0.1, "learned"), None),
    "big": ((6, 1024, 4096, 16, 64, 64, 0.3, 0.1, "sinusoidal"), 213),
}


@pytest.mark.parametrize("name", TABLE3)
def test_each_preset_is_its_table_3_row(name):
    c = PRESETS[name]
    row, millions = TABLE3[name]
    assert (
        c.n_layers,
        c.d_model,
        c.d_ff,
        c.n_heads,
        *c.head_dims,
        c.dropout,
        c.label_smoothing,
        c.positional,
    ) == row
    assert (c.norm_first, c.tie_embeddings) == (False, True)
    # a 37,000-token shared vocabulary, three-way tied; the table rounds, and counts
    if millions is not None:
        # about 2M more at d_model 512 than the layers hold (FACTS.md)
        with torch.device("meta"):
            ours = count_parameters(make_model(c.replace(vocab_size=37000))) / 1e6
        assert abs(ours - millions) <= max(3.0, 0.03 * millions), (ours, millions)


def test_the_presets_are_the_table_and_nothing_else():
    assert set(PRESETS) == set(TABLE3) and len(TABLE3_ROWS) == 18


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(dropuot=0.2), "unknown field"),
        (dict(n_heads=7), "not divisible"),
        (dict(dropout=1.5), "dropout must be in"),
        (dict(positional="alibi"), "positional must be"),
        (dict(d_model=0), "positive integer"),
        (dict(d_k=10**30), "--d-k must be at most 16777216"),
        (dict(init="kaiming"), "init must be"),
    ],
)
def test_bad_configurations_are_refused_clearly(changes, message):
    with pytest.raises(ValueError, match=message):
        BASE.replace(**changes)


def test_unknown_preset_lists_the_valid_ones():
    with pytest.raises(ValueError, match="choose one of: base, big"):
        preset("huge")


def test_dropout_sits_where_section_5_4_puts_it():
    model = make_model(BASE.replace(vocab_size=100, n_layers=1))
    rates = {
        name: m.p
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Dropout)
    }
    # 2 sub-layers in the encoder layer, 3 in the decoder
    residual = [n for n in rates if ".sublayers." in n]
    embedding_sums = [n for n in rates if n.startswith(("src_embed", "tgt_embed"))]
    attention_weights = [n for n in rates if n.endswith("attn.dropout")]
    assert len(residual) == 5 and all(rates[n] == 0.1 for n in residual)
    assert len(embedding_sums) == 2 and all(rates[n] == 0.1 for n in embedding_sums)
    assert len(attention_weights) == 3 and all(
        rates[n] == 0.0 for n in attention_weights
    )
    assert len(rates) == 10  # nothing else is dropped out


@pytest.mark.parametrize("init", INITIALIZATIONS)
def test_every_linear_layer_is_drawn_on_its_own_within_its_init_bound(init):
    model = make_model(SMALL.replace(n_layers=3, init=init))
    linears = [
        m
        for m in [*model.encoder.modules(), *model.decoder.modules()]
        if isinstance(m, torch.nn.Linear)
    ]
    for m in linears:
        fan_out, fan_in = m.weight.shape
        bound = fan_in**-0.5 if init == "pytorch" else (6 / (fan_in + fan_out)) ** 0.5
        assert m.weight.abs().max() <= bound
        # drawn from the whole interval, not a narrower one
        assert m.weight.abs().max() > 0.9 * bound
        assert (m.bias == 0).all() == (init == "xavier")
    first, second = model.encoder.layers[0], model.encoder.layers[1]
    assert not torch.equal(
        first.feed_forward.w_1.weight, second.feed_forward.w_1.weight
    )
    assert not torch.equal(
        model.decoder.layers[0].src_attn.w_q.weight,
        model.decoder.layers[2].src_attn.w_q.weight,
    )


def test_a_fresh_six_layer_post_norm_encoder_keeps_its_positions_apart():
    """Xavier's larger sub-layer outputs make a post-norm stack map every position to
    nearly the same vector before any training; the cross-attention then has nothing to
    choose between (chapter 12)."""
    from annotated_transformer.figures.diagnostics import position_similarity

    config = TransformerConfig(
        vocab_size=1000, n_layers=6, d_model=128, d_ff=512, n_heads=4
    )
    src = torch.randint(4, 1000, (16, 20))
    mask = torch.ones(16, 1, 20, dtype=torch.bool)
    top = {
        init: position_similarity(make_model(config.replace(init=init)), src, mask)[-1]
        for init in INITIALIZATIONS
    }
    assert top["pytorch"] < 0.6 < 0.85 < top["xavier"]
