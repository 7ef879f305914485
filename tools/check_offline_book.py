"""Open built chapters in headless Chromium with networking off; fail if math stays raw
or a chart is empty.

python tools/check_offline_book.py [--html _build/html] [--screenshots DIR] [chapter
...]

For each chapter the page is loaded from disk with every network request refused, its
scripts are given time to run, and the resulting DOM is inspected:
- MathJax must have typeset the page: at least one rendered formula, and no TeX
  delimiters left in the visible text;
- every image (matplotlib figures, static Altair/Vega charts) must be a local file that
  exists, and an SVG chart must contain drawn marks;
- no interactive chart container may be left empty, and no script may be loaded from the
  network;
- no text may look like a Markdown pipe table (a `|---|` rule outside code, or two
  printed lines framed by pipes): a table shown that way was not rendered, and every
  table a chapter's code cells display must be an HTML table in the page (as many as
  the chapter's source has cells that display one);
- every attention explorer must have drawn lines, and must redraw when its head and
  layer selectors change and show fewer lines while a word is hovered;
- nothing may scroll sideways in a 1280-pixel-wide window: no code block, output or
  table may be wider than its box (each element that can scroll has its scroll width
  compared with its client width), and no table, its cells wrapping only between
  words, may be wider than its column;
- no code shown on the page may call ``glue(`` (the cells that glue numbers into the
  prose are to have their input removed);
- no script of the page may throw an error (each is recorded from the first line of
  the page's head);
- every figure a cell draws must have a caption: the paragraph right after the cell
  starts in italics (a figure inside a collapsed solution is captioned by the prose of
  its dropdown);
- no figure's text may show under 10 px at 1280 px: each PNG of the build records its
  smallest text in its own pixels (tools/figure_text.py), scaled here by the width the
  page gives the image, every fold opened; and every image needs alt text that is not
  a file name.

A script added to a copy of each page makes the explorers' changes and the measurements
and records what it saw in the page. ``--self-test`` first renders a copy of a built
page with a planted case of seven checks (a 130-column code line, a table too wide
for its column, a highlighted ``glue(`` call, a Markdown table printed by a cell, a
figure with 7 px labels, an image whose alt text is its file name, a constant that two
scripts declare), and fails unless the check reports each.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import figure_text  # noqa: E402

SMALLEST_TEXT_PX = 10  # the smallest text a figure may show a reader, in CSS pixels
NO_NETWORK = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
]
# Added first in the page's head: every error a script of the page throws is kept.
ERROR_LISTENER = """<script>
window.pageErrors = [];
window.addEventListener("error", e => window.pageErrors.push(String(e.message)));
</script>"""
HEAD = re.compile(r"<head[^>]*>")
PAGE_TEST = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const scrolls = [];
  document.querySelectorAll("article *").forEach(el => {
    const x = getComputedStyle(el).overflowX;
    if ((x === "auto" || x === "scroll") && el.scrollWidth > el.clientWidth + 1) {
      const text = (el.innerText || "").split("\\n").reduce(
        (a, b) => (b.length > a.length ? b : a), "");
      scrolls.push({tag: el.tagName.toLowerCase(), width: el.scrollWidth,
                    box: el.clientWidth, text: text.slice(0, 60)});
    }
  });
  const uncaptioned = [];
  const figures = ".cell_output img, .cell_output .vega-embed";
  document.querySelectorAll(figures).forEach(fig => {
    const cell = fig.closest(".cell");
    if (!cell || cell.classList.contains("tag_hide-cell")) return;
    const next = cell.nextElementSibling;
    const captioned = next && next.tagName === "P" && next.firstElementChild &&
      next.firstElementChild.tagName === "EM" &&
      next.textContent.trim().startsWith(next.firstElementChild.textContent.trim());
    if (!captioned) uncaptioned.push((cell.innerText || "").trim().slice(0, 60));
  });
  const wide = [];
  document.querySelectorAll("article table").forEach(table => {
    const box = table.parentElement.clientWidth;
    if (table.scrollWidth > box + 1) {
      const text = (table.innerText || "").split("\\n")[0];
      wide.push({width: table.scrollWidth, box, text: text.slice(0, 60)});
    }
  });
  // figures as a reader sees them once every fold is open
  document.querySelectorAll("details").forEach(d => { d.open = true; });
  const images = [...document.querySelectorAll("article img")].map(img => ({
    src: img.getAttribute("src"), alt: img.getAttribute("alt") || "",
    natural: img.naturalWidth, shown: img.getBoundingClientRect().width}));
  document.body.dataset.pagetest = JSON.stringify(
    {scrolls, uncaptioned, wide, images, errors: window.pageErrors || []});
}, 200));
</script>"""
EXPLORER_TEST = """<script>
window.addEventListener("load", () => setTimeout(() => {
  document.querySelectorAll(".at-explorer").forEach(root => {
    const pick = (name, value) => {
      const select = root.querySelector("select[name=" + name + "]");
      select.value = value;
      select.dispatchEvent(new Event("change"));
      return root.dataset.drawn;
    };
    const first = root.dataset.drawn, oneHead = pick("head", "1");
    const otherLayer = pick("layer", "0");
    pick("head", "all");
    const lines = [...root.querySelectorAll("line")];
    root.querySelector("text.at-query").dispatchEvent(new Event("mouseenter"));
    const hovered = lines.filter(line => line.style.display !== "none").length;
    root.dataset.selftest = JSON.stringify(
      {first, oneHead, otherLayer, total: lines.length, hovered});
  });
}, 200));
</script>"""
RAW_TEX = re.compile(r"\\\(|\\\[|\$\$|\\frac|\\sqrt|\\text\{")
# The rule under a Markdown table's header, |---| or | :--- |, also as Sphinx's smart
# quotes print it (|—|)
PIPE_RULE = re.compile(r"\|\s*:?(?:-{3,}|[—–]-?)\s*:?\s*\|")
# a line that looks like a Markdown table's row: | a | b |
PIPE_ROW = re.compile(r"^ *\|[^|\n]*\|[^\n]*\| *$", re.MULTILINE)
HIDDEN_OUTPUT = {"remove-output", "remove-cell", "skip-execution"}
PLAIN_REFERENCE = re.compile(r"\b(?:[Cc]hapters? \d{1,2}|[Aa]ppendix [A-G])\b")


def toc_chapters(root: Path = ROOT) -> list[str]:
    """The book's pages in the order of ``_toc.yml`` (the root, then every part's
    chapters, each followed by its sections), without suffix."""
    import yaml  # comes with jupyter-book, like jupytext below

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", [toc]):
        for chapter in part.get("chapters", []):
            files.append(chapter["file"])
            files += [section["file"] for section in chapter.get("sections", [])]
    return [Path(f).name.removesuffix(".md") for f in files]


def computed_tables(chapter_source: Path) -> int:
    """How many code cells of a chapter display a Markdown table (a ``|---|`` rule in
    their source) and show their output: each must come out as at least one HTML
    table."""
    # the book's extras; imported here so that --help works without them
    import jupytext

    count = 0
    for cell in jupytext.read(chapter_source, fmt="md:myst").cells:
        tags = set(cell.metadata.get("tags", []))
        if (
            cell.cell_type == "code"
            and PIPE_RULE.search(cell.source)
            and not tags & HIDDEN_OUTPUT
        ):
            count += 1
    return count


class PageScan(HTMLParser):
    """Collect what the checks need from a rendered DOM."""

    SKIP = {
        "script",
        "style",
        "pre",
        "code",
        "noscript",
        "textarea",
        "mjx-assistive-mml",
    }

    def __init__(self):
        super().__init__()
        self.formulas = 0
        self.images: list[str] = []
        self.remote_scripts: list[str] = []
        self.raw_tex: list[str] = []
        # open vega-embed containers and whether they got content
        self.chart_divs: list[dict] = []
        # attention explorers: their drawn state and the self-test record
        self.explorers: list[dict] = []
        self.pipe_text: list[str] = []  # visible text that looks like a Markdown table
        self.page_test: dict | None = None  # what PAGE_TEST measured in the page
        self.glue_code: list[str] = []  # shown code that calls glue(
        # "chapter 9" or "appendix B" in the article's text but in no link: the prose's
        # are found in the sources (book_references.py), these in what cells display
        self.plain_references: list[str] = []
        self.source_links: list[str] = []  # links to a page's source, not to the page
        self._article_depth = 0
        self._link_depth = 0
        self._pre_depth = 0
        self._pre_text: list[str] = []  # the text of the open code block, all spans
        self._pre_in_output = False  # whether that block is what a cell printed
        self.output_tables = 0  # HTML tables inside code-cell outputs
        # stack depth of the innermost open cell output (0: none)
        self._output_depth = 0
        self._skip_depth = 0
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("img", "br", "meta", "link", "input", "hr", "source"):
            self._void(tag, attrs)
            return
        self._stack.append(tag)
        if tag in self.SKIP:
            self._skip_depth += 1
        if tag == "pre":
            self._pre_depth += 1
            self._pre_in_output = bool(self._output_depth)
        if tag == "body" and attrs.get("data-pagetest"):
            self.page_test = json.loads(attrs["data-pagetest"])
        if tag == "mjx-container":
            self.formulas += 1
        if tag == "article":
            self._article_depth += 1
        if tag == "a" or re.fullmatch(r"h[1-6]", tag):  # a link or a title
            self._link_depth += 1
        href = attrs.get("href") or ""
        if tag == "a" and self._article_depth and re.search(r"\.(md|ipynb)(#|$)", href):
            self.source_links.append(href)  # left unresolved: glued Markdown's links
        if tag == "script" and re.match(r"https?:", attrs.get("src") or ""):
            self.remote_scripts.append(attrs["src"])
        if tag == "div" and (attrs.get("id") or "").startswith(("altair-viz", "vega")):
            self.chart_divs.append(
                {"id": attrs["id"], "depth": len(self._stack), "filled": False}
            )
        if tag == "div" and "at-explorer" in (attrs.get("class") or "").split():
            self.explorers.append(
                {
                    "id": attrs.get("id"),
                    "drawn": attrs.get("data-drawn"),
                    "test": json.loads(attrs.get("data-selftest") or "null"),
                }
            )
        if tag in ("svg", "canvas"):
            for chart in self.chart_divs:
                chart["filled"] = True
        if (
            tag == "div"
            and "cell_output" in (attrs.get("class") or "").split()
            and not self._output_depth
        ):
            self._output_depth = len(self._stack)
        if tag == "table" and self._output_depth:
            self.output_tables += 1

    def _void(self, tag, attrs):
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])

    def handle_startendtag(self, tag, attrs):
        self._void(tag, dict(attrs))

    def handle_endtag(self, tag):
        if tag in self.SKIP and self._skip_depth:
            self._skip_depth -= 1
        if tag == "article" and self._article_depth:
            self._article_depth -= 1
        if (tag == "a" or re.fullmatch(r"h[1-6]", tag)) and self._link_depth:
            self._link_depth -= 1
        if tag == "pre" and self._pre_depth:
            self._pre_depth -= 1
            if not self._pre_depth:
                self._end_of_code_block("".join(self._pre_text))
                self._pre_text = []
        while self._stack:
            if self._stack.pop() == tag:
                break
        if len(self._stack) < self._output_depth:
            self._output_depth = 0

    def _end_of_code_block(self, text: str) -> None:
        # Pygments splits a call into spans (<span>glue</span><span>(</span>): the
        # block's whole text is searched
        for call in re.finditer(r"\bglue\(", text):
            line = text[call.start() :].split("\n", 1)[0]
            self.glue_code.append(" ".join(line.split())[:80])
        # two or more printed lines framed by pipes: a Markdown table, not rendered
        rows = PIPE_ROW.findall(text) if self._pre_in_output else []
        if len(rows) >= 2:
            self.pipe_text.append(" ".join(rows[0].split())[:80])

    def handle_data(self, data):
        if self._pre_depth:
            self._pre_text.append(data)
        if not self._skip_depth and RAW_TEX.search(data):
            self.raw_tex.append(data.strip()[:80])
        if not self._skip_depth and PIPE_RULE.search(data):
            self.pipe_text.append(" ".join(data.split())[:80])
        if self._article_depth and not (self._skip_depth or self._link_depth):
            for reference in PLAIN_REFERENCE.finditer(data):
                self.plain_references.append(reference.group(0))


BROWSERS = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
)
KNOWN_PATHS = (
    "/snap/bin/chromium",
    "/usr/lib/chromium/chromium",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
)


def find_chromium() -> str | None:
    """The first Chromium or Chrome on PATH, else in a usual install location."""
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    return found or next((path for path in KNOWN_PATHS if Path(path).is_file()), None)


def render(chromium: str, page: Path, screenshot: Path | None) -> str:
    with tempfile.TemporaryDirectory() as profile:
        common = [
            chromium,
            *NO_NETWORK,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=15000",
            "--window-size=1280,2000",
        ]
        dom = subprocess.run(
            [*common, "--dump-dom", page.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if dom.returncode != 0 or not dom.stdout.strip():
            raise RuntimeError(
                f"Chromium could not render {page}: {dom.stderr.strip()[-500:]}"
            )
        if screenshot is not None:
            subprocess.run(
                [
                    *common,
                    "--hide-scrollbars",
                    f"--screenshot={screenshot}",
                    page.as_uri(),
                ],
                capture_output=True,
                timeout=120,
                check=True,
            )
        return dom.stdout


def explorer_problems(explorers: list[dict]) -> list[str]:
    problems = []
    for e in explorers:
        test, name = e["test"], f"attention explorer {e['id']}"
        if not e["drawn"] or not test:
            problems.append(f"{name} did not run its script")
        elif int(test["first"].split(",")[-1]) == 0:
            problems.append(f"{name} drew no lines")
        elif len({test["first"], test["oneHead"], test["otherLayer"]}) < 3:
            problems.append(
                f"{name} did not redraw when its head and layer selectors changed: "
                f"{test}"
            )
        elif not 0 < test["hovered"] < test["total"]:
            problems.append(
                f"{name} did not single out a word's lines on hover: {test}"
            )
    return problems


def check_page(
    page: Path, source: str, dom: str, tables: int = 0
) -> tuple[PageScan, list[str]]:
    """The scan of the rendered DOM and what is wrong with it; ``source`` is the page's
    HTML as built and ``tables`` the number of computed tables its chapter displays."""
    scan = PageScan()
    scan.feed(dom)
    problems = []
    problems += [f"a Markdown table shown as text: {t!r}" for t in scan.pipe_text[:5]]
    if scan.output_tables < tables:
        problems.append(
            f"{tables} code cell(s) display a table, but the page's outputs hold "
            f"{scan.output_tables} HTML table(s)"
        )
    if scan.formulas == 0 and 'class="math' in source:
        problems.append("MathJax typeset no formula (is MathJax loaded from _static?)")
    problems += [f"raw TeX left in the text: {t!r}" for t in scan.raw_tex[:5]]
    problems += [f"script loaded from the network: {s}" for s in scan.remote_scripts]
    problems += [
        f"interactive chart {c['id']} is empty"
        for c in scan.chart_divs
        if not c["filled"]
    ]
    problems += explorer_problems(scan.explorers)
    problems += [f"code that calls glue( is shown: {g!r}" for g in scan.glue_code[:5]]
    problems += [
        f"a reference that is not a link, in what a cell displays: {r!r}"
        for r in scan.plain_references[:5]
    ]
    problems += [
        f"a link to a source file, not to its page (glued Markdown is not resolved): "
        f"{href}"
        for href in scan.source_links[:5]
    ]
    if scan.page_test is None:
        problems.append("the page's measuring script did not run")
    else:
        problems += [
            f"a {s['tag']} scrolls sideways at 1280 px ({s['width']} px in a "
            f"{s['box']} px box): {s['text']!r}"
            for s in scan.page_test["scrolls"][:8]
        ]
        problems += [
            f"a figure without a caption (no italic paragraph after its cell): {u!r}"
            for u in scan.page_test["uncaptioned"][:5]
        ]
        problems += [
            f"a table wider than its column at 1280 px ({w['width']} px in a "
            f"{w['box']} px column): {w['text']!r}"
            for w in scan.page_test.get("wide", [])[:5]
        ]
        problems += figure_problems(page, scan.page_test.get("images", []))
        problems += [
            f"a script error on the page: {e!r}"
            for e in scan.page_test.get("errors", [])[:5]
        ]
    for src in scan.images:
        url = urlparse(src)
        if url.scheme in ("http", "https"):
            problems.append(f"image loaded from the network: {src}")
            continue
        if url.scheme == "data":
            continue
        target = (page.parent / unquote(url.path)).resolve()
        if not target.is_file() or target.stat().st_size == 0:
            problems.append(f"image missing: {src}")
        elif target.suffix == ".svg" and not re.search(
            r'class="[^"]*(mark-|role-mark)', target.read_text("utf-8")
        ):
            if "<path" not in target.read_text("utf-8"):
                problems.append(f"chart has nothing drawn: {src}")
    return scan, problems


def figure_problems(page: Path, images: list[dict]) -> list[str]:
    """Figures whose smallest text the reader sees under SMALLEST_TEXT_PX pixels at 1280
    px, matplotlib figures built without their text measured, and images whose alt text
    is empty or a file name."""
    problems = []
    for image in images:
        src = image["src"] or ""
        alt = image["alt"].strip()
        if not alt or re.search(r"\.(png|svg|jpe?g|gif)$", alt, re.IGNORECASE):
            problems.append(f"a figure without alt text that says what it shows: {src}")
        url = urlparse(src)
        target = (page.parent / unquote(url.path)).resolve()
        if url.scheme or target.suffix.lower() != ".png" or not target.is_file():
            continue
        chunks = figure_text.png_text(target)
        if figure_text.KEY not in chunks:
            if chunks.get("Software", "").startswith("Matplotlib"):
                problems.append(
                    f"a matplotlib figure without its text size: {src} (build the "
                    "book with make book, after rm -rf _build/.jupyter_cache)"
                )
            continue
        if not image["natural"] or not image["shown"]:
            continue
        shown = float(chunks[figure_text.KEY]) * image["shown"] / image["natural"]
        if shown < SMALLEST_TEXT_PX:
            problems.append(
                f"figure text under {SMALLEST_TEXT_PX} px at 1280 px: {shown:.1f} px "
                f"({image['natural']} px wide, shown at {image['shown']:.0f}): {src}"
            )
    return problems


def check_chapter(
    chromium: str, page: Path, shot: Path | None = None, text: str | None = None
) -> tuple[PageScan, list[str]]:
    """Render a copy of ``page`` (or of ``text``, as if it were that page) beside it,
    with the measuring scripts added, and check what it shows."""
    text = page.read_text(encoding="utf-8") if text is None else text
    scripts = PAGE_TEST + (EXPLORER_TEST if "at-explorer" in text else "")
    tested = page.with_name(f".selftest-{page.name}")
    text = HEAD.sub(lambda m: m.group(0) + ERROR_LISTENER, text, count=1)
    tested.write_text(text.replace("</body>", scripts + "</body>"), encoding="utf-8")
    try:
        dom = render(chromium, tested, shot)
    finally:
        tested.unlink()
    chapter_source = ROOT / "book" / f"{page.stem}.md"
    tables = computed_tables(chapter_source) if chapter_source.is_file() else 0
    return check_page(page, text, dom, tables)


# What the self-test plants in a built page, and what the check must then report.
PLANTED = {
    "a 130-column code line": "scrolls sideways",
    "a table of 24 numbers in a row": "a table wider than its column",
    "a glue( call, highlighted": "calls glue(",
    "a Markdown table printed by a cell": "a Markdown table shown as text",
    "a figure with 7 px labels": "figure text under 10 px",
    "an image whose alt text is its file name": "without alt text",
    "a constant declared twice by two scripts": "a script error on the page",
}
PLANTED_FIGURE = ".selftest-figure.png"


def planted_figure(folder: Path) -> None:
    """A figure 600 px wide whose labels are 7 px high, saved as PLANTED_FIGURE."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure_text.install()
    fig, ax = plt.subplots(figsize=(6, 2), dpi=100)
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("seven-pixel label", fontsize=7 * 72 / 100)
    ax.tick_params(labelsize=7 * 72 / 100)
    fig.savefig(folder / PLANTED_FIGURE)
    plt.close(fig)


def plant(text: str) -> str | None:
    """A built page with the cases of PLANTED added (after the title of its article),
    or None if it has no code block or no titled article."""
    at = text.find("<pre")
    at = text.find(">", at) + 1
    article = text.find("<article")
    if at <= 0 or article < 0 or text.find("</h1>", article) < 0:
        return None
    wide = "# " + "w" * 128 + "\n"  # 130 columns
    text = text[:at] + wide + text[at:]
    heading = text.find("</h1>", text.find("<article")) + len("</h1>")
    cells = "".join(f"<td>{1e6 + i:,.2f}</td>" for i in range(24))
    glue = '<span class="n">glue</span><span class="p">(</span><span class="p">)</span>'
    printed = "| split | BLEU |\n| test | 27.3 |\n"
    planted = (
        f"<table><tr>{cells}</tr></table>"
        f'<div class="highlight"><pre>{glue}</pre></div>'
        f'<div class="cell_output docutils container"><pre>{printed}</pre></div>'
        f'<img src="{PLANTED_FIGURE}" alt="A rising line, labelled in small type.">'
        '<img src="../_static/nothing.png" alt="nothing.png">'
        "<script>const PLANTED_URL = 1;</script><script>const PLANTED_URL = 2;</script>"
    )
    return text[:heading] + planted + text[heading:]


def self_test(chromium: str, html: Path, chapter: str) -> bool:
    """Each check of PLANTED must fail on a built page with its case planted."""
    page = (html / "book" / f"{chapter}.html").resolve()
    planted = plant(page.read_text(encoding="utf-8"))
    if planted is None:
        print(f"FAIL self-test: {chapter} has no code block or no heading")
        return False
    planted_figure(page.parent)
    try:
        _, problems = check_chapter(chromium, page, text=planted)
    finally:
        (page.parent / PLANTED_FIGURE).unlink()
    ok = True
    for case, report in PLANTED.items():
        caught = any(report in p for p in problems)
        ok &= caught
        print(
            f"{'ok  ' if caught else 'FAIL'} self-test: {case} in {chapter} is "
            f"{'reported' if caught else 'NOT reported'}"
        )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "chapters",
        nargs="*",
        help="chapter names without suffix (default: every page of _toc.yml)",
    )
    parser.add_argument(
        "--html", type=Path, default=Path("_build/html"), help="built book folder"
    )
    parser.add_argument(
        "--screenshots",
        type=Path,
        help="also save a PNG screenshot of each chapter here",
    )
    parser.add_argument(
        "--chromium",
        default=find_chromium(),
        help="Chromium or Chrome executable (default: the first of "
        + ", ".join(BROWSERS)
        + " on PATH, or a usual install location)",
    )
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="first check that each planted case (a 130-column code line, a wide "
        "table, a highlighted glue( call, a printed Markdown table, a figure with 7 px "
        "labels, alt text that is a file name) added to the first chapter is reported",
    )
    args = parser.parse_args(argv)
    if not args.chromium:
        parser.error(
            "no Chromium or Chrome found. Install one: Debian 'apt-get install "
            "chromium'; Ubuntu 'snap install chromium' (the apt package is a snap "
            "there too); Fedora 'dnf install chromium'; macOS 'brew install --cask "
            "chromium'; or pass --chromium /path/to/chrome"
        )
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    args.chapters = args.chapters or toc_chapters()
    failed = False
    if args.self_test:
        failed |= not self_test(args.chromium, args.html, args.chapters[0])
    for chapter in args.chapters:
        page = (args.html / "book" / f"{chapter}.html").resolve()
        if not page.is_file():
            print(
                f"FAIL {chapter}: {page} does not exist; build the book first (make "
                "book)"
            )
            failed = True
            continue
        shot = args.screenshots / f"{chapter}.png" if args.screenshots else None
        scan, problems = check_chapter(args.chromium, page, shot)
        status = "FAIL" if problems else "ok  "
        explorers = (
            f", {len(scan.explorers)} attention explorer(s) tested"
            if scan.explorers
            else ""
        )
        print(
            f"{status} {chapter}: {scan.formulas} formulas typeset, {len(scan.images)} "
            f"figures/charts, {scan.output_tables} computed table(s){explorers}"
        )
        for problem in problems:
            print(f"     - {problem}")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
