"""What pip installs besides the modules: the console script, the type marker, and help
texts without placeholders."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from annotated_transformer import cli

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = (ROOT / "pyproject.toml").read_text()


def test_the_console_script_is_the_cli_console_function():
    section = PYPROJECT.split("[project.scripts]\n", 1)[1].split("\n[", 1)[0]
    assert 'annotated-transformer = "annotated_transformer.cli:console"' in section


def test_every_command_of_the_console_script_is_a_module_with_main():
    for name in cli.COMMANDS:
        module = importlib.import_module(f"annotated_transformer.{name}")
        assert callable(module.main), name


def test_the_console_script_without_a_command_prints_its_usage(capsys):
    assert cli.console([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: annotated-transformer COMMAND")
    assert "train, translate, evaluate" in err
    assert cli.console(["--help"]) == 0
    assert "usage: annotated-transformer" in capsys.readouterr().out
    assert cli.console(["trian"]) == 2


def test_the_console_script_runs_the_named_command(capsys, tmp_path):
    # band refuses a folder that holds no finished run, as `python -m` would
    status = cli.console(["band", str(tmp_path), "-o", str(tmp_path / "band.json")])
    assert status == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert not (tmp_path / "band.json").exists()


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_no_help_text_shows_a_default_of_none(name, capsys):
    with pytest.raises(SystemExit):
        cli.console([name, "--help"])
    assert "(default: None)" not in capsys.readouterr().out


def test_the_package_says_it_is_typed():
    assert (ROOT / "annotated_transformer" / "py.typed").is_file()
    assert '"py.typed"]' in PYPROJECT.split("[tool.setuptools.package-data]")[1]


def test_every_sub_package_is_installed():
    """pip installs what setuptools finds by the project's ``include``: every folder of
    the package with an ``__init__.py``, so ``import annotated_transformer.running``
    works from a wheel as it does from the clone."""
    tomllib = pytest.importorskip("tomllib")
    from setuptools import find_packages

    found = tomllib.loads(PYPROJECT)["tool"]["setuptools"]["packages"]["find"]
    installed = set(find_packages(where=ROOT, include=found["include"]))
    folders = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in (ROOT / "annotated_transformer").rglob("__init__.py")
    }
    assert installed == folders
    assert {"annotated_transformer", "annotated_transformer.running"} <= installed


def test_every_file_the_chapters_write_besides_modules_is_installed():
    """The explorer's script and markup are package data: pip installs each file
    that a chapter writes (``render_files``) because pyproject names it."""
    tomllib = pytest.importorskip("tomllib")
    from conftest import load_tool

    written = load_tool("literate").render_files(ROOT)
    assert {"figures/explorer.js", "figures/explorer.html"} <= set(written)
    listed = tomllib.loads(PYPROJECT)["tool"]["setuptools"]["package-data"]
    for name in written:
        folder, _, file = name.rpartition("/")
        package = ".".join(["annotated_transformer", *filter(None, folder.split("/"))])
        assert file in listed.get(package, []), name


def test_version_and_python_m_annotated_transformer():
    """`python -m annotated_transformer` is the console script; --version names the
    version pip installed."""
    from importlib.metadata import version

    import annotated_transformer

    runs = [
        subprocess.run(
            [sys.executable, "-m", "annotated_transformer", *argv],
            capture_output=True,
            text=True,
        )
        for argv in (["--version"], ["--help"], [])
    ]
    expected = f"annotated-transformer {annotated_transformer.__version__}\n"
    assert (runs[0].returncode, runs[0].stdout) == (0, expected)
    assert annotated_transformer.__version__ == version("annotated-transformer")
    assert runs[1].returncode == 0 and "commands: train, translate" in runs[1].stdout
    assert runs[2].returncode == 2 and runs[2].stderr.startswith("usage:")


def test_the_conda_environment_is_the_cpu_one_and_the_gpu_one_differs_only_there():
    cpu = (ROOT / "environment.yml").read_text()
    gpu = (ROOT / "environment-gpu.yml").read_text()
    index = "--extra-index-url https://download.pytorch.org/whl/cpu"
    assert index in cpu and index not in gpu
    same = [line for line in cpu.splitlines() if not line.startswith("#")]
    assert [line for line in same if index not in line] == [
        line for line in gpu.splitlines() if not line.startswith("#")
    ]
    assert "-e .[book,dev,lab]" in cpu
