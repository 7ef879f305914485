"""pytest's setup for the tests and the chapters (``pytest --nbmake book/``)."""

import os


def pytest_configure(config):
    """Every process the tests start uses the cores that no other program keeps busy
    now, the rule of the decoding commands (appendix B): on a busy machine, one
    thread per core makes every parallel region wait for the core it shares. A count
    fixed with OMP_NUM_THREADS is kept."""
    from annotated_transformer.devices import fixed_threads, free_cores

    if not fixed_threads():
        os.environ["OMP_NUM_THREADS"] = str(free_cores())
