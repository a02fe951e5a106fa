"""Test options for the Python suite.

``--reverse-order`` runs the collected tests in reverse (modules and the
tests within them), so a test that passes only after another has set
something up — or fails only after another left something behind (Ray's
signal handlers, a cluster) — shows up: test.sh runs the suite in its
default order, and the reversed order is one command away.
"""


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
