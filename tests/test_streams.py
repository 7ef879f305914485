"""Standard streams that are closed, a reader that goes away, a locale that is not
UTF-8: a command answers in one line, and loses no work it could keep."""

import io
import os
import shlex
import subprocess
import sys

import pytest

from annotated_transformer import cli

PYTHON = shlex.quote(sys.executable)


def shell(command: str) -> subprocess.CompletedProcess:
    """``command`` in bash, which can close a stream (``2>&-``) or pipe it."""
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True)


@pytest.fixture(scope="module")
def translate(finished_run, tmp_path_factory):
    """The translate command on the tiny run, with three lines to translate as -i."""
    three = tmp_path_factory.mktemp("input") / "three.en"
    three.write_text("the red cat\na dog runs\nthe old man sleeps\n", encoding="utf-8")
    run = shlex.quote(str(finished_run))
    return (
        f"{PYTHON} -m annotated_transformer.translate --run {run} "
        f"-i {shlex.quote(str(three))}"
    )


@pytest.mark.parametrize("progress", ["--no-progress", "--progress"])
def test_with_standard_error_closed_the_output_has_one_line_per_input(
    translate, progress
):
    result = shell(f"{translate} {progress} 2>&-")
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 3


def test_a_reader_that_goes_away_stops_a_command_quietly(translate):
    result = shell(f"{PYTHON} -m annotated_transformer.train --print-config | head -1")
    assert (result.stdout, result.stderr) == ("{\n", "")
    # `true` has gone long before the translations are written
    result = shell(f"{translate} --no-progress | true; echo ${{PIPESTATUS[0]}}")
    assert result.stdout == "141\n"
    assert "Traceback" not in result.stderr and "Error" not in result.stderr


@pytest.mark.parametrize(
    "closing, message",
    [
        (">&-", "standard output is closed: give a file for the translations with -o"),
        ("<&-", "standard input is closed: give the sentences with -i"),
    ],
)
def test_a_closed_stream_is_refused_before_the_work(
    finished_run, translate, closing, message
):
    command = translate if closing == ">&-" else translate.split(" -i ")[0]
    for interactive in ("", "--interactive"):
        result = shell(f"{command} --no-progress {interactive} {closing}")
        assert result.returncode == 2
        assert result.stderr == f"error: {message}\n"


def test_streams_are_utf_8_whatever_the_locale(monkeypatch):
    raw = io.BytesIO()
    ascii_out = io.TextIOWrapper(raw, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_out)
    monkeypatch.setattr(sys, "stderr", None)  # closed: 2>&-
    cli.standard_streams()
    assert sys.stdout.encoding == "utf-8"
    print("Grüße")
    sys.stdout.flush()
    assert raw.getvalue() == "Grüße\n".encode()
    assert sys.stderr.name == os.devnull
    sys.stderr.close()
