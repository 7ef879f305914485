"""References to chapters and appendices are links to their pages, and each link's
words name the page it leads to (tools/book_references.py)."""

from pathlib import Path

from conftest import load_tool

ROOT = Path(__file__).resolve().parents[1]
references = load_tool("book_references")


def test_every_reference_of_the_book_and_the_readme_is_a_link_to_its_page():
    found = [p for s in references.sources() for p in references.problems(s)]
    assert found == []


def test_a_plain_reference_and_a_link_to_the_wrong_page_are_found(tmp_path):
    page = tmp_path / "99_planted.md"
    page.write_text(
        "As chapter 12 shows, and [chapter 3](12_training_loop.md) too.\n\n"
        "```python\n# chapter 5 in code is code\n```\n\n"
        "`chapter 6` in inline code, and [chapter 9](09_copy_task.md).\n"
    )
    found, fixed = references.problems(page), references.linked(page)
    assert found == [
        f"{page}:1: 'chapter 12' is not a link",
        f"{page}:1: '[chapter 3](12_training_loop.md)' leads to 12_training_loop.md, "
        "not 3",
    ]
    assert fixed.startswith("As [chapter 12](12_training_loop.md) shows")
    assert "# chapter 5 in code is code" in fixed


def test_the_prose_after_a_directive_is_read(tmp_path):
    page = tmp_path / "99_planted.md"
    page.write_text(
        "```{note}\nInside a note, chapter 2.\n```\n\n(sec-x)=\nAfter it, chapter 4.\n"
        "````{dropdown} A solution\n```bash\n# chapter 5\n```\nchapter 6\n````\n"
    )
    assert references.problems(page) == [
        f"{page}:2: 'chapter 2' is not a link",
        f"{page}:6: 'chapter 4' is not a link",
        f"{page}:11: 'chapter 6' is not a link",
    ]


def test_a_list_of_chapters_links_each_one(tmp_path):
    page = tmp_path / "99_planted.md"
    page.write_text("Chapters 14–17 and appendices A and C.\n")
    assert references.linked(page) == (
        "[Chapters 14](14_results.md)–[17](17_constituency_parsing.md) and "
        "[appendices A](20_appendix_speed.md) and [C](22_appendix_commands.md).\n"
    )


def test_an_appendix_over_several_pages_is_named_by_its_main_page(tmp_path):
    """Appendix A runs over several pages: "appendix A" is its main page, and a link
    with those words may lead to any of its pages, but not another appendix's."""
    assert references.pages()["A"].name == "20_appendix_speed.md"
    page = tmp_path / "99_planted.md"
    page.write_text(
        "As [appendix A](20_appendix_speed_recipe.md) shows, and "
        "[appendix B](20_appendix_speed_cpu.md) does not.\n"
    )
    assert references.problems(page) == [
        f"{page}:1: '[appendix B](20_appendix_speed_cpu.md)' leads to "
        "20_appendix_speed_cpu.md, not B"
    ]
