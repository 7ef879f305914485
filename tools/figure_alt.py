"""A Sphinx extension of the book's build: the alt text of each figure a code cell
draws is the first sentence of its caption (the italic paragraph right after the cell),
so that a reader who cannot see the figure hears what it shows. A figure drawn by a
solution's hidden cell takes the caption its dropdown gives, the paragraph that starts
"*Figure:". Configured in _config.yml (sphinx: local_extensions).
"""

from __future__ import annotations

import re

from docutils import nodes

FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?=\s+[A-Z(]|\s*$)", re.DOTALL)


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    match = FIRST_SENTENCE.match(text)
    return match.group(1) if match else text


def is_caption(node: nodes.Node) -> bool:
    return (
        isinstance(node, nodes.paragraph)
        and len(node.children) > 0
        and isinstance(node.children[0], nodes.emphasis)
    )


def dropdown_caption(cell: nodes.Element) -> str | None:
    """The text of the "*Figure: ...*" paragraph of the dropdown before ``cell``."""
    parent = cell.parent
    for sibling in reversed(parent.children[: parent.index(cell)]):
        for paragraph in sibling.findall(nodes.paragraph):
            if is_caption(paragraph) and paragraph.astext().startswith("Figure:"):
                return paragraph.astext().removeprefix("Figure:").strip()
        if "dropdown" in str(sibling.get("design_component", "")):
            return None
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
