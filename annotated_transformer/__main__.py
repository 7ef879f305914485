"""``python -m annotated_transformer COMMAND [OPTIONS]``: the program
``annotated-transformer``, which runs each command of the package (written by hand,
like the ``__init__.py`` files: a chapter's cell cannot hold it, since a notebook's
kernel is itself a ``__main__``)."""

from annotated_transformer.cli import console

raise SystemExit(console())
