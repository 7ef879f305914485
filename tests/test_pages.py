"""How a page's prose gets its numbers: ``glue`` keeps each under a name for the HTML
book and for JupyterLab, and every number is glued above the paragraph that shows it."""

import html
import re

import nbformat
from conftest import load_tool
from markdown_it import MarkdownIt

from annotated_transformer.book.pages import as_text, glue, glued

glue_order = load_tool("check_glue_order")


def rendered_text(markdown: str) -> str:
    """What a Markdown renderer shows of ``markdown``: its HTML without the tags."""
    return html.unescape(re.sub(r"<[^>]+>", "", MarkdownIt().renderInline(markdown)))


def test_jupyterlab_shows_a_glued_value_as_the_html_book_reads_it():
    for markdown in [
        "0.20 PFLOP of training",
        "the slowest, [chapter 9](09_copy_task.md), 0.9",
        "head 2 puts 0.06 of its weight on `</s>`",
        "`multi30k-en-de` (seed 0), `multi30k-en-de-seed1` (seed 1)",
    ]:
        assert as_text(markdown) == rendered_text(markdown)


def test_glue_keeps_the_value_under_a_python_name():
    from IPython.display import Markdown

    glue("a-b.c", Markdown("[two](x.md) `words`"), display=False)
    assert glued.a_b_c == "two words"


def notebook(*cells) -> list:
    """Cells given as ("md", text) or ("code", names the cell glues)."""
    made = []
    for kind, content in cells:
        if kind == "md":
            made.append(nbformat.v4.new_markdown_cell(content))
        else:
            outputs = [
                nbformat.v4.new_output(
                    "display_data", data={}, metadata={"scrapbook": {"name": n}}
                )
                for n in content
            ]
            made.append(nbformat.v4.new_code_cell("", outputs=outputs))
    return made


def test_a_number_glued_below_its_paragraph_or_never_is_named():
    cells = notebook(
        ("code", ["first"]),
        ("md", "Shows {eval}`glued.first` and {eval}`glued.second`."),
        ("code", ["second"]),
        ("md", "Then {eval}`glued.second` and {eval}`glued.third`; `glued.first`."),
    )
    assert glue_order.late_numbers(cells) == [(1, "second"), (3, "third")]
