"""Positional encodings against the formula of §3.5, computed independently with
math."""

import math

import pytest
import torch

from annotated_transformer.config import POSITIONAL_KINDS, TransformerConfig
from annotated_transformer.model import make_model
from annotated_transformer.positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    Rotation,
    sinusoidal_table,
    token_positions,
)


@pytest.mark.parametrize("d_model", [4, 16, 512])
def test_sinusoids_match_the_formula(d_model):
    table = sinusoidal_table(200, d_model)
    for pos in (0, 1, 17, 199):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(
                math.cos(angle), abs=1e-6
            )


def test_positional_encoding_adds_the_table_in_eval_mode():
    pe = PositionalEncoding(16, dropout=0.5, max_len=50).eval()
    x = torch.randn(2, 30, 16)
    torch.testing.assert_close(pe(x), x + sinusoidal_table(50, 16)[:30])
    assert list(pe.parameters()) == [] and "pe" not in pe.state_dict()


def test_too_long_sequences_are_refused():
    with pytest.raises(ValueError, match="longer than max_len"):
        PositionalEncoding(8, 0.0, max_len=4)(torch.zeros(1, 5, 8))
    with pytest.raises(ValueError, match="longer than max_len"):
        LearnedPositionalEmbedding(8, 0.0, max_len=4)(torch.zeros(1, 5, 8))


def test_learned_positions_add_one_trained_vector_per_position():
    torch.manual_seed(0)
    learned = LearnedPositionalEmbedding(8, dropout=0.0, max_len=10)
    (table,) = list(learned.parameters())
    x = torch.randn(2, 4, 8)
    out = learned(x)
    # position i of every sentence gets row i of the table, whatever the words
    for position in range(4):
        assert torch.allclose(
            out[:, position] - x[:, position], table[position].expand(2, 8).detach()
        )
    out.pow(2).sum().backward()
    # only used rows learn
    assert table.grad[:4].abs().sum(-1).min() > 0 and table.grad[4:].abs().sum() == 0
    before = table.detach().clone()
    torch.optim.SGD(learned.parameters(), lr=0.1).step()
    assert not torch.equal(table[:4], before[:4]) and torch.equal(table[4:], before[4:])


@pytest.mark.parametrize("kind", [PositionalEncoding, LearnedPositionalEmbedding])
def test_a_later_slice_gets_the_encodings_of_its_own_positions(kind):
    positions = kind(8, dropout=0.0, max_len=10).eval()
    x = torch.randn(2, 6, 8)
    later = token_positions(2, 10, start=4)
    torch.testing.assert_close(
        positions(x[:, 4:], later), positions(x)[:, 4:], rtol=0, atol=0
    )
    # each row its own positions: the second row's tokens restart at 0 after two
    rows = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 1, 0, 1, 2, 3]])
    mixed = positions(x, rows)
    torch.testing.assert_close(mixed[0], positions(x)[0], rtol=0, atol=0)
    torch.testing.assert_close(mixed[1, 2:], positions(x[1:, 2:])[0], rtol=0, atol=0)
    with pytest.raises(ValueError, match="longer than max_len"):
        token_positions(3, 10, start=8)  # positions 8, 9, 10: one past the table
    with pytest.raises(ValueError, match="longer than max_len"):
        positions(torch.randn(1, 11, 8))


def test_the_rotation_is_a_complex_product_per_pair():
    """Rotary positions against their definition in complex numbers: pair i of the
    vector at position m, read as a + ib, is multiplied by exp(i m θ_i)."""
    torch.manual_seed(0)
    d_k = 8
    x = torch.randn(2, 3, 5, d_k, dtype=torch.float64)  # (batch, h, n, d_k)
    positions = torch.tensor([[0, 1, 2, 0, 1], [4, 5, 6, 7, 8]])
    turned = Rotation(d_k)(x, positions)
    theta = 10000.0 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    angles = positions[:, None, :, None] * theta  # (batch, 1, n, d_k / 2)
    pairs = torch.view_as_complex(x.reshape(2, 3, 5, d_k // 2, 2).contiguous())
    expected = torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), angles))
    torch.testing.assert_close(turned, expected.reshape(2, 3, 5, d_k))
    # no positions: 0, 1, 2, ... in every row
    torch.testing.assert_close(Rotation(d_k)(x), Rotation(d_k)(x, torch.arange(5)))
    with pytest.raises(ValueError, match="even d_k"):
        Rotation(7)


@pytest.mark.parametrize("kind", POSITIONAL_KINDS)
def test_only_rotary_positions_make_the_encoder_blind_to_a_shift(kind):
    """With rotary positions the scores see distances alone, and the embeddings carry
    no position: moving a whole sentence 5 positions on changes nothing. Positions
    added to the embeddings change the output."""
    torch.manual_seed(0)
    config = TransformerConfig(
        vocab_size=20, n_layers=2, d_model=16, d_ff=32, n_heads=2, dropout=0.0
    )
    model = make_model(config.replace(positional=kind)).eval()
    src = torch.tensor([[5, 6, 7, 8, 2]])
    mask = torch.ones(1, 1, 5, dtype=torch.bool)
    with torch.no_grad():
        here = model.encode(src, mask)
        moved = model.encode(src, mask, torch.arange(5, 10).unsqueeze(0))
    assert torch.allclose(here, moved, atol=1e-5) == (kind == "rotary")
