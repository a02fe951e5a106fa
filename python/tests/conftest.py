"""Shared test set-up.

A test module that starts Ray (test_ray_collection.py, test_serve_http.py)
lets `ray.init` install its own SIGINT/SIGTERM handling in this process;
left in place, a later test that needs Ctrl-C to raise KeyboardInterrupt
(test_stratavec.py's test_ctrl_c_stops_build) never sees it. Every module
leaves the process's signal handlers as it found them (issue #54).

``--reverse-order`` runs the collected tests in reverse (modules and the
tests within them), so a test that passes only after another has set
something up — or fails only after another left something behind (Ray's
signal handlers, a cluster) — shows up: test.sh runs the suite in its
default order, and the reversed order is one command away.
"""

import signal

import pytest

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@pytest.fixture(autouse=True, scope="module")
def signal_handlers_restored():
    before = {s: signal.getsignal(s) for s in SIGNALS}
    yield
    # Unconditionally: Ray's C++ core can install a process-wide sigaction
    # behind Python's back, which signal.getsignal does not see; setting the
    # handler again re-installs Python's own.
    for s, handler in before.items():
        if handler is not None:
            signal.signal(s, handler)


def pytest_addoption(parser):
    parser.addoption(
        "--reverse-order",
        action="store_true",
        default=False,
        help="run the collected tests in reverse order (to find tests that depend on the ones before them)",
    )


def pytest_collection_modifyitems(config, items):
    if config.getoption("--reverse-order"):
        items.reverse()
