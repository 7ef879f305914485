"""Data loading (§5.1): the corpora's readers, clear errors, the corpus registry, the
vocabulary, token batching."""

import gzip
import html
import multiprocessing
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from annotated_transformer import data
from annotated_transformer.data import DataError, TokenBatches
from annotated_transformer.speed import batchers, token_store
from annotated_transformer.text import corpora
from annotated_transformer.text.corpora import load_pairs


def test_read_parallel_reads_plain_and_gzip(tmp_path):
    (tmp_path / "a.en").write_text("one\ntwo\n", encoding="utf-8")
    with gzip.open(tmp_path / "a.de.gz", "wt", encoding="utf-8") as f:
        f.write("eins\nzwei\n")
    assert corpora.read_parallel(tmp_path / "a.en", tmp_path / "a.de.gz") == [
        ("one", "eins"),
        ("two", "zwei"),
    ]


def test_mismatched_line_counts_name_both_files(tmp_path):
    (tmp_path / "x.en").write_text("a\nb\nc\n")
    (tmp_path / "x.de").write_text("a\nb\n")
    with pytest.raises(DataError, match=r"x\.en has 3 lines but .*x\.de has 2"):
        corpora.read_parallel(tmp_path / "x.en", tmp_path / "x.de")


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "empty.en").write_text("")
    with pytest.raises(DataError, match="empty.en is empty"):
        corpora.read_lines(tmp_path / "empty.en")
    with pytest.raises(DataError, match="does not exist"):
        corpora.read_lines(tmp_path / "missing.en")


def test_undecodable_bytes_name_file_and_line(tmp_path):
    (tmp_path / "bad.de").write_bytes(b"gut\nauch gut\n" + b"schlecht \xff\xfe\n")
    with pytest.raises(DataError, match=r"bad\.de, line 3: not valid UTF-8"):
        corpora.read_lines(tmp_path / "bad.de")


def test_sgml_reader_decodes_entities(tmp_path):
    sgm = tmp_path / "t.sgm"
    sgm.write_text(
        '<srcset setid="x">\n<doc docid="d">\n<seg id="1">Tom &amp; Jerry '
        "&quot;hi&quot;</seg>\n"
        '<seg id="2">Zwei</seg>\n</doc>\n</srcset>\n'
    )
    assert corpora.read_sgml(sgm) == ['Tom & Jerry "hi"', "Zwei"]


def _wmt14_fixture(root, pairs):
    """The layouts the WMT14 loader reads: Parquet training files and a sacreBLEU
    cache."""
    train = root / "wmt14" / "de-en"
    train.mkdir(parents=True)
    table = pa.table({"translation": [{"de": de, "en": en} for en, de in pairs]})
    pq.write_table(table.slice(0, 3), train / "train-00000-of-00002.parquet")
    pq.write_table(table.slice(3), train / "train-00001-of-00002.parquet")
    cache = root / "wmt14" / "sacrebleu-cache" / "wmt14" / "full"
    cache.mkdir(parents=True)
    (cache / "wmt14_full.en-de.src").write_text("\n".join(en for en, _ in pairs) + "\n")
    (cache / "wmt14_full.en-de.ref").write_text("\n".join(de for _, de in pairs) + "\n")


def test_wmt14_from_parquet_and_sacrebleu_cache(tmp_path, synthetic_pairs):
    pairs = synthetic_pairs(5, seed=3)
    _wmt14_fixture(tmp_path, pairs)
    assert load_pairs("wmt14", "train", "en", "de", tmp_path) == pairs
    assert load_pairs("wmt14", "train", "de", "en", tmp_path) == [
        (de, en) for en, de in pairs
    ]
    assert load_pairs("wmt14", "test", "en", "de", tmp_path) == pairs


def test_a_test_set_missing_from_the_data_directory_comes_from_sacrebleus_cache(
    tmp_path, monkeypatch
):
    import sacrebleu.utils

    # sacreBLEU's own cache, not under the data directory
    elsewhere = tmp_path / "sacrebleu-home" / "wmt13"
    elsewhere.mkdir(parents=True)
    (elsewhere / "wmt13.en-de.src").write_text("One.\nTwo.\n")
    (elsewhere / "wmt13.en-de.ref").write_text("Eins.\nZwei.\n")
    asked = []
    monkeypatch.setattr(
        sacrebleu.utils,
        "get_source_file",
        lambda test_set, pair: (
            asked.append((test_set, pair)) or str(elsewhere / f"wmt13.{pair}.src")
        ),
    )
    monkeypatch.setattr(
        sacrebleu.utils,
        "get_reference_files",
        lambda test_set, pair: [str(elsewhere / f"wmt13.{pair}.ref")],
    )
    assert load_pairs("wmt14", "dev", "en", "de", tmp_path / "data") == [
        ("One.", "Eins."),
        ("Two.", "Zwei."),
    ]
    assert asked == [("wmt13", "en-de")]
    # nothing is written into the data directory
    assert not (tmp_path / "data").exists()


def test_wmt14_test_set_from_sgml(tmp_path):
    sgm = tmp_path / "wmt14" / "newstest2014-sgm"
    sgm.mkdir(parents=True)
    files = (
        ("newstest2014-deen-src.en.sgm", ["A &lt; B", "C"]),
        ("newstest2014-deen-ref.de.sgm", ["X", "Y"]),
    )
    for name, lines in files:
        segs = "".join(
            f'<seg id="{i}">{line}</seg>\n' for i, line in enumerate(lines, 1)
        )
        (sgm / name).write_text(f"<srcset>\n<doc>\n{segs}</doc>\n</srcset>\n")
    assert load_pairs("wmt14", "test", "en", "de", tmp_path) == [
        (html.unescape("A &lt; B"), "X"),
        ("C", "Y"),
    ]


def test_parquet_without_translation_column_is_refused(tmp_path):
    folder = tmp_path / "wmt14" / "de-en"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"text": ["x"]}), folder / "train-0.parquet")
    with pytest.raises(
        DataError, match="cannot be read as Parquet with a 'translation' column"
    ):
        load_pairs("wmt14", "train", "en", "de", tmp_path)


def test_missing_corpus_offline_says_what_to_fetch(tmp_path, monkeypatch):
    def offline(*args):
        raise OSError("network unreachable")

    # tests never touch the network
    for fetcher in ("_download", "_fetch_sacrebleu", "_fetch_hf_wmt14"):
        monkeypatch.setattr(corpora, fetcher, offline)
    with pytest.raises(DataError, match=r"multi30k/dataset.*train\.en\.gz.*put it in"):
        load_pairs("multi30k", "train", "en", "de", tmp_path)
    with pytest.raises(DataError, match="sacrebleu -t wmt14/full -l en-de"):
        load_pairs("wmt14", "test", "en", "de", tmp_path)
    with pytest.raises(DataError, match="wmt/wmt14"):
        load_pairs("wmt14", "train", "en", "de", tmp_path)
    with pytest.raises(DataError, match=r"statmt.org/europarl/v7/de-en.tgz"):
        load_pairs("europarl", "train", "en", "de", tmp_path)
    with pytest.raises(
        DataError, match="choose one of: multi30k, wmt14, europarl, figure, text"
    ):
        load_pairs("iwslt", "train", "en", "de", tmp_path)


def test_europarl_holds_out_the_last_thousand_of_its_first_twenty_thousand_pairs(
    tmp_path, monkeypatch
):
    """The splits from the full corpus, unpacked from a small stand-in of statmt.org's
    archive (tests never touch the network)."""
    import io
    import tarfile

    n = corpora.EUROPARL_FIRST + 500
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        for lang in ("en", "de"):
            text = "".join(f"{lang} {i}\n" for i in range(n)).encode()
            member = tarfile.TarInfo(f"europarl-v7.de-en.{lang}")
            member.size = len(text)
            tar.addfile(member, io.BytesIO(text))

    def download(url, target):
        assert url == corpora.EUROPARL_URL
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(archive.getvalue())

    monkeypatch.setattr(corpora, "_download", download)
    train = load_pairs("europarl", "train", "en", "de", tmp_path)
    valid = load_pairs("europarl", "valid", "de", "en", tmp_path)
    full = load_pairs("europarl", "full", "en", "de", tmp_path)
    assert len(train) == 19_000 and train[0] == ("en 0", "de 0")
    assert valid[0] == ("de 19000", "en 19000") and valid[-1] == (
        "de 19999",
        "en 19999",
    )
    assert len(full) == n - 1000 and ("en 19500", "de 19500") not in full
    assert full[19_000] == ("en 20000", "de 20000")
    expected = "the europarl corpus has the splits train, valid, full, not 'test'"
    with pytest.raises(DataError, match=expected):
        load_pairs("europarl", "test", "en", "de", tmp_path)
    with pytest.raises(DataError, match="DE-EN only"):
        load_pairs("europarl", "train", "en", "fr", tmp_path)


def test_real_europarl_sample_gives_the_figure_models_splits(shared_data):
    train = load_pairs("europarl", "train", "en", "de", shared_data)
    valid = load_pairs("europarl", "valid", "en", "de", shared_data)
    assert (len(train), len(valid)) == (19_000, 1_000)
    assert train[0] == (
        "Resumption of the session",
        "Wiederaufnahme der Sitzungsperiode",
    )
    import gzip

    sample = shared_data / "europarl-v7-sample"
    lines = {
        lang: gzip.open(sample / f"train.{lang}.gz", "rt").read().splitlines()
        for lang in ("en", "de")
    }
    assert valid[0] == (lines["en"][19_000], lines["de"][19_000])
    assert valid[-1] == (lines["en"][19_999], lines["de"][19_999])


def test_the_figure_corpus_adds_the_extra_folders_and_keeps_europarls_held_out_pairs(
    shared_data, capsys
):
    train = load_pairs("figure", "train", "en", "de", shared_data)
    said = capsys.readouterr().out
    counts = {}
    for folder in corpora.FIGURE_FOLDERS:
        path = shared_data / "extra-en-de" / folder / "train.en.gz"
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            counts[folder] = sum(1 for _ in lines)
        # none of these pairs shares a side with a held-out pair
        assert f"{counts[folder]:,} from {folder}" in said
    assert len(train) == 19_000 + sum(counts.values())
    assert f"figure corpus, train: {len(train):,} pairs" in said
    valid = load_pairs("figure", "valid", "en", "de", shared_data)
    assert valid == load_pairs("europarl", "valid", "en", "de", shared_data)
    added = {side for pair in train[19_000:] for side in pair}
    assert not {side for pair in valid for side in pair} & added
    with pytest.raises(DataError, match="has the splits train, valid, not"):
        load_pairs("figure", "test", "en", "de", shared_data)


def test_real_wmt14_test_sets(shared_data):
    test = load_pairs("wmt14", "test", "en", "de", shared_data)
    assert len(test) == 3003 and test[0] == (
        "Gutach: Increased safety for pedestrians",
        "Gutach: Noch mehr Sicherheit für Fußgänger",
    )
    assert len(load_pairs("wmt14", "dev", "en", "de", shared_data)) == 3000
    assert len(load_pairs("wmt14", "test", "en", "fr", shared_data)) == 3003
    assert len(load_pairs("wmt14", "sample", "en", "de", shared_data)) == 10000
    assert len(load_pairs("multi30k", "test", "en", "de", shared_data)) == 1000


def test_filtering_reports_what_it_drops(tmp_path, synthetic_pairs):
    pairs = synthetic_pairs(300, seed=0) + [
        ("", "leer"),
        ("the cat " * 40, "der katze " * 40),
    ]
    sp = corpora.train_shared_vocab(pairs, 60, tmp_path)
    kept, report = data.encode_pairs(sp, pairs, max_tokens=50)
    assert len(kept) == 300
    assert "kept 300 of 302 pairs (1 with an empty side, 1 over 50 tokens)" == report


def test_vocabulary_is_cached_by_content_and_settings(tmp_path, synthetic_pairs):
    pairs = synthetic_pairs(300, seed=0)
    first = corpora.train_shared_vocab(pairs, 60, tmp_path)
    files = sorted(tmp_path.glob("*.model"))
    mtime = files[0].stat().st_mtime_ns
    second = corpora.train_shared_vocab(pairs, 60, tmp_path)
    assert (
        sorted(tmp_path.glob("*.model")) == files
        and files[0].stat().st_mtime_ns == mtime
    )
    assert first.encode("the red cat") == second.encode("the red cat")
    corpora.train_shared_vocab(pairs, 70, tmp_path)  # other settings: another file
    corpora.train_shared_vocab(pairs[:-1], 60, tmp_path)  # other data: another file
    assert len(list(tmp_path.glob("*.model"))) == 3
    assert [first.id_to_piece(i) for i in range(4)] == ["<pad>", "<s>", "</s>", "<unk>"]


def test_token_batches_cover_each_pair_once_within_budget():
    src = [(i * 7) % 23 + 1 for i in range(500)]
    tgt = [(i * 5) % 19 + 2 for i in range(500)]
    batches = TokenBatches(src, tgt, max_tokens=120, seed=3).epoch(0)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:  # real tokens of each side within the budget...
        assert sum(src[i] for i in b) <= 120 and sum(tgt[i] for i in b) <= 120
    full = sum(
        1
        for b in batches
        if max(sum(src[i] for i in b), sum(tgt[i] for i in b)) > 120 - 23
    )
    # ...and filled up to it, except the last batch of a length
    assert full >= len(batches) - 2
    assert TokenBatches(src, tgt, 120, seed=3).epoch(0) == batches  # reproducible
    # reshuffled every epoch
    assert TokenBatches(src, tgt, 120, seed=3).epoch(1) != batches
    # an over-long pair gets a batch of its own
    assert TokenBatches([500], [3], 120).epoch(0) == [[0]]


def test_the_token_cache_holds_what_encode_pairs_keeps_and_gathers_the_same_batches(
    synthetic_pairs, tmp_path
):
    # one empty, one too long
    pairs = synthetic_pairs(500, seed=4) + [("", "leer"), ("word " * 60, "kurz")]
    sp = corpora.train_shared_vocab(pairs, 60, tmp_path / "vocab")
    kept, _ = data.encode_pairs(sp, pairs, max_tokens=40)
    chunks = [pairs[k : k + 128] for k in range(0, len(pairs), 128)]
    cache = token_store.token_cache(tmp_path / "cache", sp, chunks, max_tokens=40)
    assert len(cache) == len(kept) and [cache[i] for i in range(len(cache))] == kept
    assert cache.meta == {
        "dtype": "uint16",
        "pairs": 502,
        "kept": len(kept),
        "empty": 1,
        "too_long": 1,
    }
    lengths = data.pair_lengths(cache)
    assert lengths == ([len(s) + 1 for s, _ in kept], [len(t) + 1 for _, t in kept])
    for batches in (
        TokenBatches(*lengths, 200, seed=1),
        batchers.ShapedBatches(*lengths, 200, buckets=3, seed=1),
    ):
        # gathered from the map: the tensors collated from the lists
        for indices in batches.epoch(0):
            got, want = batches.collate(cache, indices), batches.collate(kept, indices)
            for name in ("src", "tgt_in", "tgt_out", "src_mask", "tgt_mask"):
                assert torch.equal(getattr(got, name), getattr(want, name)), name
            assert got.n_tokens == want.n_tokens


def test_the_token_cache_is_built_once_and_later_calls_map_it(
    synthetic_pairs, tmp_path
):
    pairs = synthetic_pairs(200, seed=5)
    sp = corpora.train_shared_vocab(pairs, 60, tmp_path / "vocab")
    folder = tmp_path / "cache"
    first = token_store.token_cache(folder, sp, [pairs])
    stamp = (folder / "src.ids").stat().st_mtime_ns

    def must_not_encode():
        raise AssertionError("the corpus was encoded a second time")
        yield

    # finds the finished cache and maps it
    second = token_store.token_cache(folder, sp, must_not_encode())
    assert (folder / "src.ids").stat().st_mtime_ns == stamp and second[7] == first[7]
    with pytest.raises(DataError, match="no pair is left"):
        token_store.token_cache(tmp_path / "none", sp, [[("", "")]])
    # a failed build leaves no cache that looks finished
    assert not (tmp_path / "none" / "meta.json").exists()


def _build_cache_in_a_process(folder, vocab, pairs, marks, holding, second) -> None:
    """Build the cache; the first process (``holding`` not yet set) says when it holds
    the lock and keeps it until the second process has started."""
    import sentencepiece as spm

    def chunks():
        with open(marks, "a") as f:
            f.write("encoding\n")
        holding.set()
        second.wait()
        yield pairs

    if holding.is_set():  # the second process: the first holds the lock now
        second.set()
    cache = token_store.token_cache(
        Path(folder), spm.SentencePieceProcessor(model_file=vocab), chunks()
    )
    assert len(cache) == len(pairs)


def test_of_two_processes_one_encodes_and_the_other_waits_and_maps(
    synthetic_pairs, tmp_path
):
    pairs = synthetic_pairs(100, seed=6)
    corpora.train_shared_vocab(pairs, 60, tmp_path / "vocab")
    vocab = str(next((tmp_path / "vocab").glob("*.model")))
    marks = tmp_path / "marks"
    context = multiprocessing.get_context("spawn")
    holding, second = context.Event(), context.Event()
    args = (str(tmp_path / "cache"), vocab, pairs, str(marks), holding, second)
    first = context.Process(target=_build_cache_in_a_process, args=args)
    first.start()
    assert holding.wait(timeout=600)  # the first process encodes, holding the lock
    later = context.Process(target=_build_cache_in_a_process, args=args)
    later.start()
    for process in (first, later):
        process.join(timeout=600)
    assert [process.exitcode for process in (first, later)] == [0, 0]
    # one of them encoded; the other only mapped
    assert marks.read_text().splitlines() == ["encoding"]


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="pinned host memory needs a GPU"
)
def test_a_batch_reaches_the_gpu_through_pinned_memory_unchanged():
    from annotated_transformer.data import Batch

    tgt = torch.tensor([[1, 5, 6, 2], [1, 7, 2, 0]])
    batch = Batch.from_tensors(torch.tensor([[4, 5, 2], [6, 2, 0]]), tgt, pad=0)
    moved = batch.to("cuda")
    torch.cuda.synchronize()
    for name in ("src", "tgt_in", "tgt_out", "src_mask", "tgt_mask"):
        assert getattr(moved, name).is_cuda and torch.equal(
            getattr(moved, name).cpu(), getattr(batch, name)
        )
    assert moved.n_tokens == batch.n_tokens == 5


def test_a_corrupt_gzip_file_is_a_one_line_error_that_names_it(tmp_path):
    good = gzip.compress(b"a line\n" * 1000)
    path = tmp_path / "train.en.gz"
    path.write_bytes(good[:20] + bytes(b ^ 0x55 for b in good[20:60]) + good[60:])
    with pytest.raises(DataError, match=f"{path} cannot be read"):
        corpora.read_lines(path)


def test_a_download_shows_its_progress_and_writes_the_whole_file(tmp_path, capsys):
    source = tmp_path / "archive.gz"
    source.write_bytes(bytes(range(256)) * 10_000)  # 2.56 MB, three chunks
    target = tmp_path / "cache" / "europarl" / "archive.gz"
    corpora._download(source.as_uri(), target)
    assert target.read_bytes() == source.read_bytes()
    assert not target.with_suffix(".gz.part").exists()
    progress = capsys.readouterr().err
    assert "downloading archive.gz" in progress and "2.56M" in progress
