"""A Sphinx extension of the book's build: the alt text of each figure a code cell
draws is the first sentence of its caption (the italic paragraph right after the cell),
so that a reader who cannot see the figure hears what it shows. A figure drawn by a
solution's hidden cell takes the caption its dropdown gives, the paragraph that starts
"*Figure:" (or "*First figure:", ...). Configured in _config.yml (sphinx:
local_extensions).
"""

from __future__ import annotations

import re

from docutils import nodes

FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?=\s+[A-Z(]|\s*$)", re.DOTALL)


def plain_math(text: str) -> str:
    """TeX as a screen reader should say it: \\sqrt{x} as √x, \\text{a} as a, no
    backslashes or braces."""
    text = re.sub(r"\\text\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"([_^])\{([^{}]*)\}", r"\1\2", text)  # d_{model}: d_model
    text = re.sub(r"\\sqrt\{([^{}]*)\}", r"√\1", text)
    text = re.sub(r"\\(cdot|times)\b", "×", text)
    text = re.sub(r"\\([A-Za-z]+)", r"\1", text)
    return text.replace("{", "").replace("}", "")


def first_sentence(text: str) -> str:
    text = plain_math(" ".join(text.split()))
    match = FIRST_SENTENCE.match(text)
    return match.group(1) if match else text


def is_caption(node: nodes.Node) -> bool:
    return (
        isinstance(node, nodes.paragraph)
        and len(node.children) > 0
        and isinstance(node.children[0], nodes.emphasis)
    )


FIGURE_WORDS = re.compile(r"^((The|First|Second|Third) )?[Ff]igure\b")


def caption_paragraphs(node: nodes.Node) -> list[str]:
    """The captions inside ``node``, in order: paragraphs that start in italics, and
    italic sentences within a paragraph that speak of "the figure"."""
    captions = []
    for paragraph in node.findall(nodes.paragraph):
        if is_caption(paragraph):
            captions.append(paragraph.astext())
        else:
            captions += [
                e.astext()
                for e in paragraph.findall(nodes.emphasis)
                if FIGURE_WORDS.match(e.astext())
            ]
    return captions


def draws_figure(node: nodes.Node) -> bool:
    return "cell" in node.get("classes", []) and any(node.findall(nodes.image))


def is_cell(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Element) and "cell" in node.get("classes", [])


def nth_caption(captions: list[str], figures: int) -> str:
    caption = captions[min(figures, len(captions) - 1)]
    return re.sub(r"^(\w+ )?[Ff]igure: ", "", caption)


def dropdown_caption(cell: nodes.Element) -> str | None:
    """A figure drawn by a solution's hidden cell: its caption is in the solution's
    dropdown, which comes right after the exercise's cells (or, on an older page,
    before them). The dropdown's captions are taken in order, one for each
    figure-drawing cell: "*First figure: ...*", "*Second figure: ...*"."""
    node = cell  # the cell, or the fold a hidden cell is wrapped in
    while node.parent is not None and not isinstance(node, nodes.section):
        parent = node.parent
        here = parent.index(node)
        # after the cells: the dropdown that follows them, if only cells come between
        for sibling in parent.children[here + 1 :]:
            captions = caption_paragraphs(sibling)
            if captions:
                before = 0
                for earlier in reversed(parent.children[:here]):
                    if not is_cell(earlier):
                        break
                    before += draws_figure(earlier)
                return nth_caption(captions, before)
            if not is_cell(sibling):
                break
        # before the cells: the dropdown they follow
        figures = 0
        for sibling in reversed(parent.children[:here]):
            if is_cell(sibling) and draws_figure(sibling):
                figures += 1
                continue
            captions = caption_paragraphs(sibling)
            if captions:
                return nth_caption(captions, figures)
        node = parent
    return None


def caption_for(image: nodes.image) -> str | None:
    cell = image.parent
    while cell is not None and "cell" not in cell.get("classes", []):
        cell = cell.parent
    if cell is None or cell.parent is None:
        return None
    siblings = cell.parent.children
    after = siblings.index(cell) + 1
    if after < len(siblings) and is_caption(siblings[after]):
        return siblings[after].astext()
    return dropdown_caption(cell)


def set_alt_texts(app, doctree: nodes.document) -> None:
    for image in doctree.findall(nodes.image):
        caption = caption_for(image)
        if caption:
            image["alt"] = first_sentence(caption)


def setup(app):
    app.connect("doctree-read", set_alt_texts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
