"""The prose check: chapters state measured numbers only through cells."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_prose_numbers", ROOT / "tools" / "check_prose_numbers.py")
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

HEADER = "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n# A chapter\n\n"


def test_typed_numbers_are_found_and_computed_ones_are_not(tmp_path):
    chapter = tmp_path / "01_x.md"
    chapter.write_text(HEADER + (
        "Beam search adds a BLEU point (34.09 to 35.26 on test2016). The cache is 6.5 times faster.\n"
        "It is a 7.6M-parameter model. Averaging adds {glue:md}`gain` BLEU, the paper reports 27.3 BLEU.\n"
        "The cache is {glue:md}`speedup` times faster, and the model has {glue:md}`params` parameters.\n\n"
        "```{code-cell} ipython3\nprint('BLEU 12.34, 9.9x faster')\n```\n"))
    found = check.typed_numbers(chapter)
    assert len(found) == 3, found
    assert "a BLEU score typed by hand (34.09, 35.26)" in found[0]
    assert "a speed-up typed by hand (6.5 times)" in found[1]
    assert "a parameter count typed by hand (7.6M)" in found[2]


def test_the_book_states_no_measured_number_by_hand():
    assert check.main(ROOT) == 0
