"""pytest's setup for the tests and the chapters (``pytest --nbmake book/``)."""

import os


def pytest_configure(config):
    """Every process the tests start trains at one fixed thread count, PyTorch's
    default (one per core), unless OMP_NUM_THREADS sets another. A count that a run
    chose by timing (appendix B) could differ from one test run to the next with how
    busy the machine is, and it changes the order of floating-point sums: a result
    near a test's bound could then pass on one run and fail on the next."""
    import torch

    os.environ.setdefault("OMP_NUM_THREADS", str(torch.get_num_threads()))

    # Notebook cells are bounded by their steps, not by seconds: a busy machine makes
    # them slower, never red. (nbmake is optional: `pytest tests` runs without it.)
    given = any(a.startswith("--nbmake-timeout") for a in config.invocation_params.args)
    if config.pluginmanager.hasplugin("nbmake") and not given:
        config.option.nbmake_timeout = -1
