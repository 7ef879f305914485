"""Helpers of the book's pages alone (no command imports them): the scale a page runs at
(``scale``) and what the pages glue and show (``pages``)."""
