"""Check that every number a page's prose shows is computed above it.

python tools/check_glue_order.py [--cache _build/.jupyter_cache] [page.md ...]

A paragraph states a number with {eval}`glued.NAME`. The HTML book fills it in from the
page's executed notebook wherever the cell that glues NAME stands, but JupyterLab
evaluates the role when it renders the paragraph: run top to bottom, a page shows the
number only if a cell above the paragraph glued it. This reads each page's executed
copy from the book's execution cache (so run it after `make book`), notes which code
cell glued each name, and fails for every paragraph that uses a name glued only further
down, or never.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

USES = re.compile(r"\{eval\}`glued\.(\w+)`")


def glued_names(cell) -> list[str]:
    """The names a code cell's outputs glued (myst-nb keeps each as scrapbook data)."""
    return [
        output["metadata"]["scrapbook"]["name"]
        for output in cell.get("outputs", [])
        if "scrapbook" in output.get("metadata", {})
    ]


def late_numbers(cells: list) -> list[tuple[int, str]]:
    """(markdown cell number, name) for each use of a name not glued above it."""
    glued: set[str] = set()
    late = []
    for number, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            glued.update(glued_names(cell))
        elif cell["cell_type"] == "markdown":
            late += [
                (number, n) for n in USES.findall(cell["source"]) if n not in glued
            ]
    return late


def executed_cells(cache, page: Path) -> list | None:
    """The page's cells, its code cells as the cache executed them; None when the
    cache holds no run of the page's current code."""
    import jupytext

    notebook = jupytext.read(page)
    try:
        record = cache.match_cache_notebook(notebook)
    except KeyError:
        return None
    executed = iter(
        c
        for c in cache.get_cache_bundle(record.pk).nb.cells
        if c["cell_type"] == "code"
    )
    return [next(executed) if c["cell_type"] == "code" else c for c in notebook.cells]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path, help="default: book/*.md")
    parser.add_argument("--cache", type=Path, default=Path("_build/.jupyter_cache"))
    args = parser.parse_args(argv)
    from jupyter_cache import get_cache

    if not (args.cache / "global.db").is_file():
        parser.error(f"{args.cache} holds no execution cache: run `make book` first")
    cache = get_cache(args.cache)
    pages = args.pages or sorted(Path("book").glob("*.md"))
    problems = []
    for page in pages:
        if not USES.search(page.read_text(encoding="utf-8")):
            continue
        cells = executed_cells(cache, page)
        if cells is None:
            problems.append(f"{page}: not in {args.cache}; run `make book` first")
            continue
        problems += [
            f"{page}: markdown cell {number} shows glued.{name}, "
            "which no cell above it glues"
            for number, name in late_numbers(cells)
        ]
    print(
        "\n".join(problems)
        or f"every number is glued above its paragraph ({len(pages)} pages)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
