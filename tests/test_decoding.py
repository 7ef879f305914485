"""Greedy decoding, beam search and the key/value cache, against brute force and plain
forward passes."""

import itertools
import math

import pytest
import torch

from annotated_transformer.config import (
    POSITIONAL_KINDS,
    DecodeConfig,
    TransformerConfig,
)
from annotated_transformer.data import BOS, EOS, PAD
from annotated_transformer.decoding import (
    KVCache,
    beam_search,
    greedy_decode,
    length_penalty,
    strip_special,
)
from annotated_transformer.layers import subsequent_mask
from annotated_transformer.model import make_model


def _model(vocab: int, seed: int, eos_bias: float = 0.0, **settings):
    """A small random model; ``eos_bias`` scales up the <eos> embedding so that outputs
    end at varied lengths. Xavier's larger initial weights make an untrained model's
    outputs depend more on its input."""
    torch.manual_seed(seed)
    config = TransformerConfig(
        vocab_size=vocab,
        n_layers=2,
        d_model=32,
        d_ff=64,
        n_heads=4,
        dropout=0.0,
        init="xavier",
    ).replace(**settings)
    model = make_model(config).eval()
    if eos_bias:
        with torch.no_grad():
            model.generator.proj.weight[EOS] *= eos_bias
    return model


def _sources(vocab: int, lengths: list[int], seed: int):
    """A padded batch of random sources (each ends with <eos>) and its mask."""
    g = torch.Generator().manual_seed(seed)
    rows = [
        torch.randint(3, vocab, (n - 1,), generator=g).tolist() + [EOS] for n in lengths
    ]
    src = torch.full((len(rows), max(lengths)), PAD)
    for i, row in enumerate(rows):
        src[i, : len(row)] = torch.tensor(row)
    return src, (src != PAD).unsqueeze(-2)


def _sequence_log_prob(model, src, tokens: list[int]) -> float:
    """log P(tokens | src) from one teacher-forced forward pass over the whole
    sequence."""
    src_mask = (src != PAD).unsqueeze(-2)
    tgt = torch.tensor([[BOS] + tokens[:-1]])
    with torch.no_grad():
        log_probs = model.generator(
            model(src, tgt, src_mask, subsequent_mask(tgt.size(1)))
        )[0]
    return sum(log_probs[i, t].item() for i, t in enumerate(tokens))


def test_beam_of_one_is_greedy_decoding():
    ended_early = 0
    for seed in range(4):
        model = _model(vocab=12, seed=seed, eos_bias=2.0)
        src, src_mask = _sources(12, [5, 3, 7, 4, 6], seed)
        limits = src_mask.sum(dim=(1, 2)) + 4
        greedy = strip_special(greedy_decode(model, src, src_mask, limits), EOS, PAD)
        for alpha in (0.0, 0.6, 1.5):
            beam = beam_search(
                model, src, src_mask, limits, DecodeConfig(beam_size=1, alpha=alpha)
            )
            assert [[t for t in hyps[0].tokens if t != EOS] for hyps in beam] == greedy
        ended_early += sum(len(g) < limit for g, limit in zip(greedy, limits.tolist()))
    assert ended_early >= 5, (
        "too few outputs ended with <eos> for the comparison to mean much"
    )


@pytest.mark.parametrize("beam_size", [1, 4])
def test_batched_decoding_equals_one_sentence_at_a_time(beam_size):
    model = _model(vocab=12, seed=1, eos_bias=2.0)
    # padded to 9: padding must not change anything
    src, src_mask = _sources(12, [6, 2, 9, 4], seed=3)
    limits = src_mask.sum(dim=(1, 2)) + 5
    batched = beam_search(
        model,
        src,
        src_mask,
        limits,
        DecodeConfig(beam_size=beam_size, alpha=0.6),
        n_best=beam_size,
    )
    batched_greedy = strip_special(
        greedy_decode(model, src, src_mask, limits), EOS, PAD
    )
    for i in range(src.size(0)):
        n = int(limits[i]) - 5
        alone_src, alone_mask = src[i : i + 1, :n], src_mask[i : i + 1, :, :n]
        settings = DecodeConfig(beam_size=beam_size, alpha=0.6)
        alone = beam_search(
            model, alone_src, alone_mask, n + 5, settings, n_best=beam_size
        )[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batched[i]]
        assert [h.score for h in alone] == pytest.approx(
            [h.score for h in batched[i]], abs=1e-5
        )
        greedy = strip_special(
            greedy_decode(model, alone_src, alone_mask, n + 5), EOS, PAD
        )
        assert greedy[0] == batched_greedy[i]


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_wide_beam_finds_the_exhaustive_best(alpha):
    vocab, max_len = 6, 4  # outputs: tokens 3, 4, 5 and <eos>; at most 4 of them
    model = _model(vocab=vocab, seed=7, eos_bias=1.5)
    src, src_mask = _sources(vocab, [4], seed=5)
    words = [3, 4, 5]
    candidates = [
        list(p) + [EOS]
        for n in range(max_len)
        for p in itertools.product(words, repeat=n)
    ]
    # cut off at the limit
    candidates += [list(p) for p in itertools.product(words, repeat=max_len)]
    scored = sorted(
        (
            (lp := _sequence_log_prob(model, src, c)) / length_penalty(len(c), alpha),
            lp,
            c,
        )
        for c in candidates
    )[::-1]
    found = beam_search(
        model,
        src,
        src_mask,
        max_len,
        DecodeConfig(beam_size=128, alpha=alpha),
        n_best=3,
    )[0]
    assert [h.tokens for h in found] == [c for _, _, c in scored[:3]]
    assert [h.score for h in found] == pytest.approx(
        [s for s, _, _ in scored[:3]], abs=1e-5
    )
    # the length penalty and <eos> both matter here
    assert any(c[-1] == EOS for _, _, c in scored[:3])


def test_scores_are_the_recomputed_log_probabilities():
    model = _model(vocab=12, seed=3, eos_bias=2.0)
    src, src_mask = _sources(12, [5, 8], seed=4)
    limits = src_mask.sum(dim=(1, 2)) + 6
    results = beam_search(
        model, src, src_mask, limits, DecodeConfig(beam_size=4, alpha=0.6), n_best=4
    )
    for i, hyps in enumerate(results):
        assert len(hyps) == 4 and [h.score for h in hyps] == sorted(
            (h.score for h in hyps), reverse=True
        )
        for h in hyps:
            n = int(limits[i]) - 6
            recomputed = _sequence_log_prob(model, src[i : i + 1, :n], h.tokens)
            assert h.log_prob == pytest.approx(recomputed, abs=1e-4)
            assert h.score == pytest.approx(
                h.log_prob / ((5 + len(h.tokens)) / 6) ** 0.6, rel=1e-6
            )


@pytest.mark.parametrize(
    "settings",
    [{"norm_first": True}, *({"positional": kind} for kind in POSITIONAL_KINDS)],
)
def test_cached_decoding_equals_full_recomputation(settings):
    """For every kind of positions: the cached decoder passes each new token's own
    position, and what it computes is what a full pass over the prefix computes."""
    model = _model(vocab=16, seed=2, eos_bias=1.5, **settings)
    src, src_mask = _sources(16, [7, 3, 5], seed=6)
    limits = src_mask.sum(dim=(1, 2)) + 8
    cached = greedy_decode(model, src, src_mask, limits)
    assert torch.equal(
        cached,
        greedy_decode(model, src, src_mask, limits, incremental=False),
    )
    # Step by step, the two ways of computing the next distribution agree to float
    # rounding.
    memory = model.encode(src, src_mask)
    cache = [(KVCache(), KVCache(fixed=True)) for _ in model.decoder.layers]
    ys = torch.full((3, 1), BOS)
    for _ in range(6):
        with torch.no_grad():
            step = model.generator(
                model.decode(memory, src_mask, ys, None, cache)[:, -1]
            )
            whole = model.generator(
                model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)))[:, -1]
            )
        assert torch.allclose(step, whole, atol=1e-5)
        ys = torch.cat([ys, step.argmax(-1, keepdim=True)], dim=1)


def test_bad_beam_settings_are_refused():
    model = _model(vocab=8, seed=0)
    src, src_mask = _sources(8, [3], seed=0)
    for beam_size, n_best, alpha, named in (
        (0, 1, 0.6, "--beam-size"),
        (2, 3, 0.6, "n_best"),
        (2, 1, -0.5, "--alpha"),
    ):
        with pytest.raises(ValueError, match=named):
            beam_search(
                model,
                src,
                src_mask,
                5,
                DecodeConfig(beam_size=beam_size, alpha=alpha),
                n_best=n_best,
            )


def test_length_penalty_is_gnmt():
    assert length_penalty(1, 0.6) == 1.0
    assert length_penalty(7, 0.6) == pytest.approx(2**0.6)
    assert length_penalty(30, 0.0) == 1.0
    assert math.isclose(length_penalty(13, 1.0), 3.0)


def test_allowed_restricts_the_search_and_allowing_everything_changes_nothing():
    model = _model(vocab=12, seed=5, eos_bias=2.0)
    src, src_mask = _sources(12, [5, 7, 4], seed=8)
    limits = src_mask.sum(dim=(1, 2)) + 6
    settings = DecodeConfig(beam_size=3, alpha=0.6)
    free = beam_search(model, src, src_mask, limits, settings, n_best=3)
    everything = beam_search(
        model,
        src,
        src_mask,
        limits,
        settings,
        n_best=3,
        allowed=lambda i, t: list(range(12)),
    )
    assert [[h.tokens for h in s] for s in everything] == [
        [h.tokens for h in s] for s in free
    ]

    # each token above the last, <eos> after 2
    def rising(sentence: int, tokens: list[int]) -> list[int]:
        floor = tokens[-1] + 1 if tokens else 3 + sentence
        return list(range(floor, 12)) + ([EOS] if len(tokens) >= 2 else [])

    restricted = beam_search(
        model, src, src_mask, limits, settings, n_best=3, allowed=rising
    )
    for sentence, hyps in enumerate(restricted):
        for h in hyps:
            body = [t for t in h.tokens if t != EOS]
            assert (
                h.tokens[-1] == EOS
                and len(body) >= 2
                and body == sorted(set(body))
                and body[0] >= 3 + sentence
            )
            assert h.log_prob == pytest.approx(
                _sequence_log_prob(model, src[sentence : sentence + 1], h.tokens),
                abs=1e-4,
            )


def test_the_self_attention_cache_keeps_rows_by_index():
    from annotated_transformer.attention import MultiHeadedAttention

    torch.manual_seed(0)
    attention = MultiHeadedAttention(4, 16).eval()
    x = torch.randn(3, 40, 16)
    # a reordering that repeats a row and drops one, as beam search does
    order = torch.tensor([2, 0, 0])
    cache, outputs = KVCache(), []
    with torch.no_grad():
        for t in range(40):
            if t == 25:
                cache.select(order)
                x = x[order]
            outputs.append(
                attention(
                    x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache
                )
            )
        # the reordered rows, all at once
        whole = attention(x, x, x, subsequent_mask(40))
    assert cache.k.shape == (3, 4, 40, 4)
    torch.testing.assert_close(
        torch.cat(outputs[25:], dim=1), whole[:, 25:], rtol=0, atol=1e-6
    )
