"""The reading time under each page's title (tools/reading_time.py), and the measure of
the built book that checks it (tools/book_weight.py)."""

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from myst_nb.sphinx_ import HideCodeCellNode

from tests.conftest import load_tool

reading = load_tool("reading_time")
weight = load_tool("book_weight")

SHOWN = "import torch\n\nx = torch.ones(3)\nprint(x)\n"  # 3 non-blank lines
FOLDED = "y = 1\n" * 50


def cell(source: str, folded: bool = False) -> nodes.container:
    """A code cell as myst-nb builds it: source, then what it printed."""
    source_box = nodes.container(nb_element="cell_code_source", classes=["cell_input"])
    source_box += nodes.literal_block(source, source)
    if folded:
        fold = HideCodeCellNode()
        fold += source_box
        source_box = fold
    output = nodes.container(nb_element="cell_code_output", classes=["cell_output"])
    output += nodes.literal_block("tensor([1., 1., 1.])", "tensor([1., 1., 1.])")
    box = nodes.container(nb_element="cell_code", classes=["cell"])
    box += [source_box, output]
    return box


def page_doctree() -> nodes.document:
    document = new_document("page", get_default_settings(Parser))
    section = nodes.section()
    section += nodes.title("", "Masks and batches")  # 3 words
    section += nodes.paragraph(
        "", "", nodes.Text("The mask hides "), nodes.math("", "x")
    )
    section += cell(SHOWN)
    section += cell(FOLDED, folded=True)
    dropdown = nodes.container(design_component="dropdown")
    dropdown += nodes.paragraph("", "a solution nobody sees before opening it")
    section += dropdown
    section += nodes.literal_block("make demo\n", "make demo\n")  # a command: 1 line
    document += section
    return document


def test_a_page_counts_its_text_and_shown_code_and_not_what_is_folded():
    words, code = reading.page_counts(page_doctree())
    assert (words, code) == (3 + 3 + 1, 3 + 1)  # the formula is one word


def test_the_reading_time_goes_under_the_title_with_its_counts():
    doctree = page_doctree()
    reading.add_reading_time(None, doctree, "page")
    section = next(doctree.findall(nodes.section))
    line = section.children[1]
    assert isinstance(line, nodes.raw)
    assert 'data-words="7" data-code-lines="4"' in line.astext()
    # 7 words and 4 lines: 7/230 + 4/15 minutes, under one: shown as 1
    assert "About 1 minute to read (7 words and 4 lines of code)" in line.astext()


HTML = """<html><body><nav><details><p>menu words here</p></details></nav>
<article class="bd-article"><section>
<h1>Masks and batches<a class="headerlink">#</a></h1>
<p class="reading-time" data-words="7" data-code-lines="4">About 1 minute to read.</p>
<p>The mask hides <span class="math notranslate">\\(x\\)</span></p>
<div class="cell docutils container"><div class="cell_input docutils container">
<div class="highlight"><pre>{shown}</pre></div></div>
<div class="cell_output docutils container"><pre>tensor([1., 1., 1.])</pre></div></div>
<div class="cell tag_hide-input docutils container"><details class="hide above-input">
<summary>Show code cell source</summary><div class="cell_input docutils container">
<div class="highlight"><pre>{folded}</pre></div></div></details></div>
<details class="sd-dropdown"><p>a solution nobody sees before opening it</p></details>
<div class="highlight-bash"><div class="highlight"><pre>make demo
</pre></div></div>
</section></article></body></html>"""


def test_the_built_page_is_counted_again_and_agrees(tmp_path):
    page = tmp_path / "01_page.html"
    page.write_text(HTML.format(shown=SHOWN, folded=FOLDED))
    counted = weight.read_page(page)
    assert counted.stated == (7, 4)
    assert (counted.words, counted.cells, counted.commands) == (7, [3], 1)
    assert weight.problems({"01_page": counted}) == []


def test_the_limits_are_reported(tmp_path):
    heavy = weight.Page(stated=(40_000, 0), words=40_000, cells=[41, 30])
    unstated = weight.Page(words=10)
    found = weight.problems({"09_copy_task": heavy, "20_appendix_x": unstated})
    assert "20_appendix_x: no reading time under the title" in found
    assert "09_copy_task: states 0 lines of code, shows 71" in found
    assert "09_copy_task: a shown cell of 41 lines" in found
    assert "the main line reads in 179 minutes" in found  # 40,000/230 + 71/15
