"""Attention against PyTorch's own implementations (§3.2)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from annotated_transformer.attention import MultiHeadedAttention, attention
from annotated_transformer.figures.capture import captured_attention
from annotated_transformer.layers import subsequent_mask


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.mark.parametrize(
    "n_q, n_k, d_k, d_v", [(5, 5, 8, 8), (3, 7, 16, 4), (1, 9, 64, 32)]
)
def test_attention_equals_sdpa_without_mask(n_q, n_k, d_k, d_v):
    q, k, v = (
        torch.randn(2, 3, n_q, d_k),
        torch.randn(2, 3, n_k, d_k),
        torch.randn(2, 3, n_k, d_v),
    )
    out, weights = attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, n_q))


def test_attention_equals_sdpa_with_causal_mask():
    q, k, v = (torch.randn(2, 4, 6, 16) for _ in range(3))
    out, weights = attention(q, k, v, subsequent_mask(6))
    torch.testing.assert_close(
        out, F.scaled_dot_product_attention(q, k, v, is_causal=True)
    )
    assert torch.all(weights[..., ~subsequent_mask(6)[0]] == 0)


def test_attention_equals_sdpa_with_padding_mask():
    q, k, v = torch.randn(3, 5, 8), torch.randn(3, 7, 8), torch.randn(3, 7, 8)
    lengths = torch.tensor([7, 4, 1])
    mask = (torch.arange(7) < lengths.unsqueeze(1)).unsqueeze(1)  # (3, 1, 7)
    out, weights = attention(q, k, v, mask)
    torch.testing.assert_close(
        out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    )
    assert weights[1, :, 4:].abs().max() == 0 and weights[2, :, 1:].abs().max() == 0


def _copy_into_torch_mha(
    ours: MultiHeadedAttention, d_model: int, h: int
) -> nn.MultiheadAttention:
    theirs = nn.MultiheadAttention(d_model, h, dropout=0.0, batch_first=True)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(
            torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight])
        )
        theirs.in_proj_bias.copy_(
            torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias])
        )
        theirs.out_proj.weight.copy_(ours.w_o.weight)
        theirs.out_proj.bias.copy_(ours.w_o.bias)
    return theirs.eval()


@pytest.mark.parametrize("h", [1, 4, 8])
def test_multihead_equals_torch_self_attention(h):
    d_model = 32
    ours = MultiHeadedAttention(h, d_model, dropout=0.0).eval()
    theirs = _copy_into_torch_mha(ours, d_model, h)
    x = torch.randn(3, 6, d_model)
    expected, _ = theirs(x, x, x, need_weights=False)
    torch.testing.assert_close(ours(x, x, x), expected)


def test_multihead_equals_torch_with_masks_and_cross_attention():
    d_model, h = 32, 4
    ours = MultiHeadedAttention(h, d_model, dropout=0.0).eval()
    theirs = _copy_into_torch_mha(ours, d_model, h)
    query, memory = torch.randn(2, 5, d_model), torch.randn(2, 8, d_model)
    keep = torch.ones(2, 8, dtype=torch.bool)
    keep[1, 5:] = False  # second source has three padding positions
    expected, expected_weights = theirs(
        query, memory, memory, key_padding_mask=~keep, average_attn_weights=False
    )
    ours.fused = True  # the capture writes eq. 1 out, and puts the kernel back after
    with captured_attention([ours]) as (weights,):
        output = ours(query, memory, memory, keep.unsqueeze(1))
    torch.testing.assert_close(output, expected)
    assert len(weights) == 1 and ours.fused and not ours.dropout._forward_hooks
    torch.testing.assert_close(weights[0], expected_weights)
    ours.fused = False
    # Causal self-attention: torch's attn_mask is True where attention is *forbidden*.
    x = torch.randn(2, 5, d_model)
    expected, _ = theirs(x, x, x, attn_mask=~subsequent_mask(5)[0], need_weights=False)
    torch.testing.assert_close(ours(x, x, x, subsequent_mask(5)), expected)


def test_multihead_with_independent_head_widths():
    mha = MultiHeadedAttention(h=8, d_model=64, dropout=0.0, d_k=4, d_v=16)
    assert (
        mha.w_q.out_features == 32
        and mha.w_v.out_features == 128
        and mha.w_o.in_features == 128
    )
    assert mha(
        torch.randn(2, 3, 64), torch.randn(2, 5, 64), torch.randn(2, 5, 64)
    ).shape == (2, 3, 64)
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadedAttention(h=7, d_model=64)


def test_fused_path_equals_explicit_path():
    explicit = MultiHeadedAttention(4, 32, dropout=0.0).eval()
    fused = MultiHeadedAttention(4, 32, dropout=0.0, fused=True).eval()
    fused.load_state_dict(explicit.state_dict())
    query, memory = torch.randn(2, 5, 32), torch.randn(2, 8, 32)
    keep = torch.ones(2, 1, 8, dtype=torch.bool)
    keep[0, :, 6:] = False
    torch.testing.assert_close(
        fused(query, memory, memory, keep), explicit(query, memory, memory, keep)
    )
    x = torch.randn(2, 6, 32)
    torch.testing.assert_close(
        fused(x, x, x, subsequent_mask(6)), explicit(x, x, x, subsequent_mask(6))
    )
