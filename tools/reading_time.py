"""A Sphinx extension of the book's build: every page opens with how long it takes to
read, computed from what the page shows.

A reader is taken to read 230 words and 15 lines of code a minute. Words are those of
the page's text that are not folded: prose, titles, captions, tables and exercises,
each formula counting as one word; not the code cells (their input or output), not a
dropdown's solution, not a folded cell. Lines of code are the non-blank lines of the
code cells whose source is shown, and of the blocks of code in the prose (the commands
to run); a cell folded with ``hide-input`` or ``hide-cell``,
or removed, costs nothing until it is opened. The line is written as a paragraph of
class ``reading-time`` right under the page's title, carrying its counts in ``data-``
attributes so that ``tools/book_weight.py`` can add up the book from the built HTML
(and count the same things again from the HTML, to check this extension). Configured in
_config.yml (sphinx: local_extensions).
"""

from __future__ import annotations

import math

from docutils import nodes

WORDS_A_MINUTE = 230
CODE_LINES_A_MINUTE = 15


def minutes(words: int, code_lines: int) -> float:
    """How long a page of ``words`` words and ``code_lines`` shown lines of code
    takes to read."""
    return words / WORDS_A_MINUTE + code_lines / CODE_LINES_A_MINUTE


def is_folded(node: nodes.Node) -> bool:
    """A node that the page shows closed: a dropdown, or a folded cell's part."""
    kind = type(node).__name__
    return (
        kind == "HideCodeCellNode"
        or kind.startswith("dropdown")
        or (
            isinstance(node, nodes.Element)
            and node.get("design_component") == "dropdown"
        )
    )


def is_cell(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Element) and str(
        node.get("nb_element", "")
    ).startswith("cell_code")


def is_source(node: nodes.Node) -> bool:
    return (
        isinstance(node, nodes.Element) and node.get("nb_element") == "cell_code_source"
    )


SKIPPED = (nodes.comment, nodes.raw, nodes.system_message, nodes.literal_block)


def inside(node: nodes.Node, test) -> bool:
    while node is not None:
        if test(node):
            return True
        node = node.parent
    return False


def page_counts(doctree: nodes.document) -> tuple[int, int]:
    """(words, shown lines of code) of a page."""
    words = 0
    for text in doctree.findall(nodes.Text):
        if inside(text, lambda n: is_folded(n) or is_cell(n)):
            continue
        if inside(text, lambda n: isinstance(n, (nodes.math, nodes.math_block))):
            continue  # counted once below
        if inside(text, lambda n: isinstance(n, SKIPPED)):
            continue
        words += len(text.astext().split())
    for formula in doctree.findall(
        lambda n: isinstance(n, (nodes.math, nodes.math_block))
    ):
        if not inside(formula, lambda n: is_folded(n) or is_cell(n)):
            words += 1
    code = 0  # a cell's source, or a block of code in the prose (a command to run)
    for block in doctree.findall(nodes.literal_block):
        if inside(block, is_folded):
            continue
        if inside(block, is_cell) and not inside(block, is_source):
            continue  # what a cell printed
        code += sum(1 for line in block.astext().splitlines() if line.strip())
    return words, code


def add_reading_time(app, doctree: nodes.document, docname: str) -> None:
    sections = list(doctree.findall(nodes.section))
    if not sections:
        return
    words, code = page_counts(doctree)
    shown = max(1, math.ceil(minutes(words, code)))
    unit = "minute" if shown == 1 else "minutes"
    parts = f"{words:,} words" + (f" and {code:,} lines of code" if code else "")
    html = (
        f'<p class="reading-time" data-words="{words}" data-code-lines="{code}">'
        f"About {shown} {unit} to read ({parts}).</p>\n"
    )
    title = sections[0].next_node(nodes.title)
    title.parent.insert(
        title.parent.index(title) + 1, nodes.raw("", html, format="html")
    )


def setup(app):
    app.connect("doctree-resolved", add_reading_time)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
