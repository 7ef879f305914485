"""The book's references to its chapters and appendices, typed as words.

python tools/book_references.py [--link]

Every "chapter N" or "appendix X" in the prose of the book's pages, of the README and
of the guide (docs/guide.md) must be a link to that page, so that a reference cannot go
stale when pages move. This lists the ones that are not (and links whose words and
target disagree); with --link it turns each plain one into a link to its page.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
GUIDE = ROOT / "docs" / "guide.md"
# "chapter 12", "Chapters 14", "appendix B", "appendices A"
REFERENCE = re.compile(
    r"\b([Cc]hapters?|[Aa]ppendix|[Aa]ppendices)(\s+)(\d{1,2}|[A-G])\b"
)
# further numbers of a list or range: "chapters 14–17", "appendices A and C"
MORE = re.compile(r"(\s*(?:,|–|-|and|or|to)\s*)(\d{1,2}|[A-G])\b")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
# a fence that holds code, not prose: ``` or ```python, ```{code-cell} ...
CODE_FENCE = re.compile(r"^(`{3,}|~{3,})\s*(\{code-cell\}.*|[\w+-]*)\s*$")
ANY_FENCE = re.compile(r"^(`{3,}|~{3,}|:{3,})")


def pages() -> dict[str, Path]:
    """Chapter numbers ("0" ... "18") and appendix letters ("A" ...) and their
    pages. A chapter or appendix whose text runs over several pages
    (``20_appendix_speed.md``, ``20_appendix_speed_cpu.md``, ...) is its main page,
    the one whose name the others extend."""
    found = {}
    for path in sorted(BOOK.glob("[0-9][0-9]_*.md")):
        if path.stem.endswith("_solutions"):
            continue
        number = int(path.name[:2])
        key = str(number) if number < 20 else chr(ord("A") + number - 20)
        if key not in found or len(path.stem) < len(found[key].stem):
            found[key] = path
    return found


def belongs_to(page: str, main: Path) -> bool:
    """Whether the page file named ``page`` is ``main`` or one of its further pages
    (its solutions, an appendix's sections): a link to it may name ``main``'s
    number or letter."""
    return page == main.name or page.startswith(f"{main.stem}_")


def prose_lines(text: str):
    """(line number, line) of the lines outside code: fenced code and code cells are
    skipped; directives (notes, dropdowns, figures) are prose, and their closing
    fence opens nothing."""
    code, directives = None, []  # the open code fence; the open directives' fences
    for number, line in enumerate(text.splitlines(), 1):
        if code is not None:
            if line.strip() == code:
                code = None
            continue
        fence = ANY_FENCE.match(line)
        if fence and directives and line.strip() == directives[-1]:
            directives.pop()  # a directive ends
            continue
        opening = CODE_FENCE.match(line)
        if opening:
            code = opening.group(1)
            continue
        if fence:  # a directive begins: ```{note}, ````{dropdown} ..., :::{...}
            directives.append(fence.group(1))
            continue
        if line.startswith((":", "#")) or re.fullmatch(r"\(\S+\)=\s*", line):
            continue  # a directive's option, a title, or a label "(name)=": no prose
        yield number, line


def outside_code_and_links(line: str) -> list[tuple[int, int]]:
    """The spans of ``line`` that are neither inline code nor inside a link."""
    taken = [m.span() for m in re.finditer(r"`[^`]*`", line)]
    taken += [m.span() for m in LINK.finditer(line)]
    taken += [m.span() for m in re.finditer(r"<[^>]*>", line)]  # an HTML tag
    free, at = [], 0
    for start, end in sorted(taken):
        if start > at:
            free.append((at, start))
        at = max(at, end)
    free.append((at, len(line)))
    return free


def key_of(number: str) -> str:
    return str(int(number)) if number.isdigit() else number


def link_to(key: str, source: Path) -> str:
    """The link from ``source`` to the page of ``key``: from the README
    ``book/NAME.md``, from the guide ``../book/NAME.md``, from a page beside the
    book's pages its name."""
    target = pages()[key]
    if source.parent == ROOT:
        return str(target.relative_to(ROOT))
    if source.parent == GUIDE.parent:
        return f"../{target.relative_to(ROOT)}"
    return target.name


def problems(source: Path) -> list[str]:
    """What is wrong with the references of one page: plain ones, and links whose
    words name another page than their target."""
    found, known = [], pages()
    for number, line in prose_lines(source.read_text(encoding="utf-8")):
        where = f"{source.name if source.parent == BOOK else source}:{number}"
        for start, end in outside_code_and_links(line):
            for m in REFERENCE.finditer(line, start, end):
                found.append(f"{where}: {m.group(0)!r} is not a link")
        for m in LINK.finditer(line):
            words, target = m.groups()
            named = REFERENCE.search(words) or re.fullmatch(r"(\d{1,2}|[A-G])", words)
            if not named or target.startswith(("http", "#")):
                continue
            key = key_of(named.group(named.lastindex or 0))
            page = Path(target.split("#")[0]).name
            if key not in known:
                found.append(f"{where}: {m.group(0)!r} names no page of the book")
            elif not belongs_to(page, known[key]):
                found.append(f"{where}: {m.group(0)!r} leads to {page}, not {key}")
    return found


def linked(source: Path) -> str:
    """The page's text with every plain reference made a link."""
    lines = source.read_text(encoding="utf-8").split("\n")
    for number, line in prose_lines("\n".join(lines)):
        spans = outside_code_and_links(line)
        pieces, at = [], 0
        for start, end in spans:
            for m in REFERENCE.finditer(line, start, end):
                word, space, first = m.groups()
                if key_of(first) not in pages():
                    continue
                pieces.append(line[at : m.start()])
                pieces.append(
                    f"[{word}{space}{first}]({link_to(key_of(first), source)})"
                )
                at = m.end()
                # the rest of a list: "chapters 14–17", "appendices A and C"
                if word.endswith("s") or word.endswith("ices"):
                    while more := MORE.match(line, at):
                        if more.end() > end or key_of(more.group(2)) not in pages():
                            break
                        target = link_to(key_of(more.group(2)), source)
                        pieces.append(f"{more.group(1)}[{more.group(2)}]({target})")
                        at = more.end()
        pieces.append(line[at:])
        lines[number - 1] = "".join(pieces)
    return "\n".join(lines)


def sources() -> list[Path]:
    return [*sorted(BOOK.glob("[0-9][0-9]_*.md")), ROOT / "README.md", GUIDE]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--link", action="store_true", help="make every plain reference a link"
    )
    args = parser.parse_args(argv)
    if args.link:
        for source in sources():
            text = linked(source)
            if text != source.read_text(encoding="utf-8"):
                source.write_text(text, encoding="utf-8")
                print(f"linked the references of {source.relative_to(ROOT)}")
    found = [p for source in sources() for p in problems(source)]
    print("\n".join(found) or "every reference is a link to its page")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
