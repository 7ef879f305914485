"""tools/lab_contents.py, the contents manager of `make lab`, without a browser: every
chapter goes through it as JupyterLab reads it and, changed as a kernel and a reader
change it, as JupyterLab saves it; the chapter must come back byte for byte."""

import asyncio
import shutil
from pathlib import Path

import pytest
from conftest import load_tool

pytest.importorskip("jupyter_server")
lab_contents = load_tool("lab_contents")
literate = load_tool("literate")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """A copy of book/ (the chapters and Jupytext's settings) and a manager on it."""
    folder = tmp_path_factory.mktemp("book")
    for chapter in literate.chapters(ROOT):
        shutil.copy(chapter, folder / chapter.name)
    shutil.copy(ROOT / "book" / "jupytext.toml", folder / "jupytext.toml")
    return folder, lab_contents.BookContentsManager(root_dir=str(folder))


def as_a_kernel_and_a_reader_leave_it(notebook: dict) -> None:
    """What JupyterLab changes in a notebook it ran: the kernel's own name and
    language, the values of {eval} roles, cells folded or unfolded."""
    notebook["metadata"]["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    notebook["metadata"]["language_info"] = {"name": "python", "version": "3.11.7"}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown" and "{eval}" in cell["source"]:
            for expression in cell["metadata"].get("user_expressions", []):
                expression["result"]["data"] = {"text/plain": "42"}
        if cell["cell_type"] == "code":
            cell["metadata"].setdefault("jupyter", {})["source_hidden"] = False
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x"}]


def test_every_chapter_saves_back_as_it_was_after_a_run(book):
    folder, manager = book

    async def round_trip(name):
        model = await manager.get(name)
        as_a_kernel_and_a_reader_leave_it(model["content"])
        await manager.save({"type": "notebook", "content": model["content"]}, name)

    chapters = sorted(folder.glob("[0-9][0-9]_*.md"))
    assert len(chapters) == len(literate.chapters(ROOT)) >= 40
    for chapter in chapters:
        asyncio.run(round_trip(chapter.name))
        assert chapter.read_bytes() == (ROOT / "book" / chapter.name).read_bytes(), (
            chapter.name
        )
    assert not list(folder.glob("*.ipynb"))  # no twin written: chapters are unpaired


def test_a_chapter_opens_as_the_book_shows_it(book):
    folder, manager = book
    notebook = asyncio.run(manager.get("04_attention_solutions.md"))["content"]
    for cell in notebook["cells"]:
        tags = cell["metadata"].get("tags", [])
        folded = cell["metadata"].get("jupyter", {})
        if "remove-cell" in tags or "hide-cell" in tags:
            assert folded == {"source_hidden": True, "outputs_hidden": True}
        elif "hide-input" in tags:
            assert folded == {"source_hidden": True, "outputs_hidden": False}
        else:
            assert folded == {}
    # each folded cell's first line, which JupyterLab shows, names its exercise
    folded = [c for c in notebook["cells"] if c["metadata"].get("jupyter")]
    assert folded and all(
        c["source"].startswith("# Solution to exercise") for c in folded
    )

    chapter = asyncio.run(manager.get("15_attention_figures.md"))["content"]
    shown = "\n".join(c["source"] for c in chapter["cells"])
    assert "{cite:" not in shown
    assert "[(Vig, 2019)](references.md#cite:p:vig2019multiscale)" in shown
    placeholders = [
        e for c in chapter["cells"] for e in c["metadata"].get("user_expressions", [])
    ]
    assert placeholders and all(
        e["result"]["data"] == {"text/plain": lab_contents.PLACEHOLDER}
        and e["expression"].startswith("glued.")
        for e in placeholders
    )


def test_citations_show_as_author_and_year_and_come_back_as_roles():
    text = (
        "As {cite:t}`vaswani2017attention` found "
        "{cite:p}`ba2016layer,rush2018annotated`."
    )
    shown = lab_contents.show_citations(text)
    assert shown == (
        "As [Vaswani et al. (2017)](references.md#cite:t:vaswani2017attention) found "
        "[(Ba et al., 2016; Rush, 2018)](references.md#cite:p:ba2016layer,"
        "rush2018annotated)."
    )
    assert lab_contents.restore_citations(shown) == text
