"""How much a reader has to get through, page by page, measured on the built HTML book.

python tools/book_weight.py [--html _build/html] [--check]

For each page it reads the reading time that the build wrote under the title
(tools/reading_time.py: its words and shown lines of code) and counts the same things
again from the page's HTML: the non-blank lines of each code cell whose source is not
folded and of the code blocks in the prose, and the words of the text outside code
cells, folds and dropdowns (a formula is one word). It prints every page, then each
kind of page (the main line: preface and chapters; their solutions; the appendices)
with its minutes at 230 words and 15 lines of code a minute.

With --check it exits with status 1 unless: every page shows its reading time, and
the build's counts agree with the HTML's (lines of code exactly, words within 5%);
the main line reads in at most 2.5 hours and shows at most 1,200 lines of code, no
shown cell over 40 lines and at most 8 over 25; the appendices show at most 2,500.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from reading_time import minutes  # noqa: E402

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta"}
VOID |= {"source", "track", "wbr"}
MAIN_MINUTES = 150  # the preface and the chapters, read in 2.5 hours at most
MAIN_CODE_LINES = 1200
LONGEST_CELL = 40  # no shown cell longer, anywhere
MOST_OVER_25 = 8  # shown cells of 26 to 40 lines in the main line
APPENDIX_CODE_LINES = 2500
WORDS_AGREE = 0.05


@dataclass
class Page:
    """What one page shows: its stated counts, and those counted from its HTML."""

    stated: tuple[int, int] | None = None  # (words, lines of code) under the title
    words: int = 0
    cells: list[int] = field(default_factory=list)  # shown lines of each shown cell
    commands: int = 0  # lines of the code blocks in the prose

    @property
    def code_lines(self) -> int:
        return sum(self.cells) + self.commands

    @property
    def minutes(self) -> float:
        return minutes(self.words, self.code_lines)


class Reader(HTMLParser):
    """Walks a built page and fills a ``Page``."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.stack: list[tuple[str, set[str]]] = []  # open elements: (tag, classes)
        self.code: list[str] | None = None  # the text of a shown cell's source
        self.block: list[str] | None = None  # the text of a code block in the prose

    def within(self, test) -> bool:
        return any(test(tag, classes) for tag, classes in self.stack)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = set((attrs.get("class") or "").split())
        if tag == "p" and "reading-time" in classes:
            self.page.stated = (int(attrs["data-words"]), int(attrs["data-code-lines"]))
        if tag in VOID:
            return
        if tag in ("span", "div") and "math" in classes and self.counts_words():
            self.page.words += 1  # a formula is one word
        self.stack.append((tag, classes))
        if (
            tag == "div"
            and "cell_input" in classes
            and not self.within(lambda t, c: t == "details")
        ):
            self.code = []
        if (
            tag == "pre"
            and self.within(lambda t, c: t == "article")
            and not self.within(lambda t, c: t == "details" or "cell" in c)
        ):
            self.block = []

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        while self.stack:
            open_tag, classes = self.stack.pop()
            if open_tag == "div" and "cell_input" in classes and self.code is not None:
                text = "".join(self.code)
                self.page.cells.append(sum(1 for x in text.splitlines() if x.strip()))
                self.code = None
            if open_tag == "pre" and self.block is not None:
                text = "".join(self.block)
                self.page.commands += sum(1 for x in text.splitlines() if x.strip())
                self.block = None
            if open_tag == tag:
                break

    def counts_words(self) -> bool:
        """Inside the article, and not in code, a fold, a formula or the time itself."""
        return self.within(lambda t, c: t == "article") and not self.within(
            lambda t, c: (
                t in ("details", "script", "style", "pre")
                or c & {"cell", "math", "reading-time", "headerlink"}
            )
        )

    def handle_data(self, data):
        if self.code is not None and self.within(lambda t, c: t == "pre"):
            self.code.append(data)
        elif self.block is not None:
            self.block.append(data)
        elif self.counts_words():
            self.page.words += len(data.split())


def read_page(path: Path) -> Page:
    reader = Reader()
    reader.feed(path.read_text(encoding="utf-8"))
    return reader.page


def kind(name: str) -> str:
    if "solutions" in name:
        return "solutions"
    return "appendices" if name >= "20" else "main line"


def measure(html: Path) -> dict[str, Page]:
    pages = sorted((html / "book").glob("[0-9][0-9]_*.html"))
    if not pages:
        raise SystemExit(f"error: no built pages under {html / 'book'}; run make book")
    return {p.stem: read_page(p) for p in pages}


def problems(pages: dict[str, Page]) -> list[str]:
    found = []
    for name, page in pages.items():
        if page.stated is None:
            found.append(f"{name}: no reading time under the title")
            continue
        words, code = page.stated
        if code != page.code_lines:
            found.append(
                f"{name}: states {code} lines of code, shows {page.code_lines}"
            )
        if abs(words - page.words) > WORDS_AGREE * max(page.words, 1):
            found.append(f"{name}: states {words} words, the HTML has {page.words}")
        if page.cells and max(page.cells) > LONGEST_CELL:
            found.append(f"{name}: a shown cell of {max(page.cells)} lines")
    main = [p for n, p in pages.items() if kind(n) == "main line"]
    appendices = [p for n, p in pages.items() if kind(n) == "appendices"]
    if sum(p.minutes for p in main) > MAIN_MINUTES:
        found.append(
            f"the main line reads in {sum(p.minutes for p in main):.0f} minutes"
        )
    if sum(p.code_lines for p in main) > MAIN_CODE_LINES:
        found.append(
            f"the main line shows {sum(p.code_lines for p in main)} lines of code"
        )
    over = sum(1 for p in main for n in p.cells if n > 25)
    if over > MOST_OVER_25:
        found.append(f"the main line shows {over} cells over 25 lines")
    if sum(p.code_lines for p in appendices) > APPENDIX_CODE_LINES:
        found.append(
            f"the appendices show {sum(p.code_lines for p in appendices)} lines of code"
        )
    return found


def report(pages: dict[str, Page]) -> str:
    lines = [f"{'page':40} {'words':>6} {'code':>5} {'>25':>4} {'min':>6}"]
    for name, page in pages.items():
        over = sum(1 for n in page.cells if n > 25)
        counts = f"{page.words:6,} {page.code_lines:5,} {over:4} {page.minutes:6.1f}"
        lines.append(f"{name:40} {counts}")
    for part in ("main line", "solutions", "appendices"):
        group = [p for n, p in pages.items() if kind(n) == part]
        words = sum(p.words for p in group)
        code = sum(p.code_lines for p in group)
        over = sum(1 for p in group for n in p.cells if n > 25)
        hours = sum(p.minutes for p in group) / 60
        lines.append(
            f"{part}: {len(group)} pages, {words:,} words, {code:,} lines of code "
            f"({over} cells over 25 lines), {hours:.2f} hours"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build/html")
    parser.add_argument("--check", action="store_true", help="fail outside the limits")
    args = parser.parse_args(argv)
    pages = measure(args.html)
    print(report(pages))
    if args.check:
        found = problems(pages)
        for problem in found:
            print(f"too heavy: {problem}", file=sys.stderr)
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
