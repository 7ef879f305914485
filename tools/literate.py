"""The book-to-package exporter (hand-written, as are the package's ``__init__.py``
files; it lives outside the package, which needs neither jupytext nor nbformat to run).

Every chapter ``book/NN_name.md`` is a MyST Markdown notebook. A code cell whose first
line is ``# export: NAME`` is appended, in chapter order, to
``annotated_transformer/NAME.py`` (a dotted name, ``running.trainer``, is a module of a
sub-package, ``annotated_transformer/running/trainer.py``); all other cells are the
chapter's demonstrations. A module may grow over several chapters: the top-level imports
of all its cells are gathered into one block at the top of the module (after its
docstring), merged and ordered by ruff's isort rules, so each chapter's cell imports
what it uses where the reader sees it; an import of the module itself (a later chapter
using what an earlier one defined there) is dropped. A module that defines ``main`` ends
with ``if __name__ == "__main__": raise SystemExit(main())``, written by the exporter:
no chapter holds that cell, which a kernel (itself a ``__main__``) would run. Each
chapter also has an ``.ipynb`` twin with the same cells and no outputs (what ``pytest
--nbmake book/`` runs, and what any notebook program opens). The two are not paired, so
saving a chapter in Jupyter writes only its ``.md``; ``export`` puts right what a
Jupyter without the book's settings adds (a version line, another kernel's name, the
values of {eval} roles) and what a saved twin holds (outputs), so that running the
notebooks leaves a clean tree.

    python tools/literate.py export  # write modules and twins
    python tools/literate.py check   # fail on any difference

Comparisons are made on contents, never on timestamps, and the output is deterministic.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat

# written by jupytext --sync
JUPYTEXT_VERSION_LINE = re.compile(r"^\s+jupytext_version: .*\n", re.MULTILINE)
# every chapter's header; Jupyter's save writes its own kernel name and key order
HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
EXPORT_MARKER = re.compile(r"^#\s*export:\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\s*$")
ANY_MARKER = re.compile(r"^\s*#\s*export\s*:", re.MULTILINE)
# the package's and its sub-packages' faces: a docstring saying what each folder holds
HAND_WRITTEN = "__init__.py"
# and the package's door for `python -m annotated_transformer`, which a chapter cannot
# hold (a kernel is itself a __main__)
DOOR = "__main__.py"
PACKAGE = "annotated_transformer"
# A file that is not Python (the explorer's page and script) is written in a Markdown
# cell as a fenced block whose first line names it in the file's own comment syntax:
# `// export: figures/explorer.js` or `<!-- export: figures/explorer.html -->`.
FENCED = re.compile(r"^```[\w-]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
FILE_MARKER = re.compile(
    r"^(?://|<!--)\s*export:\s*((?:[a-z_]+/)*[a-z_]+\.(?:js|html))\s*(?:-->)?\s*$"
)
COMMENTS = {".js": ("// ", ""), ".html": ("<!-- ", " -->")}


@dataclass(frozen=True)
class ExportedCell:
    chapter: str  # path relative to the repository root, e.g. "book/04_attention.md"
    module: str
    source: str


def chapters(root: Path) -> list[Path]:
    """The chapters in book order (file names start with their two-digit position)."""
    return sorted((root / "book").glob("[0-9][0-9]_*.md"))


def read_chapter(path: Path) -> nbformat.NotebookNode:
    return jupytext.read(path, fmt="md:myst")


def exported_cells(root: Path) -> list[ExportedCell]:
    cells = []
    for path in chapters(root):
        rel = path.relative_to(root).as_posix()
        for index, cell in enumerate(read_chapter(path).cells):
            if cell.cell_type != "code":
                continue
            first, _, rest = cell.source.partition("\n")
            match = EXPORT_MARKER.match(first)
            if ANY_MARKER.search(rest) or (not match and ANY_MARKER.match(first)):
                raise ValueError(
                    f"{rel}, cell {index}: an export marker must be the cell's first "
                    "line, exactly '# export: NAME'; this one would be ignored"
                )
            if match:
                cells.append(ExportedCell(rel, match.group(1), rest.strip("\n")))
    return cells


def exported_files(root: Path) -> dict[str, tuple[list[str], str]]:
    """Each non-Python file the chapters write: its path in the package -> (the
    chapters, its text), blocks of one file joined in chapter order."""
    files: dict[str, tuple[list[str], str]] = {}
    for path in chapters(root):
        rel = path.relative_to(root).as_posix()
        for cell in read_chapter(path).cells:
            if cell.cell_type != "markdown":
                continue
            for block in FENCED.findall(cell.source):
                first, _, rest = block.partition("\n")
                if match := FILE_MARKER.match(first):
                    sources, text = files.get(match.group(1), ([], ""))
                    sources = list(dict.fromkeys([*sources, rel]))
                    files[match.group(1)] = (sources, text + rest)
    return files


def render_files(root: Path) -> dict[str, str]:
    """Map each non-Python file's path in the package to its text: a header in the
    file's comment syntax, then its blocks."""
    rendered = {}
    for name, (sources, text) in sorted(exported_files(root).items()):
        opening, closing = COMMENTS[Path(name).suffix]
        header = (
            f"{opening}Generated from {', '.join(sources)} by `make export`; do not "
            f"edit it by hand.{closing}\n"
        )
        rendered[name] = header + text.rstrip("\n") + "\n"
    return rendered


def _split_imports(source: str, where: str) -> tuple[str, list[ast.stmt], str]:
    """(docstring, top-level import statements, the rest) of one exported cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ValueError(f"{where}: exported cell does not parse: {error}") from None
    lines = source.split("\n")
    docstring, drop, imports = "", set(), []
    body = tree.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        docstring = "\n".join(lines[: body[0].end_lineno])
        drop.update(range(body[0].end_lineno))
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
            drop.update(range(node.lineno - 1, node.end_lineno))
    rest = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    return docstring, imports, re.sub(r"\n{4,}", "\n\n\n", rest).strip("\n")


def ruff(text: str, *arguments: str) -> str:
    """``text`` after ``ruff ARGUMENTS -`` (a module's text on standard input)."""
    command = [
        sys.executable,
        "-m",
        "ruff",
        *arguments,
        "--stdin-filename",
        "module.py",
        "-",
    ]
    try:
        done = subprocess.run(
            command, input=text, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError) as error:
        raise ValueError(
            f"formatting a module needs ruff (pip install -e '.[dev]'): {error}"
        ) from None
    return done.stdout


def tidy(text: str) -> str:
    """``text`` with its import block merged and ordered by ruff's isort rules, then
    laid out by ``ruff format``, as ``make check`` enforces (the project's settings in
    pyproject.toml)."""
    first_party = f"lint.isort.known-first-party = ['{PACKAGE}']"
    imports = [
        "check",
        "--select",
        "I",
        "--fix",
        "--exit-zero",
        "--quiet",
        "--config",
        first_party,
    ]
    return ruff(ruff(text, *imports), "format", "--quiet")


MAIN_GUARD = 'if __name__ == "__main__":\n    raise SystemExit(main())'


def _defines_main(source: str) -> bool:
    """Whether a cell defines a function ``main`` at its top level."""
    return any(
        isinstance(node, ast.FunctionDef) and node.name == "main"
        for node in ast.parse(source).body
    )


def render_modules(root: Path) -> dict[str, str]:
    """Map each module's path in the package (``running/trainer.py``) to the text the
    chapters generate for it."""
    by_module: dict[str, list[ExportedCell]] = {}
    for cell in exported_cells(root):
        by_module.setdefault(cell.module, []).append(cell)
    modules = {}
    for name, cells in sorted(by_module.items()):
        filename = name.replace(".", "/") + ".py"
        if filename.endswith(HAND_WRITTEN):
            raise ValueError(
                f"{cells[0].chapter}: '# export: {name}' would overwrite a "
                "hand-written module"
            )
        sources = list(dict.fromkeys(c.chapter for c in cells))
        # a long list of chapters goes on several lines
        generated = textwrap.wrap(
            f"Generated from {', '.join(sources)} by `make export`.",
            86,
            break_on_hyphens=False,
        )
        header = (
            "".join(f"# {line}\n" for line in generated)
            + "# Do not edit this file by hand: change the chapter and run `make "
            "export` again.\n"
        )
        docstring, imports, parts, previous = "", [], [], None
        for index, cell in enumerate(cells):
            doc, cell_imports, text = _split_imports(
                cell.source, f"{cell.chapter} ({name})"
            )
            if index == 0:
                docstring = doc
            elif doc:
                text = f"{doc}\n{text}".strip("\n")
            # a later chapter's cell may import what an earlier one defined here
            own = f"{PACKAGE}.{name}"
            imports += [
                n
                for n in cell_imports
                if not (isinstance(n, ast.ImportFrom) and n.module == own)
            ]
            if len(sources) > 1 and cell.chapter != previous:
                text = f"# --- from {cell.chapter} ---\n{text}"
            previous = cell.chapter
            if text:
                parts.append(text)
        # a command's module runs its main() under `python -m`; a chapter cannot hold
        # these lines, since a notebook's kernel is itself a __main__
        if any(_defines_main(c.source) for c in cells):
            parts.append(MAIN_GUARD)
        body = "\n\n\n".join(parts)
        # ruff merges and orders it
        block = "\n".join(dict.fromkeys(ast.unparse(node) for node in imports))
        top = "\n".join(part for part in (docstring, block) if part)
        modules[filename] = tidy(
            header + "\n" + top + ("\n\n\n" if top else "") + body + "\n"
        )
    return modules


# Cell metadata that Jupyter changes as a notebook is used and that does not change what
# the book shows.
VOLATILE_METADATA = {
    "execution",
    "ExecuteTime",
    "collapsed",
    "scrolled",
    "jp-MarkdownHeadingCollapsed",
}


def _cell_contents(nb: nbformat.NotebookNode) -> list[tuple[str, str, dict]]:
    """What renders: each cell's type, source, tags and other lasting metadata."""
    return [
        (
            c.cell_type,
            c.source.strip(),
            {
                k: v
                for k, v in c.get("metadata", {}).items()
                if k not in VOLATILE_METADATA
            },
        )
        for c in nb.cells
    ]


def render_twin(chapter: Path) -> str:
    """The ``.ipynb`` twin of a chapter: same cells, no outputs, ids that depend only on
    position."""
    nb = read_chapter(chapter)
    for index, cell in enumerate(nb.cells):
        cell.id = f"{chapter.stem}-{index:03d}"
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return jupytext.writes(nb, fmt="ipynb")


def normalised_chapter(text: str) -> str:
    """A chapter with the book's header: saving it from Jupyter adds a version line,
    names the kernel its own way and may reorder the keys. Values that jupyterlab-myst
    kept for the {eval} roles of a Markdown cell go too. The cells are untouched."""
    if '"user_expressions"' in text:
        nb = jupytext.reads(text, fmt="md:myst")
        for cell in nb.cells:
            cell.metadata.pop("user_expressions", None)
        text = jupytext.writes(nb, fmt="md:myst")
    header_end = text.find("\n---", 3)
    if not text.startswith("---") or header_end < 0:
        return text
    header = text[: header_end + len("\n---\n")]
    if "jupytext:" in header and "kernelspec:" in header and "python" in header:
        return HEADER + text[len(header) :]
    return JUPYTEXT_VERSION_LINE.sub("", text[:header_end]) + text[header_end:]


def export(root: Path) -> list[Path]:
    """Write every generated module and notebook twin; return the files that changed."""
    changed = []
    for chapter in chapters(root):
        changed += _write_if_different(
            chapter, normalised_chapter(chapter.read_text(encoding="utf-8"))
        )
    package = root / PACKAGE
    wanted = render_modules(root) | render_files(root)
    for filename, text in wanted.items():
        changed += _write_if_different(package / filename, text)
    for stale in _generated_files(package):
        if _name(package, stale) not in wanted:
            stale.unlink()
            changed.append(stale)
    for chapter in chapters(root):
        changed += _write_if_different(
            chapter.with_suffix(".ipynb"), render_twin(chapter)
        )
    return changed


def check(root: Path) -> list[str]:
    """Every way the package and the notebook twins differ from the chapters (empty: in
    sync)."""
    problems = []
    package = root / PACKAGE
    wanted = render_modules(root) | render_files(root)
    for filename, text in wanted.items():
        path = package / filename
        if not (path.parent / HAND_WRITTEN).exists():
            problems.append(
                f"{path.parent.relative_to(root)} has no {HAND_WRITTEN}: write one "
                "whose docstring says what the folder holds"
            )
        if not path.exists():
            problems.append(f"{path.relative_to(root)} is missing: run `make export`")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(
                f"{path.relative_to(root)} differs from its chapters: run `make export`"
            )
    for path in sorted({*_generated_files(package), *package.rglob("*.py")}):
        hand_written = path.name == HAND_WRITTEN or _name(package, path) == DOOR
        if _name(package, path) not in wanted and not hand_written:
            problems.append(
                f"{path.relative_to(root)} is not generated from any chapter"
            )
    for chapter in chapters(root):
        if normalised_chapter(text := chapter.read_text(encoding="utf-8")) != text:
            problems.append(
                f"{chapter.relative_to(root)} has a header that Jupyter wrote "
                "(a version line, another kernel name): run `make export`"
            )
        twin = chapter.with_suffix(".ipynb")
        rel = twin.relative_to(root)
        if not twin.exists():
            problems.append(f"{rel} is missing: run `make export`")
            continue
        notebook = nbformat.read(twin, as_version=4)
        if _cell_contents(notebook) != _cell_contents(read_chapter(chapter)):
            problems.append(
                f"{rel} and {chapter.relative_to(root)} differ in cell content or "
                "metadata: the chapter is the source of truth; copy the change into "
                "it, then run `make export`"
            )
        if any(c.get("outputs") for c in notebook.cells if c.cell_type == "code"):
            problems.append(f"{rel} carries outputs: run `make export` to strip them")
    for stray in sorted((root / "book").glob("*.ipynb")):
        if not stray.with_suffix(".md").exists():
            problems.append(f"{stray.relative_to(root)} has no chapter beside it")
    return problems + layout_problems(root)


def layout_problems(root: Path) -> list[str]:
    """The chapters whose code cells ``ruff format`` would lay out otherwise, read from
    their twins (same cells), each named by its ``.md``."""
    twins = [c.with_suffix(".ipynb") for c in chapters(root)]
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", *map(str, twins)],
        capture_output=True,
        text=True,
        cwd=root,
    )
    # ruff names each file as "--> PATH:cell N:..." (older versions: "Would
    # reformat: PATH")
    named = re.findall(r"(?:--> |Would reformat: )(\S+?\.ipynb)", done.stdout)
    return [
        f"{(root / name).resolve().with_suffix('.md').relative_to(root)}: its code is "
        "not laid out as `ruff format` lays it out; `make format` does it"
        for name in dict.fromkeys(named)
    ]


def _name(package: Path, path: Path) -> str:
    """A module's path in the package, as ``render_modules`` names it."""
    return path.relative_to(package).as_posix()


def _generated_files(package: Path) -> list[Path]:
    """The files a chapter wrote: modules and the non-Python files, by their headers."""
    headers = (
        "# Generated from ",
        *(f"{o}Generated from " for o, _ in COMMENTS.values()),
    )
    return [
        p
        for p in sorted(package.rglob("*"))
        if p.suffix in (".py", *COMMENTS)
        and p.name != HAND_WRITTEN
        and p.read_text(encoding="utf-8").startswith(headers)
    ]


def _write_if_different(path: Path, text: str) -> list[Path]:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return []
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return [path]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/literate.py",
        description="Generate the package and the notebook twins from the book's "
        "chapters, or check them.",
    )
    parser.add_argument("command", choices=["export", "check"])
    parser.add_argument(
        "--root", type=Path, default=Path.cwd(), help="repository root (default: here)"
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not (root / "book").is_dir():
        parser.error(
            f"{root} has no book/ folder; run from the repository root or pass --root"
        )
    try:
        if args.command == "export":
            for path in export(root):
                print(f"wrote {path.relative_to(root)}")
            return 0
        problems = check(root)
    except ValueError as error:  # a chapter the exporter cannot read: say where
        print(f"error: {error}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if not problems:
        print(
            f"in sync: {len(chapters(root))} chapters, {len(render_modules(root))} "
            "modules"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
