"""The Annotated Transformer, reproducible.

Every module here except this file is generated from a chapter of the book in
``book/`` by ``tools/literate.py`` (run ``make export``); each module's header names its
chapter."""

__version__ = "0.1.0"
