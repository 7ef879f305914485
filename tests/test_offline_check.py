"""The offline check of the built book: tables shown as text, and computed tables
missing from a page."""

import json
from pathlib import Path

from conftest import load_tool

ROOT = Path(__file__).resolve().parents[1]
check = load_tool("check_offline_book")

HEADER = (
    "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n# A "
    "chapter\n\n"
)
TABLE_CELL = (
    '```{code-cell} ipython3\ndisplay(Markdown("| a | b |\\n|---|---|\\n| 1 | 2 '
    '|"))\n```\n\n'
)


def test_the_chapters_displayed_tables_are_counted(tmp_path):
    chapter = tmp_path / "01_x.md"
    chapter.write_text(
        HEADER + TABLE_CELL + TABLE_CELL + "```{code-cell} ipython3\n:tags: "
        "[remove-output]\n\nMarkdown('|---|')\n```\n\n"
        + "A table in prose is no computed table:\n\n| a | b |\n|---|---|\n| 1 | 2 "
        "|\n\n" + "```{code-cell} ipython3\nprint('no table here | x |')\n```\n"
    )
    assert check.computed_tables(chapter) == 2


def test_a_table_left_as_text_and_a_missing_table_are_problems():
    as_text = (
        '<div class="cell_output docutils container"><p>| a | b |\n|—|—|\n| 1 | 2 '
        "|</p></div>"
        "<pre>|---|---| in a code block is fine</pre>"
    )
    scan, problems = check.check_page(Path("x.html"), as_text, as_text, tables=1)
    assert scan.output_tables == 0
    assert any("shown as text" in p for p in problems)
    assert any("1 code cell(s) display a table" in p for p in problems)


MEASURED_FINE = """<body data-pagetest='{"scrolls": [], "uncaptioned": []}'>"""


def test_a_rendered_table_passes():
    rendered = MEASURED_FINE + (
        '<div class="cell_output docutils container"><div><table><tr><th>a</th></tr>'
        "<tr><td>1</td></tr></table></div></div><table><tr><td>prose "
        "table</td></tr></table></body>"
    )
    scan, problems = check.check_page(Path("x.html"), rendered, rendered, tables=1)
    assert scan.output_tables == 1
    assert problems == []


def test_every_page_of_the_table_of_contents_is_checked_by_default():
    chapters = check.toc_chapters()
    assert chapters[0] == "00_preface"
    assert all((ROOT / "book" / f"{name}.md").is_file() for name in chapters)
    assert len(chapters) == len(list((ROOT / "book").glob("*.md")))


def test_shown_glue_sideways_scrolls_and_uncaptioned_figures_are_problems():
    measured = {
        "scrolls": [{"tag": "pre", "width": 900, "box": 676, "text": "x = 1"}],
        "uncaptioned": ["plt.show()"],
    }
    page = (
        f"<body data-pagetest='{json.dumps(measured)}'><pre>glue(\"a\", 1)</pre>"
        "<p>prose may name <code>glue(</code></p></body>"
    )
    scan, problems = check.check_page(Path("x.html"), page, page)
    assert scan.glue_code == ['glue("a", 1)']
    assert any(
        "scrolls sideways at 1280 px (900 px in a 676 px box)" in p for p in problems
    )
    assert any("a figure without a caption" in p for p in problems)
    _, problems = check.check_page(Path("x.html"), "<p>x</p>", "<p>x</p>")
    assert problems == ["the page's measuring script did not run"]


def test_a_highlighted_glue_call_and_a_printed_pipe_table_are_problems():
    # how Pygments highlights a call: one span a token
    highlighted = (
        '<span class="n">glue</span><span class="p">(</span><span class="s2">"bleu"'
        '</span><span class="p">,</span> <span class="n">x</span><span class="p">)'
        "</span>"
    )
    printed = "| split | BLEU |\n| test | 27.3 |\n"  # rows without a |---| rule
    page = (
        f"{MEASURED_FINE}<pre>{highlighted}</pre>"
        f'<div class="cell_output docutils container"><pre>{printed}</pre></div>'
        "<pre>| a code line | that draws | pipes |\n| and another | one | |</pre>"
        "</body>"
    )
    scan, problems = check.check_page(Path("x.html"), page, page)
    assert scan.glue_code == ['glue("bleu", x)']
    assert scan.pipe_text == ["| split | BLEU |"]
    assert any("calls glue(" in p for p in problems)
    assert any("a Markdown table shown as text" in p for p in problems)


def test_a_reference_that_is_not_a_link_is_a_problem_in_the_article_only():
    page = MEASURED_FINE + (
        '<nav><a href="x">Chapter 9</a> chapter 3 in the sidebar</nav><article>'
        "<h1>Appendix B: its title</h1>"
        '<p><a href="09_copy_task.html">chapter 9</a></p>'
        "<table><tr><td>counted from the model (chapter 7)</td></tr></table>"
        "<pre>chapter 4 in code</pre></article></body>"
    )
    _, problems = check.check_page(Path("x.html"), page, page)
    assert problems == [
        "a reference that is not a link, in what a cell displays: 'chapter 7'"
    ]


def test_a_link_left_to_a_source_file_is_a_problem():
    page = MEASURED_FINE + (
        '<a href="../_sources/book/x.md">the source, outside the article</a><article>'
        '<p><a class="reference external" href="09_copy_task.md">chapter 9</a> and '
        '<a class="reference internal" href="07_full_model.html">chapter 7</a></p>'
        "</article></body>"
    )
    _, problems = check.check_page(Path("x.html"), page, page)
    assert problems == [
        "a link to a source file, not to its page (glued Markdown is not resolved): "
        "09_copy_task.md"
    ]


def test_a_script_error_on_the_page_is_a_problem():
    measured = {"scrolls": [], "uncaptioned": [], "errors": ["SyntaxError: x"]}
    page = f"<body data-pagetest='{json.dumps(measured)}'><p>x</p></body>"
    _, problems = check.check_page(Path("x.html"), page, page)
    assert problems == ["a script error on the page: 'SyntaxError: x'"]
