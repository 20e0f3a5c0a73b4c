"""Hooks shared by every pytest layer under tests/: the binaries a test
declares with build.needs() are checked before it runs (skip when not built,
fail under CI=true; tests/lib/build.py)."""
from tests.lib import build


def pytest_configure(config):
    config.addinivalue_line("markers", f"{build.MARKER}(*names): binaries of ours the test runs "
                            "(tests/lib/build.py BINARIES); missing ones skip it, or fail it "
                            "under CI=true")


def pytest_runtest_setup(item):
    for mark in item.iter_markers(build.MARKER):
        build.require(*mark.args)
