"""The copy task end to end: batches, greedy decoding, training, the command line."""

import types

import pytest
import torch

from annotated_transformer import train
from annotated_transformer.copy_task import CopyTask, copy_accuracy, train_copy_task
from annotated_transformer.data import BOS, EOS, PAD, Batch
from annotated_transformer.decoding import greedy_decode, strip_special
from annotated_transformer.optimization import noam_rate


def test_batches_shift_the_target_and_mask_padding():
    src = torch.tensor([[5, 6, EOS, PAD]])
    tgt = torch.tensor([[BOS, 5, 6, EOS, PAD]])
    batch = Batch.from_tensors(src, tgt, pad=PAD)
    assert batch.tgt_in.tolist() == [[BOS, 5, 6, EOS]]
    assert batch.tgt_out.tolist() == [[5, 6, EOS, PAD]]
    assert batch.n_tokens == 3
    assert batch.src_mask.tolist() == [[[True, True, True, False]]]
    assert batch.tgt_mask[0].tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, True, False],
        [True, True, True, True],
    ]


def test_copy_samples_are_well_formed():
    task = CopyTask(n_symbols=5, min_len=2, max_len=6)
    src, tgt = task.sample(200, torch.Generator().manual_seed(0))
    for s, t in zip(src.tolist(), tgt.tolist()):
        body = s[: s.index(EOS)]
        assert 2 <= len(body) <= 6 and all(3 <= x < 8 for x in body)
        assert t[0] == BOS and t[1:] == s


def test_noam_rate_rises_then_decays():
    peak = noam_rate(4000, 512, 4000)
    assert noam_rate(2000, 512, 4000) == pytest.approx(peak / 2)
    assert noam_rate(16000, 512, 4000) == pytest.approx(peak / 2)
    assert peak == pytest.approx(512**-0.5 * 4000**-0.5)


class _Scripted(torch.nn.Module):
    """A stand-in model that emits a fixed token sequence per row, to test decoding
    control flow."""

    def __init__(self, scripts, vocab=10):
        super().__init__()
        self.scripts, self.vocab = scripts, vocab
        # greedy decoding reads scores before the softmax
        self.generator = types.SimpleNamespace(proj=self.scores)

    def encode(self, src, src_mask):
        return src  # (batch, src_len): each row holds its own row number

    def decode(self, memory, src_mask, ys, tgt_mask, cache=None):
        return memory[:, :1]  # the row numbers of the rows still in the batch

    def scores(self, rows):  # rows: (batch,) which script each row follows
        step = self._step
        self._step += 1
        out = torch.full((len(rows), self.vocab), -10.0)
        for i, row in enumerate(rows.tolist()):
            script = self.scripts[row]
            out[i, script[min(step, len(script) - 1)]] = 0.0
        return out

    _step = 0


def test_greedy_decoding_stops_at_end_of_sentence_per_row():
    model = _Scripted([[5, EOS, 7, 7, 7], [6, 6, 6, EOS, 7]])
    src = torch.arange(2).unsqueeze(1).expand(2, 3)
    out = greedy_decode(model, src, None, max_len=10, incremental=False)
    # stops as soon as both ended
    assert out.tolist() == [[5, EOS, PAD, PAD], [6, 6, 6, EOS]]
    assert strip_special(out, EOS, PAD) == [[5], [6, 6, 6]]


@pytest.mark.slow
def test_copy_task_learns_in_a_thousand_updates():
    task = CopyTask()
    # bounded by updates, not by the clock
    model, losses = train_copy_task(task, steps=1000, progress=False)
    assert len(losses) == 1000
    # from ~ln(13) to near the label-smoothing floor
    assert sum(losses[-20:]) / 20 < 0.7 < losses[0]
    accuracy = copy_accuracy(model, task, n=100, seed=2024)
    assert accuracy >= 0.95, (
        f"only {accuracy:.0%} of 100 held-out sequences copied exactly"
    )


def test_command_line_help_and_errors(capsys):
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for option in (
        "--task",
        "--max-steps",
        "--batch-tokens",
        "--warmup",
        "--seed",
        "--device",
    ):
        assert option in help_text
    assert train.main(["--task", "copy", "--max-steps", "0"]) == 2
    assert (
        "--max-steps must be an integer of at least 1, got 0" in capsys.readouterr().err
    )


def test_command_line_trains_and_reports(capsys):
    assert train.main(["--task", "copy", "--max-steps", "5", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "trained 5 updates" in out and "held-out exact match" in out
