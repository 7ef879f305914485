"""Measuring the model: FLOP counts (``flops``), the reference implementation that
speed is measured against (``reference``), and timing and profiling
(``performance``)."""
