"""Positional encodings against the formula of §3.5, computed independently with
math."""

import math

import pytest
import torch

from annotated_transformer.positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    sinusoidal_table,
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
    torch.testing.assert_close(
        positions(x[:, 4:], start=4), positions(x)[:, 4:], rtol=0, atol=0
    )
    with pytest.raises(ValueError, match="longer than max_len"):
        positions(x[:, :3], start=8)  # positions 8, 9, 10: one past the table
