import argparse
import importlib
import re
from pathlib import Path

import jupytext
import pytest

import annotated_transformer
from annotated_transformer.book.scale import at_scale, current_scale, smoke_note


def test_scale_switch(monkeypatch):
    monkeypatch.delenv("AT_SCALE", raising=False)
    assert current_scale() == "laptop" and at_scale(1, 2) == 2
    monkeypatch.setenv("AT_SCALE", "smoke")
    assert at_scale(1, 2) == 1
    # paper-scale work is the train command's, not a chapter setting
    monkeypatch.setenv("AT_SCALE", "gpu")
    with pytest.raises(ValueError, match="smoke, laptop"):
        current_scale()


def test_the_smoke_note_is_printed_at_smoke_scale_only(monkeypatch, capsys):
    monkeypatch.setenv("AT_SCALE", "laptop")
    smoke_note("the copy model")
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("AT_SCALE", "smoke")
    smoke_note("the copy model")
    assert capsys.readouterr().out.startswith(
        "AT_SCALE=smoke: the copy model trained for a few updates only"
    )


# The switch belongs to the book: the commands never read it.

PACKAGE = Path(annotated_transformer.__file__).parent
COMMANDS_WITH_PARSERS = [
    "band",
    "benchmark",
    "bundle",
    "evaluate",
    "parsing",
    "train",
    "translate",
    "variations",
    "visualize",
]


def test_only_the_books_helper_reads_the_switch():
    readers = sorted(
        path.stem
        for path in PACKAGE.glob("*.py")
        if path.stem != "scale"
        and (
            "AT_SCALE" in path.read_text(encoding="utf-8")
            or re.search(r"\bscale import\b|import scale\b", path.read_text("utf-8"))
        )
    )
    assert readers == []


def defaults(parser: argparse.ArgumentParser) -> dict:
    """Every option's default, with those of the subcommands, by option name."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= {f"{name} {k}": v for k, v in defaults(sub).items()}
        else:
            found[action.dest] = action.default
    return found


@pytest.mark.parametrize("name", COMMANDS_WITH_PARSERS)
def test_a_commands_defaults_are_the_same_at_every_scale(name, monkeypatch):
    module = importlib.import_module(f"annotated_transformer.{name}")
    seen = []
    for scale in ("smoke", "laptop"):
        monkeypatch.setenv("AT_SCALE", scale)
        seen.append(defaults(module.build_parser()))
    assert seen[0] == seen[1] and len(seen[0]) >= 3


def shown_cells(chapter: Path) -> list[str]:
    """The code of the cells a reader sees (also those folded away), not of the
    cells the page removes."""
    notebook = jupytext.read(chapter, fmt="md:myst")
    return [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code"
        and not {"remove-cell", "remove-input"} & set(cell.metadata.get("tags", []))
    ]


def test_no_shown_cell_asks_for_a_scale():
    root = PACKAGE.parent
    asking = [
        f"{chapter.name}: {line.strip()}"
        for chapter in sorted((root / "book").glob("[0-9][0-9]_*.md"))
        for source in shown_cells(chapter)
        for line in source.splitlines()
        if re.search(r"\b(at_scale|smoke_note|current_scale)\(", line)
    ]
    assert asking == []


def test_the_shown_cell_finder_sees_folded_cells_and_skips_removed_ones(tmp_path):
    page = tmp_path / "01_page.md"
    page.write_text(
        "# Page\n\n```{code-cell} ipython3\n:tags: [hide-cell]\n\nsteps = 10\n```\n\n"
        "```{code-cell} ipython3\n:tags: [remove-cell]\n\nsteps = at_scale(1, steps)\n"
        "```\n"
    )
    assert shown_cells(page) == ["steps = 10"]
