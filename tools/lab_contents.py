"""How `make lab`'s JupyterLab reads and writes the chapters: a page opens as the book
shows it, and saving it writes back the chapter as it was.

tools/jupyter_lab_config.py, which `make lab` passes to JupyterLab, names
``BookContentsManager`` as the server's contents manager. It is Jupytext's (each
chapter's .md opens as a notebook) with three changes to the notebook it hands to
JupyterLab, each undone when JupyterLab saves it:

- a cell the book hides (tags ``remove-cell``, ``hide-cell``, ``hide-input``, ...)
  starts collapsed: its input, its outputs or both, as the book folds them;
- a citation, ``{cite:p}`key```, shows as author and year linking to the references
  page, "(Vaswani et al., 2017)", where jupyterlab-myst would show the bare key;
- a number the page glues in, ``{eval}`glued.name```, shows "…" until the page has
  run, instead of the variable's name.

Saving also leaves out what the kernel adds to the header (its own name, its
language's details), so opening a chapter, running it and saving it leaves the .md as
it was. Saving stores no outputs: a chapter is text and code, and the .ipynb twins are
written by `make export`. Jupytext's own settings for the book are in
book/jupytext.toml.
"""

from __future__ import annotations

import copy
import re
from functools import cache
from pathlib import Path

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class

# what each of the book's tags hides: (the input, the outputs)
HIDDEN = {
    "remove-cell": (True, True),
    "hide-cell": (True, True),
    "remove-input": (True, False),
    "hide-input": (True, False),
    "remove-output": (False, True),
    "hide-output": (False, True),
}
# every chapter's kernel, as its header names it
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
CITE = re.compile(r"\{cite:([pt])\}`([^`]+)`")
# a citation as JupyterLab shows it; the link's target keeps the role and the keys
SHOWN_CITE = re.compile(r"\[[^\[\]]*\]\(references\.md#cite:([pt]):([^)\s]+)\)")
EVAL = re.compile(r"\{eval\}`([^`]+)`")
PLACEHOLDER = "…"
BIBLIOGRAPHY = Path(__file__).resolve().parents[1] / "book" / "references.bib"


@cache
def authors_and_years(bibliography: Path = BIBLIOGRAPHY) -> dict[str, tuple[str, str]]:
    """Each entry's key: (its authors as the book cites them, its year)."""
    from pybtex.database import parse_file

    entries = parse_file(str(bibliography)).entries
    cited = {}
    for key, entry in entries.items():
        people = entry.persons.get("author", [])
        names = [" ".join(p.last_names).strip("{}") for p in people]
        if len(names) > 2:
            authors = f"{names[0]} et al."
        else:
            authors = " and ".join(names) or key
        cited[key] = (authors, entry.fields.get("year", "n.d."))
    return cited


def show_citations(text: str) -> str:
    """``{cite:p}`a,b``` as "[(A et al., 2017; B, 2016)](references.md#cite:p:a,b)",
    ``{cite:t}`a``` as "[A et al. (2017)](references.md#cite:t:a)"."""
    known = authors_and_years()

    def shown(match: re.Match) -> str:
        role, keys = match.group(1), match.group(2)
        cited = [known.get(k.strip(), (k.strip(), "n.d.")) for k in keys.split(",")]
        if role == "p":
            label = "(" + "; ".join(f"{a}, {y}" for a, y in cited) + ")"
        else:
            label = "; ".join(f"{a} ({y})" for a, y in cited)
        return f"[{label}](references.md#cite:{role}:{keys})"

    return CITE.sub(shown, text)


def restore_citations(text: str) -> str:
    return SHOWN_CITE.sub(lambda m: f"{{cite:{m.group(1)}}}`{m.group(2)}`", text)


def as_shown(notebook: dict) -> dict:
    """The notebook JupyterLab receives."""
    for cell in notebook.get("cells", []):
        tags = cell.get("metadata", {}).get("tags", [])
        source_hidden = any(HIDDEN.get(t, (False, False))[0] for t in tags)
        outputs_hidden = any(HIDDEN.get(t, (False, False))[1] for t in tags)
        if source_hidden or outputs_hidden:
            shown = cell["metadata"].setdefault("jupyter", {})
            shown.update(source_hidden=source_hidden, outputs_hidden=outputs_hidden)
        if cell.get("cell_type") == "markdown":
            source = "".join(cell["source"])
            cell["source"] = show_citations(source)
            expressions = dict.fromkeys(EVAL.findall(source))
            if expressions and "user_expressions" not in cell["metadata"]:
                cell["metadata"]["user_expressions"] = [
                    {
                        "expression": e,
                        "result": {
                            "status": "ok",
                            "data": {"text/plain": PLACEHOLDER},
                            "metadata": {},
                        },
                    }
                    for e in expressions
                ]
    return notebook


def as_written(notebook: dict) -> dict:
    """The notebook written back: the chapter as it was, with what the reader
    changed."""
    notebook = copy.deepcopy(notebook)
    metadata = notebook.setdefault("metadata", {})
    metadata["kernelspec"] = dict(KERNELSPEC)
    metadata.pop("language_info", None)
    for cell in notebook.get("cells", []):
        cell_metadata = cell.get("metadata", {})
        cell_metadata.pop("jupyter", None)
        cell_metadata.pop("user_expressions", None)
        if cell.get("cell_type") == "markdown":
            cell["source"] = restore_citations("".join(cell["source"]))
    return notebook


class BookContentsManager(
    build_async_jupytext_contents_manager_class(AsyncLargeFileManager)
):
    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(
            path, content=content, type=type, format=format, **kwargs
        )
        if model.get("type") == "notebook" and model.get("content"):
            as_shown(model["content"])
        return model

    async def save(self, model, path=""):
        if model.get("type") == "notebook" and model.get("content"):
            model = {**model, "content": as_written(model["content"])}
        return await super().save(model, path)
