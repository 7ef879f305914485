"""The FLOP count, the torch.nn.Transformer reference, fused Adam, the CTranslate2
exporter and the benchmark command's checks."""

import random

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from annotated_transformer import benchmark, data
from annotated_transformer.config import POSITIONAL_KINDS, TransformerConfig
from annotated_transformer.data import Batch
from annotated_transformer.decoding import KVCache, greedy_decode, strip_special
from annotated_transformer.measure.flops import (
    batch_lengths,
    forward_flops,
    training_flops,
)
from annotated_transformer.measure.performance import matrix_flops
from annotated_transformer.measure.reference import TorchTransformer, copy_weights
from annotated_transformer.model import make_model
from annotated_transformer.optimization import (
    batch_loss,
    label_smoothed_loss,
    make_optimizer,
)
from annotated_transformer.speed import batchers, choice, loss_chunks
from annotated_transformer.speed.batchers import compiled
from annotated_transformer.text import corpora

TINY = TransformerConfig(
    vocab_size=120, n_layers=2, d_model=32, d_ff=64, n_heads=4, dropout=0.0
)


def _batch(batch: int, src_len: int, tgt_len: int, seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    return Batch.from_tensors(
        torch.randint(4, 120, (batch, src_len), generator=g),
        torch.randint(4, 120, (batch, tgt_len + 1), generator=g),
        pad=0,
    )


@pytest.mark.parametrize("config", [TINY, TINY.replace(n_heads=2, d_k=8, d_v=24)])
def test_flop_count_equals_pytorchs_counter(config):
    torch.manual_seed(0)
    model = make_model(config)
    b = _batch(3, 7, 5)  # no padding: every position is real
    with FlopCounterMode(display=False) as forward:
        model.generator.proj(model(b.src, b.tgt_in, b.src_mask, b.tgt_mask))
    assert forward.get_total_flops() == forward_flops(
        config, 21, 15, 3 * 49, 3 * 25, 3 * 35
    )
    with FlopCounterMode(display=False) as both:
        model.generator.proj(
            model(b.src, b.tgt_in, b.src_mask, b.tgt_mask)
        ).sum().backward()
    assert both.get_total_flops() == training_flops(config, [7] * 3, [5] * 3)


def test_matrix_flops_of_cached_decoding_steps_match_the_products_they_must_make():
    torch.manual_seed(0)
    model, (rows, src_len, steps) = make_model(TINY).eval(), (3, 7, 4)
    d, d_ff, vocab = TINY.d_model, TINY.d_ff, TINY.vocab_size
    src = torch.randint(4, 120, (rows, src_len))
    src_mask = (src != 0).unsqueeze(-2)
    memory = model.encode(src, src_mask)
    ys = torch.randint(4, 120, (rows, steps))

    def decode():
        with torch.no_grad():
            cache = [(KVCache(), KVCache(fixed=True)) for _ in model.decoder.layers]
            for t in range(1, steps + 1):
                model.generator.proj(
                    model.decode(memory, src_mask, ys[:, :t], None, cache)[:, -1]
                )

    per_layer = (
        sum(
            2 * rows * d * d * 6  # self q, k, v, out; cross q, out: every step
            # q kᵀ and weights · v over the t positions so far
            + 4 * rows * t * d
            + 4 * rows * src_len * d  # the same over the source
            + 4 * rows * d * d_ff  # feed-forward
            # source keys, values: once
            for t in range(1, steps + 1)
        )
        + 4 * rows * src_len * d * d
    )
    generator = steps * 2 * rows * d * vocab
    assert matrix_flops(decode) == TINY.n_layers * per_layer + generator


def test_reference_computes_the_same_function():
    torch.manual_seed(0)
    ours, reference = make_model(TINY).eval(), TorchTransformer(TINY).eval()
    copy_weights(ours, reference)
    b = _batch(3, 9, 7, seed=1)
    b = Batch.from_tensors(
        b.src.masked_fill(torch.arange(9) >= 6, 0),
        torch.cat([b.tgt_in, b.tgt_out[:, -1:]], 1)
        # padding on both sides
        .masked_fill(torch.arange(8) >= 6, 0),
        pad=0,
    )
    with torch.no_grad():
        a = ours(b.src, b.tgt_in, b.src_mask, b.tgt_mask)
        r = reference(b.src, b.tgt_in, b.src_mask, b.tgt_mask)
    real = b.tgt_out != 0
    assert real.sum() < real.numel()
    torch.testing.assert_close(a[real], r[real], rtol=1e-4, atol=1e-5)
    # the stock reference has dropout on attention weights and in the FFN; the matched
    # one does not
    stock = TorchTransformer(TINY.replace(dropout=0.1), matched_dropout=False)
    matched = TorchTransformer(TINY.replace(dropout=0.1))
    assert stock.transformer.encoder.layers[0].self_attn.dropout == 0.1
    assert matched.transformer.encoder.layers[0].self_attn.dropout == 0.0
    assert isinstance(matched.transformer.decoder.layers[0].dropout, torch.nn.Identity)


def test_fused_adam_takes_the_same_steps():
    finals = []
    for fused in (False, True):
        torch.manual_seed(0)
        model = make_model(TINY)
        optimizer, scheduler = make_optimizer(
            model, TINY.d_model, warmup=10, fused=fused
        )
        for step in range(5):
            b = _batch(4, 6, 6, seed=step)
            logits = model.generator.proj(
                model(b.src, b.tgt_in, b.src_mask, b.tgt_mask)
            )
            label_smoothed_loss(logits, b.tgt_out, 0, 0.1).backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
        # Key biases are left out: they add the same score to every key of a query,
        # which the softmax cancels, so their gradient is rounding noise, and Adam with
        # ε = 1e-9 turns noise into full steps.
        finals.append(
            torch.cat(
                [
                    p.flatten()
                    for name, p in model.named_parameters()
                    if not name.endswith("w_k.bias")
                ]
            )
        )
    torch.testing.assert_close(finals[0], finals[1], rtol=1e-5, atol=1e-6)


def test_ctranslate2_export_decodes_the_same_tokens(tmp_path, synthetic_pairs):
    import ctranslate2

    from annotated_transformer.speed.ct2 import write_ctranslate2

    pairs = synthetic_pairs(300, 0)
    sp = corpora.train_shared_vocab(pairs, 60, tmp_path / "vocab")
    torch.manual_seed(0)
    model = make_model(TINY.replace(vocab_size=60))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    encoded, _ = data.encode_pairs(sp, pairs)
    # a few updates, so that outputs end with </s> of their own accord
    for step in range(60):
        b = data.collate(encoded, [(step * 32 + i) % len(encoded) for i in range(32)])
        logits = model.generator.proj(model(b.src, b.tgt_in, b.src_mask, b.tgt_mask))
        label_smoothed_loss(logits, b.tgt_out, 0, 0.0).backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    folder = write_ctranslate2(model, sp, tmp_path / "ct2")
    translator = ctranslate2.Translator(
        str(tmp_path / "ct2"), device="cpu", intra_threads=1
    )
    sentences = [s for s, _ in synthetic_pairs(20, 1)]
    ids = sp.encode(sentences)
    src = data.pad_rows([x + [data.EOS] for x in ids])
    src_mask = (src != data.PAD).unsqueeze(-2)
    limits = src_mask.sum(dim=(1, 2)) + 10
    ours = strip_special(
        greedy_decode(model, src, src_mask, limits),
        data.EOS,
        data.PAD,
    )
    results = translator.translate_batch(
        [sp.encode(s, out_type=str) for s in sentences],
        beam_size=1,
        max_decoding_length=int(limits.max()),
    )
    theirs = [
        [sp.piece_to_id(p) for p in r.hypotheses[0]][:limit]
        for r, limit in zip(results, limits.tolist())
    ]
    assert ours == theirs
    # some outputs end by themselves
    assert any(len(t) < limit for t, limit in zip(ours, limits.tolist()))
    # The per-step timing makes both engines run exactly the steps asked for, whatever
    # the model prefers.
    from annotated_transformer.measure.decoding import step_decoder

    for n in (1, 7):
        assert [
            len(r.hypotheses[0])
            for r in step_decoder(sentences[0], sp, translator=translator)(3, n)
        ] == [n] * 3
        assert step_decoder(sentences[0], sp, model)(3, n).shape == (3, n)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="holds other files"):
        write_ctranslate2(model, sp, tmp_path / "other")
    # a model.bin beside them does not make the folder one to replace
    (tmp_path / "other" / "model.bin").write_bytes(b"mine")
    (tmp_path / "other" / "sub").mkdir()
    (tmp_path / "other" / "sub" / "keep.txt").write_text("keep me too")
    with pytest.raises(ValueError, match="holds other files"):
        write_ctranslate2(model, sp, tmp_path / "other")
    assert (tmp_path / "other" / "notes.txt").read_text() == "keep me"
    assert (tmp_path / "other" / "sub" / "keep.txt").read_text() == "keep me too"
    # a folder this package wrote is replaced
    first = sorted(p.name for p in folder.iterdir())
    assert write_ctranslate2(model, sp, folder) == folder
    assert sorted(p.name for p in folder.iterdir()) == first


def test_benchmark_refuses_bad_numbers_naming_the_option(capsys):
    assert benchmark.main(["train", "--steps", "0"]) == 2
    assert "--steps must be an integer of at least 1, got 0" in capsys.readouterr().err
    assert benchmark.main(["decode", "--limit", "-1"]) == 2
    assert "--limit must be an integer of at least 0, got -1" in capsys.readouterr().err
    # every one of several values is checked
    assert benchmark.main(["decode", "--beam", "4", "0"]) == 2
    assert (
        "--beam-size must be an integer of at least 1, got 0" in capsys.readouterr().err
    )
    assert benchmark.main(["decode", "--step-batches", "16", "0"]) == 2
    assert (
        "--step-batches must be an integer of at least 1, got 0"
        in capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        benchmark.main(["train", "--paths", "nonsense"])


def test_cache_timing_reports_the_repeats_it_made(capsys):
    argv = ["cache", "--length", "2", "--src-len", "2", "--batch", "1", "--repeat", "1"]
    assert benchmark.main(argv) == 0
    assert "best of 1," in capsys.readouterr().out


def _lengths(n: int, seed: int = 0) -> tuple[list[int], list[int]]:
    """Source and target lengths (with <eos>) shaped like a corpus's: mostly short, a
    long tail."""
    g = torch.Generator().manual_seed(seed)
    src = (torch.distributions.LogNormal(2.6, 0.45).sample((n,)).clamp(2, 90)).long()
    tgt = (
        (src.float() * torch.empty(n).uniform_(0.8, 1.3, generator=g))
        .long()
        .clamp(2, 100)
    )
    return src.tolist(), tgt.tolist()


def test_bucket_lengths_leave_the_least_padding():
    import itertools
    import random

    rng = random.Random(0)
    for _ in range(200):
        lengths = [rng.randint(1, 15) for _ in range(rng.randint(1, 25))]
        buckets = rng.randint(1, 4)
        chosen = batchers.bucket_lengths(lengths, buckets)

        def padding(edges, lengths=lengths):
            return sum(min(e for e in edges if e >= n) - n for n in lengths)

        values = sorted(set(lengths))
        best = min(
            padding({*c, max(lengths)})
            for r in range(min(buckets, len(values)))
            # every choice of the other bucket lengths
            for c in itertools.combinations(values, r)
        )
        assert (
            len(chosen) <= buckets
            and max(lengths) in chosen
            and padding(chosen) == best
        )


def test_shaped_batches_hold_every_sentence_once_in_a_few_shapes_within_budget():
    src, tgt = _lengths(3000)
    src[7], tgt[7] = 400, 30  # one pair longer than the budget
    batching = batchers.ShapedBatches(src, tgt, max_tokens=300, buckets=6, seed=1)
    pairs = [([5] * (s - 1), [6] * (t - 1)) for s, t in zip(src, tgt)]
    for epoch in range(2):
        batches = batching.epoch(epoch)
        # each sentence once per epoch
        assert sorted(i for b in batches for i in b) == list(range(3000))
        shapes = set()
        for b in batches:
            rows, src_len, tgt_len = batching.shape_of(b)
            assert len(b) <= rows and all(
                src[i] <= src_len and tgt[i] <= tgt_len for i in b
            )
            # only the over-long pair breaks it
            assert rows * max(src_len, tgt_len) <= 300 or rows == 1
            batch = batching.collate(pairs, b)
            assert batch.src.shape == (rows, src_len) and batch.tgt_in.shape == (
                rows,
                tgt_len,
            )
            # placeholder rows carry no target token
            assert batch.n_tokens == sum(tgt[i] for i in b)
            shapes.add((batch.src.shape, batch.tgt_in.shape))
        assert len(shapes) == len(batching.shapes) == 6
    # reproducible
    assert batching.epoch(0) == batchers.ShapedBatches(src, tgt, 300, 6, seed=1).epoch(
        0
    )
    assert batching.epoch(0) != batching.epoch(1)  # reshuffled every epoch


def test_placeholder_rows_and_padding_change_no_loss():
    torch.manual_seed(0)
    model = make_model(TINY).eval()
    src, tgt = _lengths(60, seed=2)
    pairs = [
        (
            torch.randint(4, 120, (s - 1,)).tolist(),
            torch.randint(4, 120, (t - 1,)).tolist(),
        )
        for s, t in zip(src, tgt)
    ]
    batching = batchers.ShapedBatches(src, tgt, max_tokens=400, buckets=3)
    for indices in batching.epoch(0):
        exact, shaped = data.collate(pairs, indices), batching.collate(pairs, indices)
        assert shaped.src.numel() >= exact.src.numel()
        with torch.no_grad():
            losses = [
                label_smoothed_loss(
                    model.generator(model(b.src, b.tgt_in, b.src_mask, b.tgt_mask)),
                    b.tgt_out,
                    data.PAD,
                    0.1,
                    "sum",
                )
                for b in (exact, shaped)
            ]
        assert losses[1] == pytest.approx(losses[0].item(), rel=1e-5)


def test_a_compiled_model_compiles_once_per_fixed_shape():
    compilations = []

    # runs the captured graph as it is, counting captures
    def counting_backend(graph, example_inputs):
        compilations.append(
            [tuple(x.shape) for x in example_inputs if isinstance(x, torch.Tensor)]
        )
        return graph.forward

    torch.manual_seed(0)
    model = make_model(TINY).train()
    forward = compiled(model, shapes=4, backend=counting_backend)
    src, tgt = _lengths(400, seed=3)
    pairs = [([5] * (s - 1), [6] * (t - 1)) for s, t in zip(src, tgt)]
    batching = batchers.ShapedBatches(src, tgt, max_tokens=600, buckets=4)
    batches = [
        batching.collate(pairs, b) for b in batching.epoch(0) + batching.epoch(1)
    ]
    for b in batches:  # two epochs of updates' forward and backward passes
        forward(b.src, b.tgt_in, b.src_mask, b.tgt_mask).float().pow(
            2
        ).mean().backward()
    assert len({(b.src.shape, b.tgt_in.shape) for b in batches}) == 4
    assert len(compilations) == 4  # once per shape, never again in the second epoch


def test_the_chunked_loss_equals_the_plain_one_at_the_base_vocabulary():
    """Loss and gradients (of the states and of the projection) in chunks of 32
    positions, against the plain loss on the whole (positions, 37,000) scores."""
    torch.manual_seed(0)
    proj = torch.nn.Linear(16, 37000, bias=False)
    target = torch.randint(4, 37000, (3, 40))
    target[0, 30:] = data.PAD
    target[2, 5:] = data.PAD
    found = []
    for loss_of in (
        lambda states: label_smoothed_loss(proj(states), target, data.PAD, 0.1, "sum"),
        lambda states: loss_chunks.ChunkedLoss(32).from_states(
            proj, states, target, data.PAD, 0.1
        ),
    ):
        states = torch.randn(3, 40, 16, generator=torch.Generator().manual_seed(1))
        states.requires_grad_(True)
        proj.zero_grad()
        loss = loss_of(states)
        loss.backward()
        found.append((loss.detach(), states.grad, proj.weight.grad.clone()))
    for plain, chunked in zip(*found):
        torch.testing.assert_close(chunked, plain, rtol=1e-5, atol=1e-6)


def test_the_chunked_loss_keeps_no_scores_for_the_backward_pass():
    """What autograd keeps between the passes: the plain loss keeps several tensors
    of all the scores; the chunked one no more than one chunk's scores."""
    proj = torch.nn.Linear(16, 5000, bias=False)
    states = torch.randn(4, 64, 16, requires_grad=True)
    target = torch.randint(4, 5000, (4, 64))
    scores_bytes = 4 * 64 * 5000 * 4  # float32

    def kept_bytes(loss_of) -> int:
        kept = []

        def keep(t):
            kept.append(t.numel() * t.element_size())
            return t

        with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
            loss_of()
        return sum(kept)

    plain = kept_bytes(lambda: label_smoothed_loss(proj(states), target, 0, 0.1))
    chunked = loss_chunks.ChunkedLoss(16)
    in_chunks = kept_bytes(
        lambda: chunked.from_states(proj, states, target, data.PAD, 0.1)
    )
    assert plain >= 2 * scores_bytes
    assert in_chunks < scores_bytes / 4  # one chunk's scores are a quarter


def test_an_update_with_the_loss_in_chunks_makes_the_same_step():
    from annotated_transformer.config import RunConfig
    from annotated_transformer.running import trainer

    weights = []
    for fast in (choice.FastPaths(), choice.FastPaths(loss_chunk=5)):
        torch.manual_seed(0)
        model = make_model(TINY)
        update = trainer.make_update(model, TINY, RunConfig(), fast)
        assert isinstance(update.loss_function, loss_chunks.ChunkedLoss) == bool(
            fast.loss_chunk
        )
        update([_batch(3, 6, 7)])
        weights.append(torch.cat([p.flatten() for p in model.parameters()]))
    torch.testing.assert_close(weights[1], weights[0], rtol=1e-5, atol=1e-6)


def _random_pairs(count: int, longest: int, seed: int = 0) -> list:
    """Pairs whose two sides have about the same length, as translations do, mostly
    far shorter than the longest."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        n = min(longest, 1 + int(rng.expovariate(4 / longest)))
        m = max(1, min(longest, n + rng.randint(-2, 2)))
        pairs.append(tuple([rng.randint(4, 119) for _ in range(k)] for k in (n, m)))
    return pairs


def test_packed_batches_hold_every_pair_once_in_one_shape_with_little_padding():
    pairs = _random_pairs(2000, 40)
    lengths = data.pair_lengths(pairs)
    packed = batchers.PackedBatches(*lengths, max_tokens=2000)
    rows, length, _ = packed.shape
    assert length == max(*lengths[0], *lengths[1]) and rows == 2000 // length
    for epoch in (0, 1):
        order = packed.epoch(epoch)
        assert sorted(i for b in order for i in b) == list(range(len(pairs)))
        batches = [packed.collate(pairs, b) for b in order]
        assert {(b.src.shape, b.tgt_in.shape) for b in batches} == {
            ((rows, length), (rows, length))
        }
        # every target token once, in full rows but the last batch's
        real = sum(b.n_tokens for b in batches[:-1])
        assert real == sum(lengths[1][i] for b in order[:-1] for i in b)
        assert 1 - real / sum(b.tgt_out.numel() for b in batches[:-1]) < 0.05
    assert packed.epoch(0) != packed.epoch(1)  # a new order each epoch


@pytest.mark.parametrize(
    "variant",
    [
        *({"positional": kind} for kind in POSITIONAL_KINDS),
        {"fused_attention": True},
        {"norm_first": True},
    ],
)
def test_a_packed_batch_gives_the_padded_batches_loss_and_gradients(variant):
    """The same pairs as packed rows and as padded rows (one sentence each), through
    the model's one forward path: the summed loss and every gradient agree, for every
    kind of positions."""
    pairs = _random_pairs(12, 9, seed=1)
    packed = batchers.PackedBatches(*data.pair_lengths(pairs), max_tokens=40)
    config = TINY.replace(**variant)
    found = []
    for batch_of in (data.collate, packed.collate):
        torch.manual_seed(0)
        model = make_model(config)
        total = 0.0
        for indices in packed.epoch(0):
            loss = batch_loss(model, batch_of(pairs, indices), 0.1, data.PAD)
            loss.backward()
            total += loss.item()
        grads = [p.grad for p in model.parameters()]
        found.append((total, grads))
    (padded, padded_grads), (in_rows, packed_grads) = found
    assert in_rows == pytest.approx(padded, rel=1e-6)
    for a, b in zip(padded_grads, packed_grads):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)


def test_packed_rows_count_each_sentence_as_padded_rows_do():
    pairs = _random_pairs(30, 12, seed=2)
    packed = batchers.PackedBatches(*data.pair_lengths(pairs), max_tokens=80)
    for indices in packed.epoch(0):
        in_rows = batch_lengths([packed.collate(pairs, indices)])
        one_each = batch_lengths([data.collate(pairs, indices)])
        assert in_rows == one_each


def test_packing_is_refused_where_it_cannot_run(capsys):
    argv = ["train", "--pack", "--steps", "1", "--no-progress"]
    assert benchmark.main([*argv, "--paths", "torch"]) == 2
    assert "--pack times our model's paths" in capsys.readouterr().err
    assert benchmark.main([*argv, "--paths", "fast", "--buckets", "4"]) == 2
