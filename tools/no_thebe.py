"""A Sphinx extension of the book's build: the pages load none of Thebe's scripts.

jupyter-book always loads sphinx-thebe, which runs a page's code in the browser on a
remote kernel. The book has no such kernel (its code runs in Jupyter, or in the build),
and sphinx-thebe adds its configuration script each time the sources are read, so a
build that read them twice declared ``THEBE_JS_URL`` twice and every page logged an
error. Configured in _config.yml (sphinx: local_extensions).
"""

from __future__ import annotations


def is_thebe(script) -> bool:
    body = getattr(script, "attributes", {}).get("body", "") or ""
    return "THEBE_JS_URL" in body or str(getattr(script, "filename", script)).endswith(
        "sphinx-thebe.js"
    )


def drop_thebe(app, pagename, templatename, context, doctree) -> None:
    if "script_files" in context:
        context["script_files"] = [
            s for s in context["script_files"] if not is_thebe(s)
        ]


def setup(app):
    app.connect("html-page-context", drop_thebe)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
