"""Fail when a chapter's prose states a BLEU score, a speed-up or a parameter count
typed by hand.

Such numbers must come from a cell: printed, shown in a table, or inserted into the text
with ``{eval}`glued.NAME``` (the preface's ``glue``). The paper's own reported numbers
(Tables 2-4, FACTS) may be cited.

python tools/check_prose_numbers.py            # every chapter; exit 1 and a list if any
is found"""

import re
import sys
from pathlib import Path

import jupytext

# Numbers the paper reports, which the book may quote (Tables 2, 3 and 4; parameter
# counts in millions).
PAPER_NUMBERS = {
    "23.75",
    "24.6",
    "39.92",
    "25.16",
    "40.46",
    "26.03",
    "40.56",
    "39.2",
    "40.4",
    "26.30",
    "41.16",
    "26.36",
    "41.29",
    "27.3",
    "38.1",
    "28.4",
    "41.8",
    "25.8",
    "24.9",
    "25.5",
    "25.4",
    "25.1",
    "23.7",
    "25.3",
    "24.5",
    "26.0",
    "26.2",
    "25.7",
    "26.4",
    "4.92",
    "4.33",
    "65",
    "213",
    "58",
    "60",
    "36",
    "50",
    "80",
    "28",
    "168",
    "53",
    "90",
    "88.3",
    "90.4",
    "91.7",
    "91.3",
    "92.1",
    "92.7",
    "93.0",
    "93.3",
}
IGNORED = [
    re.compile(r"`[^`]*`"),  # inline code and {eval}`glued.name` roles
    re.compile(r"\$[^$]*\$"),  # inline math
    re.compile(r"\]\([^)]*\)"),  # link targets
]
CHECKS = {
    "a BLEU score": (
        re.compile(r"\b(BLEU|chrF)\b"),
        re.compile(r"(?<![\w.§])\d+\.\d+(?![\w.])"),
    ),
    "a speed-up": (
        re.compile(r"faster|slower|speed-?up", re.I),
        re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*(?:×|x\b|times\b)"),
    ),
    "a parameter count": (
        re.compile(r"param", re.I),
        re.compile(r"(?<![\w.])(?:\d+(?:\.\d+)?\s*M\b|\d{1,3}(?:,\d{3}){2,})"),
    ),
}


def typed_numbers(chapter: Path) -> list[str]:
    """Each sentence of the chapter's Markdown cells that states a measured number by
    hand."""
    problems = []
    for cell in jupytext.read(chapter, fmt="md:myst").cells:
        if cell.cell_type != "markdown":
            continue
        text = re.sub(r"```.*?```", " ", cell.source, flags=re.S)  # quoted code blocks
        text = re.sub(r"^\|.*\|$", " ", text, flags=re.M)  # the paper's tables
        for pattern in IGNORED:
            text = pattern.sub(" ", text)
        for sentence in re.split(r"(?<=[.!?:;])\s+", " ".join(text.split())):
            for what, (topic, number) in CHECKS.items():
                if not topic.search(sentence):
                    continue
                typed = [
                    n
                    for n in number.findall(sentence)
                    if re.match(r"[\d.,]+", n)[0] not in PAPER_NUMBERS
                ]
                if typed:
                    problems.append(
                        f"{chapter.name}: {what} typed by hand ({', '.join(typed)}): "
                        f"{sentence[:160]}"
                    )
    return problems


ROOT = Path(__file__).resolve().parents[1]


def main(root: Path = ROOT) -> int:
    problems = [
        p
        for chapter in sorted((root / "book").glob("[0-9][0-9]_*.md"))
        for p in typed_numbers(chapter)
    ]
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(problems)} typed number(s) in the chapters' prose")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
