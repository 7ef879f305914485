"""The prose check: chapters state measured numbers only through cells."""

import json
import re
from pathlib import Path

from conftest import load_tool

ROOT = Path(__file__).resolve().parents[1]
check = load_tool("check_prose_numbers")
prose_lines = load_tool("book_references").prose_lines
PREFACE = ROOT / "book" / "00_preface.md"

HEADER = (
    "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n# A "
    "chapter\n\n"
)


def test_typed_numbers_are_found_and_computed_ones_are_not(tmp_path):
    chapter = tmp_path / "01_x.md"
    chapter.write_text(
        HEADER
        + (
            "Beam search adds a BLEU point (34.09 to 35.26 on test2016). The cache is "
            "6.5 times faster.\nIt is a 7.6M-parameter model. Averaging adds "
            "{eval}`glued.gain` BLEU, the paper reports 27.3 BLEU.\nThe cache is "
            "{eval}`glued.speedup` times faster, and the model has "
            "{eval}`glued.params` "
            "parameters.\n\n```{code-cell} ipython3\nprint('BLEU 12.34, 9.9x "
            "faster')\n```\n"
        )
    )
    found = check.typed_numbers(chapter)
    assert len(found) == 3, found
    assert "a BLEU score typed by hand (34.09, 35.26)" in found[0]
    assert "a speed-up typed by hand (6.5 times)" in found[1]
    assert "a parameter count typed by hand (7.6M)" in found[2]


def test_the_book_states_no_measured_number_by_hand():
    assert check.main(ROOT) == 0


def test_the_default_runs_cost_is_stated_once_from_the_stored_runs():
    """The README and the Makefile state the cost that the preface and chapter 13 glue
    from book/measured."""
    from annotated_transformer.measure.performance import default_run_cost

    cost = default_run_cost(ROOT / "book" / "measured")
    assert (
        "PFLOP of training: about " in cost
        and "minutes on a 2-core CPU that trained at " in cost
    )
    for name in ("README.md", "Makefile"):
        text = " ".join(
            (ROOT / name).read_text(encoding="utf-8").replace("#", " ").split()
        )
        assert f"took {cost}" in text, (
            f"{name} does not say the stored run took {cost!r}"
        )
    for chapter in ("00_preface.md", "13_real_world_example.md"):
        assert "default_run_cost(" in (ROOT / "book" / chapter).read_text(
            encoding="utf-8"
        )


def test_the_chapters_state_limits_as_facts_not_as_plans():
    """Open questions are exercises or stated limits; the book does not talk about its
    own unfinished work."""
    plans = (
        "not yet",
        "next step",
        "to be measured",
        "until then",
        "machines it was written on",
        "next experiment",
    )
    found = [
        f"{chapter.name}: {phrase!r}"
        for chapter in sorted((ROOT / "book").glob("*.md"))
        for phrase in plans
        if phrase in chapter.read_text(encoding="utf-8").lower()
    ]
    assert not found, found


def test_a_verdict_states_its_number_and_does_not_send_the_reader_to_a_fold():
    """A solution's verdict gives its number in the prose (glued), not "(checked)" or
    "the cell prints" over a folded output."""
    deferrals = re.compile(
        r"\(checked\)|\(printed\)|the cell (below )?prints|as the cell prints|"
        r"(the|its|that) (hidden |folded )?cell checks"
    )
    found = [
        f"{page.name}:{number}: {match.group(0)!r}"
        for page in sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))
        for number, line in prose_lines(page.read_text(encoding="utf-8"))
        for match in deferrals.finditer(line.lower())
    ]
    assert not found, found


def test_the_preface_speaks_of_the_book_not_of_how_a_number_reaches_the_page():
    """How a page's numbers are computed and shown (glue, the {eval} role) is for
    contributors: the README says it, the preface does not."""
    prose = " ".join(
        line for _, line in prose_lines(PREFACE.read_text(encoding="utf-8"))
    )
    assert not re.search(r"\bglue\b|``\{eval\}", prose)
    assert re.search(r"\bglue\b", (ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readme_states_the_stored_chapter_times():
    times = load_tool("chapter_times")
    assert times.summary() in (ROOT / "README.md").read_text()


def test_the_readme_states_the_stored_build_times():
    builds = load_tool("build_time")
    assert " ".join(builds.summary().split()) in " ".join(
        (ROOT / "README.md").read_text().split()
    )


def test_the_readme_states_the_stored_install_sizes():
    installs = load_tool("install_size")
    assert " ".join(installs.summary().split()) in " ".join(
        (ROOT / "README.md").read_text().split()
    )


def test_the_readme_states_the_stored_default_runs_scores():
    """What `make demo` should score: the stored run's sacreBLEU on test2016, and the
    two other seeds of the same command."""
    measured = ROOT / "book" / "measured"
    first, seed1, seed2 = (
        json.loads((measured / name / "results.json").read_text())["bleu"]
        for name in ("multi30k-en-de", "multi30k-en-de-seed1", "multi30k-en-de-seed2")
    )
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"The stored run scored sacreBLEU {first:.2f} on test2016" in text
    seeds = f"seeds 1 and 2 of the same command scored {seed1:.2f} and {seed2:.2f}"
    assert seeds in text


# A shown cell longer than this is two ideas: the page splits it by meaning, with prose
# between the parts, or folds the machinery (tools/book_weight.py measures the same on
# the built book, with its other limits).
LONGEST_SHOWN_CELL = {"chapter": 40, "appendix": 40}


def shown_cell_lengths(chapter: Path) -> list[int]:
    """The non-blank lines of each of the chapter's code cells a reader sees (no
    remove or hide tag)."""
    import jupytext

    notebook = jupytext.read(chapter, fmt="md:myst")
    return [
        sum(1 for line in cell.source.splitlines() if line.strip())
        for cell in notebook.cells
        if cell.cell_type == "code"
        and not any(
            "remove" in tag or "hide" in tag for tag in cell.metadata.get("tags", [])
        )
    ]


def test_no_shown_cell_is_longer_than_its_part_allows():
    too_long = {}
    for chapter in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        part = "appendix" if chapter.name >= "20" else "chapter"
        lengths = shown_cell_lengths(chapter)
        if lengths and max(lengths) > LONGEST_SHOWN_CELL[part]:
            too_long[chapter.name] = max(lengths)
    assert too_long == {}


def test_a_long_shown_cell_is_measured_and_a_hidden_one_is_not(tmp_path):
    chapter = tmp_path / "01_x.md"
    cell = "```{code-cell} ipython3\n%s\n" + "x = 1\n" * 90 + "```\n\n"
    chapter.write_text(HEADER + cell % "" + cell % ":tags: [hide-input]\n")
    assert shown_cell_lengths(chapter) == [90]


measure = load_tool("prose_measure")


def test_sentences_are_measured_in_words_outside_code(tmp_path):
    page = tmp_path / "99_planted.md"
    page.write_text(
        "---\njupytext:\n  formats: ipynb,md:myst\n---\n\n"
        "# A title is no sentence\n\n"
        "One short sentence here. The value {eval}`glued.x` and `code()` count once"
        " each, and [a link](01_background.md) counts its words.\n\n"
        "```{code-cell} ipython3\nprint('Code is no prose. Not at all.')\n```\n\n"
        "| a | table | row | is | skipped |\n\n" + "Word " * 44 + "ends here.\n"
    )
    assert measure.sentence_lengths(page) == [4, 14, 46]


def test_every_kind_of_page_reads_in_sentences_of_16_to_22_words():
    """Chapters, solutions and appendices each: a mean of 16-22 words a sentence, few
    telegrams (8 words or fewer) and few long sentences (over 40); every page 13-25."""
    for kind, pages in measure.kinds().items():
        lengths = [n for page in pages for n in measure.sentence_lengths(page)]
        assert measure.kind_faults(measure.summary(lengths)) == [], kind
        means = {
            page.name: round(measure.summary(measure.sentence_lengths(page))["mean"], 1)
            for page in pages
        }
        low, high = measure.PAGE_MEAN
        assert {n: m for n, m in means.items() if not low <= m <= high} == {}
