"""The table of corpora (``corpora.CORPORA``): every entry is coherent, loads each of
its splits offline through its loader from files in the corpus's real layout, and is
what the commands, scoring and the presets read."""

import argparse
import gzip
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotated_transformer import config
from annotated_transformer.data import DataError
from annotated_transformer.text import corpora, scoring
from annotated_transformer.text.corpora import CORPORA, load_pairs


def write_lines(path: Path, lines: list[str]) -> None:
    """``lines`` as a UTF-8 file, gzipped when the name ends in .gz."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(line + "\n" for line in lines)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def write_pairs(en_path: Path, de_path: Path, pairs) -> None:
    write_lines(en_path, [en for en, _ in pairs])
    write_lines(de_path, [de for _, de in pairs])


def numbered(prefix: str, n: int, start: int = 0) -> list[tuple[str, str]]:
    return [(f"{prefix} en {i}", f"{prefix} de {i}") for i in range(start, start + n)]


# Each corpus's fixture writes files in the layout its source publishes and returns
# the pairs (English, German) that each split holds.


def multi30k_files(root: Path, synthetic_pairs) -> dict[str, list]:
    # the names of multi30k/dataset's data/task1/raw/ files
    upstream = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
    expected = {}
    for seed, (split, name) in enumerate(upstream.items()):
        expected[split] = synthetic_pairs(6, seed)
        folder = root / "multi30k"
        write_pairs(folder / f"{name}.en.gz", folder / f"{name}.de.gz", expected[split])
    return expected


def wmt14_files(root: Path, synthetic_pairs) -> dict[str, list]:
    """Hugging Face's Parquet training files, the OpenNMT sample, and the test sets as
    plain gzip files."""
    train, sample, dev, test = (synthetic_pairs(5, seed) for seed in range(4))
    folder = root / "wmt14"
    (folder / "de-en").mkdir(parents=True)
    records = [{"de": de, "en": en} for en, de in train]
    pq.write_table(
        pa.table({"translation": records}),
        folder / "de-en" / "train-00000-of-00001.parquet",
    )
    write_pairs(
        folder / "train-sample" / "src-train.txt",
        folder / "train-sample" / "tgt-train.txt",
        sample,
    )
    plain = folder / "plain"
    write_pairs(plain / "newstest2013.en.gz", plain / "newstest2013.de.gz", dev)
    write_pairs(
        plain / "newstest2014-deen.en.gz", plain / "newstest2014-deen.de.gz", test
    )
    return {"train": train, "sample": sample, "dev": dev, "test": test}


def europarl_files(root: Path, synthetic_pairs) -> dict[str, list]:
    """The two files of statmt.org's archive, unpacked: 20,000 pairs and 50 more."""
    pairs = numbered("europarl", 20_050)
    folder = root / "europarl-v7"
    write_pairs(folder / "europarl-v7.de-en.en", folder / "europarl-v7.de-en.de", pairs)
    return {
        "train": pairs[:19_000],
        "valid": pairs[19_000:20_000],
        "full": pairs[:19_000] + pairs[20_000:],
    }


def figure_files(root: Path, synthetic_pairs) -> dict[str, list]:
    """Europarl, and one folder of text for each of the added sources."""
    europarl = europarl_files(root, synthetic_pairs)
    train = list(europarl["train"])
    for folder in corpora.FIGURE_FOLDERS:
        more = numbered(folder, 3)
        path = root / "extra-en-de" / folder
        write_pairs(path / "train.en.gz", path / "train.de.gz", more)
        train += more
    return {"train": train, "valid": europarl["valid"]}


def text_files(root: Path, synthetic_pairs) -> dict[str, list]:
    expected = {}
    for seed, split in enumerate(("train", "valid", "test")):
        expected[split] = synthetic_pairs(4, seed)
        write_pairs(root / f"{split}.en", root / f"{split}.de", expected[split])
    return expected


FIXTURES = {
    "multi30k": multi30k_files,
    "wmt14": wmt14_files,
    "europarl": europarl_files,
    "figure": figure_files,
    "text": text_files,
}


@pytest.fixture
def offline(monkeypatch):
    """Every download fails the test: the files must be found where they are."""

    def download(*args):
        raise AssertionError(f"a download was attempted: {args}")

    for fetcher in ("_download", "_fetch_sacrebleu", "_fetch_hf_wmt14"):
        monkeypatch.setattr(corpora, fetcher, download)


def test_every_corpus_has_a_fixture_and_the_table_is_keyed_by_name():
    assert set(FIXTURES) == set(CORPORA)
    assert [corpus.name for corpus in CORPORA.values()] == list(CORPORA)


@pytest.mark.parametrize("name", list(CORPORA))
def test_every_split_loads_offline_in_both_directions(
    name, tmp_path, synthetic_pairs, offline
):
    corpus = CORPORA[name]
    expected = FIXTURES[name](tmp_path, synthetic_pairs)
    # a corpus with fixed splits has exactly those; a text corpus has its files'
    assert set(expected) == set(corpus.splits or expected)
    src, tgt = corpus.languages or ("en", "de")
    for split, pairs in expected.items():
        assert load_pairs(name, split, src, tgt, tmp_path) == pairs, split
        assert load_pairs(name, split, tgt, src, tmp_path) == [
            (b, a) for a, b in pairs
        ], split
    if corpus.splits:
        listed = ", ".join(corpus.splits)
        with pytest.raises(DataError, match=f"has the splits {listed}, not 'nosuch'"):
            load_pairs(name, "nosuch", src, tgt, tmp_path)
    else:  # any split its files name, and a clear error when they are missing
        with pytest.raises(DataError, match=r"nosuch\.en and .*nosuch\.de"):
            load_pairs(name, "nosuch", src, tgt, tmp_path)


@pytest.mark.parametrize("name", list(CORPORA))
def test_every_entry_is_coherent(name):
    corpus = CORPORA[name]
    # a corpus's name becomes part of a run's file names: config checks it so
    assert config.PLAIN_NAME.fullmatch(name)
    assert len(set(corpus.splits)) == len(corpus.splits)
    assert {t.split for t in corpus.test_sets} <= set(corpus.splits)
    assert corpus.sample is None or corpus.sample in corpus.splits
    if corpus.languages is not None:
        src, tgt = corpus.languages
        assert src != tgt and all(config.PLAIN_NAME.fullmatch(x) for x in (src, tgt))
    assert corpus.about and callable(corpus.load)


def test_test_set_names_are_unique_and_known_to_scoring_and_to_sacrebleu():
    from sacrebleu.dataset import DATASETS

    tests = [(c, t) for c in CORPORA.values() for t in c.test_sets]
    names = [t.name for _, t in tests]
    aliases = [t.sacrebleu for _, t in tests if t.sacrebleu]
    assert len(set(names + aliases)) == len(names + aliases)
    for corpus, test in tests:
        assert scoring.TEST_SETS[test.name] == (corpus.name, test.split)
        if test.sacrebleu:
            assert scoring.TEST_SET_ALIASES[test.sacrebleu] == test.name
            # sacreBLEU has these sentences for the corpus's language pair
            assert "-".join(corpus.languages) in DATASETS[test.sacrebleu].langpairs
    assert len(scoring.TEST_SETS) == len(tests)
    assert sorted(scoring.TEST_SET_ALIASES) == sorted(aliases)


def options(parser: argparse.ArgumentParser, option: str) -> list:
    """The choices of every ``option`` of ``parser`` and its sub-commands."""
    found, parsers = [], [parser]
    while parsers:
        for action in parsers.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
            elif option in action.option_strings:
                found.append(list(action.choices))
    return found


def test_the_commands_offer_the_tables_corpora_and_test_sets():
    from annotated_transformer import benchmark, evaluate, train

    names = list(CORPORA)
    assert options(train.build_parser(), "--corpus") == [names]
    assert options(benchmark.build_parser(), "--corpus") == [names]
    sacrebleu_names = [t.sacrebleu for c in CORPORA.values() for t in c.test_sets]
    assert options(evaluate.build_parser(), "--test-set") == [
        [t.name for c in CORPORA.values() for t in c.test_sets]
        + [n for n in sacrebleu_names if n]
    ]


def preset_runs() -> dict[str, config.RunConfig]:
    runs = {name: run for name, (_, run) in config.RUN_PRESETS.items()}
    runs.update({f"table3-{k}": v["run"] for k, v in config.TABLE3_SIZES.items()})
    runs["parsing"] = config.PARSING_RUN
    return runs


@pytest.mark.parametrize("preset", sorted(preset_runs()))
def test_every_preset_names_a_corpus_its_splits_and_its_languages(preset):
    run = preset_runs()[preset]
    corpus = CORPORA[run.corpus]
    if corpus.splits:
        splits = {run.train_split, run.valid_split, run.test_split}
        assert splits <= set(corpus.splits)
    if corpus.languages:
        assert {run.src_lang, run.tgt_lang} == set(corpus.languages)


def test_a_benchmark_reads_a_corpus_sample_in_place_of_its_training_split(
    tmp_path, monkeypatch
):
    """``benchmark --random-weights`` trains its vocabulary on the corpus's sample
    (WMT14's 10,000 pairs), or on the training split of a corpus without one."""
    from annotated_transformer.measure import decoding

    read = []
    monkeypatch.setattr(
        corpora, "load_pairs", lambda corpus, split, *rest: read.append(split) or []
    )
    monkeypatch.setattr(corpora, "train_shared_vocab", _stop)
    for preset, expected in (("big", "sample"), ("multi30k", "train")):
        args = argparse.Namespace(random_weights=preset, data_dir=tmp_path)
        with pytest.raises(_Stopped):
            decoding.decoding_model(args, tmp_path)
        assert read.pop() == expected
    assert [c.sample for c in CORPORA.values() if c.sample] == ["sample"]


class _Stopped(Exception):
    pass


def _stop(*args):
    raise _Stopped


def test_every_test_set_and_sample_loads_offline_from_the_real_data(
    shared_data, offline
):
    """The test sets that scoring names, and the samples that benchmarks read, are in
    the data directory in both directions."""
    for corpus in CORPORA.values():
        splits = [t.split for t in corpus.test_sets] + [corpus.sample] * bool(
            corpus.sample
        )
        for split in splits:
            pairs = load_pairs(corpus.name, split, *corpus.languages, shared_data)
            assert pairs, (corpus.name, split)
            reverse = load_pairs(
                corpus.name, split, *reversed(corpus.languages), shared_data
            )
            assert reverse == [(b, a) for a, b in pairs]


def test_the_guides_data_section_names_every_corpus():
    guide = (Path(__file__).resolve().parents[1] / "docs/guide.md").read_text("utf-8")
    section = guide.split("\n## Data\n", 1)[1].split("\n## ", 1)[0]
    assert [name for name in CORPORA if f"(`{name}`" not in section] == []
