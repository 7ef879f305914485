"""pytest's setup for the tests and the chapters (``pytest --nbmake book/``)."""

import os
import re

import pytest

ANSI = re.compile(r"\x1b\[[0-9;]*m")


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A page of the book that stops because a corpus is missing (offline, without
    AT_DATA_DIR) reports one line: the page and what the loader says to do, in place of
    the page's traceback."""
    outcome = yield
    report = outcome.get_result()
    if not (report.failed and call.when == "call" and item.path.suffix == ".ipynb"):
        return
    lines = ANSI.sub("", str(report.longrepr)).splitlines()
    # DataError: ..., or a command's "error: ..." raised by the page
    missing = [
        re.sub(r"^(\w+Error: )?(error: )?", "", line)
        for line in lines
        if "AT_DATA_DIR" in line and re.match(r"(\w+Error|error): ", line)
    ]
    if missing:
        report.longrepr = f"{item.path.name} needs data that is not here: {missing[-1]}"
