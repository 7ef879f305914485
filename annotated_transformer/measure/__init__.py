"""Measuring the model: FLOP counts (``flops``), the reference implementation that
speed is measured against (``reference``), timing and profiling (``performance``), and
one module for each mode of the ``benchmark`` command: ``training``, ``decoding``,
``kv_cache``, ``data_feed`` and ``threads``."""
