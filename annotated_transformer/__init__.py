"""The Annotated Transformer, reproducible.

Every module here and in the sub-packages is generated from a chapter of the book in
``book/`` by ``tools/literate.py`` (run ``make export``), as are the explorer's script
and page in ``figures/``; each file's header names its chapter. The ``__init__.py``
files, which say what each folder holds, and ``__main__.py`` (``python -m
annotated_transformer``) are written by hand."""

__version__ = "0.1.0"
