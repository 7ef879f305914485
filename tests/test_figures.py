"""The book's figures as a reader sees them: the size of their smallest text, recorded
in each PNG when the book is built and checked at the width the page shows it, and
their alt text, taken from their captions."""

from pathlib import Path

import matplotlib
import pytest
from conftest import load_tool
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

figure_text = load_tool("figure_text")
figure_alt = load_tool("figure_alt")
check = load_tool("check_offline_book")


def saved_figure(path: Path, points: float, dpi: int = 100) -> Path:
    figure_text.install()
    fig, ax = plt.subplots(figsize=(6, 2), dpi=dpi)
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("label", fontsize=points)
    ax.tick_params(labelsize=12)
    fig.savefig(path)
    plt.close(fig)
    return path


def test_a_saved_figure_records_its_smallest_text_in_image_pixels(tmp_path):
    # 6 points at 150 dots per inch: 6 / 72 inch, 12.5 pixels
    png = saved_figure(tmp_path / "f.png", points=6, dpi=150)
    assert float(figure_text.png_text(png)[figure_text.KEY]) == pytest.approx(12.5)


def test_text_a_reader_sees_under_10_px_is_a_problem(tmp_path):
    png = saved_figure(tmp_path / "f.png", points=9)  # 12.5 px in the image
    image = {"src": "f.png", "alt": "A line rises.", "natural": 1000, "shown": 688}
    problems = check.figure_problems(tmp_path / "page.html", [image])
    assert len(problems) == 1 and "8.6 px" in problems[0]  # 12.5 * 688 / 1000
    image["shown"] = 1000  # shown at its own size: 12.5 px
    assert check.figure_problems(tmp_path / "page.html", [image]) == []
    assert png.is_file()


def test_an_image_whose_alt_text_is_empty_or_a_file_name_is_a_problem(tmp_path):
    images = [
        {"src": "a.png", "alt": "", "natural": 0, "shown": 0},
        {"src": "b.png", "alt": "../_images/b.png", "natural": 0, "shown": 0},
        {"src": "c.png", "alt": "The loss falls.", "natural": 0, "shown": 0},
    ]
    problems = check.figure_problems(tmp_path / "page.html", images)
    assert [p.split(": ")[-1] for p in problems] == ["a.png", "b.png"]


def doctree(rst: str) -> nodes.document:
    document = new_document("page", get_default_settings(Parser))
    Parser().parse(rst, document)
    return document


def cell_with_image(document: nodes.document) -> nodes.image:
    """Put a code cell whose output is an image first in ``document``."""
    image = nodes.image(uri="_images/x.png", alt="_images/x.png")
    output = nodes.container("", image, classes=["cell_output"])
    document.insert(0, nodes.container("", output, classes=["cell"]))
    return image


def test_a_figures_alt_text_is_the_first_sentence_of_its_caption():
    document = doctree(
        "*The loss falls fast. It then flattens near 2.6 (e.g. at update 40).*\n"
    )
    image = cell_with_image(document)
    figure_alt.set_alt_texts(None, document)
    assert image["alt"] == "The loss falls fast."


def test_a_figure_without_a_caption_keeps_its_alt_text():
    document = doctree("Plain prose, not a caption.\n")
    image = cell_with_image(document)
    figure_alt.set_alt_texts(None, document)
    assert image["alt"] == "_images/x.png"


def test_a_solutions_figures_take_their_dropdowns_captions_in_order():
    document = doctree(
        "Some prose.\n\n*First figure: the loss falls. More.*\n\n"
        "*Second figure: the weight grows.*\n"
    )
    dropdown = nodes.container("", *document.children)
    document.children = [dropdown]
    first, second = cell_with_image(document), cell_with_image(document)
    document.children = [dropdown, *reversed(document.children[:2])]
    figure_alt.set_alt_texts(None, document)
    assert (first["alt"], second["alt"]) == ("the loss falls.", "the weight grows.")


def test_alt_text_says_tex_in_words():
    assert figure_alt.first_sentence(
        "Post-norm stays at \\sqrt{d_{\\text{model}}} = 8 in every block. Then more."
    ) == ("Post-norm stays at √d_model = 8 in every block.")


def test_cells_before_their_dropdown_take_its_captions_not_the_previous_ones():
    earlier = doctree("*Figure: the previous exercise's figure.*\n")
    document = doctree(
        "**Exercise 2.** A question.\n\n"
        "*First figure: the loss falls. More.*\n\n*Second figure: the weight grows.*\n"
    )
    question, *captions = document.children
    dropdown = nodes.container("", *captions)
    first, second = cell_with_image(document), cell_with_image(document)
    document.children = [
        nodes.container("", *earlier.children),
        question,
        *reversed(document.children[:2]),
        dropdown,
    ]
    figure_alt.set_alt_texts(None, document)
    assert (first["alt"], second["alt"]) == ("the loss falls.", "the weight grows.")
