"""How long the sentences of the book's prose are.

python tools/prose_measure.py [CHAPTER.md ...]

For each chapter (default: the main chapters, 0 to 18, without their solutions): the
number of sentences, the mean number of words per sentence and the share of sentences
over 40 words. Prose is what book_references.py reads: no code, no titles, no tables.
Inline code, math and glued values count as one word each; a link counts as its words.
A sentence ends at ".", "!" or "?" before a capital letter; pieces of fewer than three
words (list markers, labels) are not sentences.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_references import BOOK, prose_lines  # noqa: E402

LONG = 40  # words: a sentence longer than this is hard to read at once


def sentence_lengths(chapter: Path) -> list[int]:
    """The number of words of each sentence of the chapter's prose."""
    lines = [
        line
        for _, line in prose_lines(chapter.read_text(encoding="utf-8"))
        if not line.lstrip().startswith("|")
    ]
    text = " ".join(lines)
    text = re.sub(r"\{glue:md\}`[^`]*`", "X", text)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", "X", text)
    text = re.sub(r"`[^`]*`", "X", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\{cite:[pt]\}X", "", text)
    pieces = re.split(r"(?<=[.!?])[*_)\"']*\s+(?=[A-Z*\"(])", text)
    lengths = [len(re.findall(r"[\w'’-]+", piece)) for piece in pieces]
    return [n for n in lengths if n >= 3]


def main_chapters() -> list[Path]:
    return [
        p
        for p in sorted(BOOK.glob("[01][0-9]_*.md"))
        if not p.stem.endswith("_solutions")
    ]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    chapters = [Path(a) for a in args] or main_chapters()
    every = []
    for chapter in chapters:
        lengths = sentence_lengths(chapter)
        every += lengths
        long = sum(n > LONG for n in lengths) / len(lengths)
        print(
            f"{chapter.name:32} {len(lengths):5} sentences, mean "
            f"{sum(lengths) / len(lengths):5.1f} words, {long:6.1%} over {LONG}"
        )
    long = sum(n > LONG for n in every) / len(every)
    print(
        f"{'all':32} {len(every):5} sentences, mean {sum(every) / len(every):5.1f} "
        f"words, {long:6.1%} over {LONG}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
