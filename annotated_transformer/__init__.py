"""The Annotated Transformer, reproducible.

Every module here except this file and ``_literate`` is generated from a chapter of the
book in ``book/`` (run ``make export``); each module's header names its chapter."""

__version__ = "0.1.0"
