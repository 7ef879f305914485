"""The README: the four ways in on its first screen, a table of the chapters with their
solutions, every page of the book linked, and short enough to read."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST_SCREEN = 60  # lines
MOST_WORDS = 2000


def toc_pages() -> list[str]:
    """Every page of the book as `_toc.yml` lists it (``book/NAME``), the root first."""
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    return re.findall(r"^root:\s*(\S+)", toc, re.M) + re.findall(
        r"^\s*-?\s*file:\s*(\S+)", toc, re.M
    )


def title(page: Path) -> str:
    """The page's first heading without the paper's sections in parentheses:
    "Results: decoding, averaging and scoring" for "Results (§6.1): decoding, ..."."""
    heading = re.search(r"^# (.+)$", page.read_text(encoding="utf-8"), re.M)[1]
    return re.sub(r"\s*\([^)]*\)", "", heading)


def test_the_toc_is_read_whole():
    pages = toc_pages()
    assert pages[0] == "book/00_preface" and "book/references" in pages
    assert "book/04_attention_solutions" in pages and len(pages) == len(set(pages))
    assert all((ROOT / f"{page}.md").is_file() for page in pages)


def test_every_page_of_the_book_is_linked_from_the_readme():
    missing = [page for page in toc_pages() if f"]({page}.md)" not in README]
    assert missing == []


def test_each_chapter_has_a_row_with_its_title_and_its_solutions():
    rows = {}
    for line in README.splitlines():
        found = re.match(r"\|\s*(\d+)\s*\|.*?\]\((book/(\d\d)_\w+\.md)\)", line)
        if found:
            rows[found[2]] = line
    chapters = [
        page
        for page in sorted((ROOT / "book").glob("[01][0-9]_*.md"))
        if not page.stem.endswith("_solutions")
    ]
    assert len(chapters) == 19  # the preface and chapters 1 to 18
    for chapter in chapters:
        name = f"book/{chapter.name}"
        assert name in rows, f"no row of the chapter table links {name}"
        row = rows[name]
        assert row.startswith(f"| {int(chapter.name[:2])} |"), row
        assert f"[{title(chapter)}]({name})" in row, row
        solutions = chapter.with_name(f"{chapter.stem}_solutions.md")
        if solutions.exists():
            assert f"(book/{solutions.name})" in row, row


def test_the_readme_is_short_and_opens_with_the_four_ways_in():
    assert len(README.split()) <= MOST_WORDS
    first = "\n".join(README.splitlines()[:FIRST_SCREEN])
    for command in (
        "make book",
        "make lab",
        "pytest --nbmake book/",
        "make test",
        "make demo",
        "](#chapters)",
    ):
        assert command in first, f"{command!r} is not in the README's first lines"
    assert "\n## Chapters\n" in README  # what the link leads to


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a file's headings: lower case, punctuation dropped,
    spaces as hyphens."""
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", markdown, re.M)
    }


def test_every_link_of_the_readme_and_the_guide_leads_to_a_file_and_heading():
    sources = (ROOT / "README.md", ROOT / "docs" / "guide.md")
    for source in sources:
        text = source.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([^)\s#]*)(?:#([^)\s]*))?\)", text):
            if target.startswith("http"):
                continue
            file = (source.parent / target).resolve() if target else source
            assert file.exists(), f"{source.name}: {target}"
            if anchor and file in sources:
                headings = anchors(file.read_text(encoding="utf-8"))
                assert anchor in headings, f"{source.name}: {target}#{anchor}"
