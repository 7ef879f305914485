"""How long the sentences of the book's prose are, page by page.

python tools/prose_measure.py [--check] [PAGE.md ...]

For each page (default: every page of the book, grouped by kind: the main chapters 0 to
18, their solutions, the appendices) it prints the number of sentences, the mean number
of words a sentence, the share of short sentences (8 words or fewer) and the share of
long ones (over 40 words); then the same for each kind of page. With --check it exits
with status 1 when a kind or a page is outside the limits below.

Prose is what book_references.py reads: no code, no titles, no tables; the text of
notes and of the solutions' dropdowns is prose. Inline code, math and glued values
count as one word each; a link counts as its words. A sentence ends at ".", "!" or "?"
before a capital letter; pieces of fewer than three words (list markers, labels) are
not sentences.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_references import BOOK, prose_lines  # noqa: E402

SHORT = 8  # words: a run of sentences this short reads like a telegram
LONG = 40  # words: a sentence longer than this is hard to read at once
# What a kind of page should read like: its mean words a sentence, and the largest
# shares of short and of long sentences; and the range of mean that every page keeps.
KIND_MEAN = (16, 22)
MOST_SHORT = 0.12
MOST_LONG = 0.09
PAGE_MEAN = (13, 25)


def sentence_lengths(page: Path) -> list[int]:
    """The number of words of each sentence of the page's prose."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)  # front matter
    lines = [line for _, line in prose_lines(text) if not line.lstrip().startswith("|")]
    text = " ".join(lines)
    text = re.sub(r"\{(?:eval|glue:md)\}`[^`]*`", "X", text)  # a number shown inline
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", "X", text)
    text = re.sub(r"`[^`]*`", "X", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\{cite:[pt]\}X", "", text)
    pieces = re.split(r"(?<=[.!?])[*_)\"']*\s+(?=[A-Z*\"(])", text)
    lengths = [len(re.findall(r"[\w'’-]+", piece)) for piece in pieces]
    return [n for n in lengths if n >= 3]


def kinds() -> dict[str, list[Path]]:
    """The book's pages by kind: main chapters, solutions, appendices."""
    numbered = sorted(BOOK.glob("[0-9][0-9]_*.md"))
    solutions = [p for p in numbered if p.stem.endswith("_solutions")]
    rest = [p for p in numbered if p not in solutions]
    return {
        "chapters": [p for p in rest if int(p.name[:2]) < 20],
        "solutions": solutions,
        "appendices": [p for p in rest if int(p.name[:2]) >= 20],
    }


def main_chapters() -> list[Path]:
    return kinds()["chapters"]


def summary(lengths: list[int]) -> dict[str, float]:
    """Sentences, mean words a sentence, shares of short and of long sentences."""
    n = len(lengths)
    return {
        "sentences": n,
        "mean": sum(lengths) / n,
        "short": sum(k <= SHORT for k in lengths) / n,
        "long": sum(k > LONG for k in lengths) / n,
    }


def line(name: str, s: dict[str, float]) -> str:
    return (
        f"{name:36} {s['sentences']:5} sentences, mean {s['mean']:5.1f} words, "
        f"{s['short']:6.1%} of {SHORT} or fewer, {s['long']:6.1%} over {LONG}"
    )


def kind_faults(s: dict[str, float]) -> list[str]:
    faults = []
    if not KIND_MEAN[0] <= s["mean"] <= KIND_MEAN[1]:
        faults.append(f"mean {s['mean']:.1f} outside {KIND_MEAN[0]}-{KIND_MEAN[1]}")
    if s["short"] > MOST_SHORT:
        faults.append(f"{s['short']:.1%} short, above {MOST_SHORT:.0%}")
    if s["long"] > MOST_LONG:
        faults.append(f"{s['long']:.1%} long, above {MOST_LONG:.0%}")
    return faults


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="How long the sentences of the book's pages are."
    )
    parser.add_argument("pages", nargs="*", type=Path, help="pages (default: all)")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when outside the limits"
    )
    args = parser.parse_args(argv)
    groups = {"pages": args.pages} if args.pages else kinds()
    faults = []
    for kind, pages in groups.items():
        every = []
        for page in pages:
            lengths = sentence_lengths(page)
            every += lengths
            s = summary(lengths)
            print(line(page.name, s))
            if not PAGE_MEAN[0] <= s["mean"] <= PAGE_MEAN[1]:
                low, high = PAGE_MEAN
                faults.append(f"{page.name}: mean {s['mean']:.1f} outside {low}-{high}")
        s = summary(every)
        print(line(f"= {kind}", s))
        print()
        faults += [f"{kind}: {fault}" for fault in kind_faults(s)]
    for fault in faults:
        print(fault)
    return 1 if args.check and faults else 0


if __name__ == "__main__":
    sys.exit(main())
