"""Hooks shared by every pytest layer under tests/: the binaries a test
declares with build.needs() are checked before it runs (skip when not built,
fail under CI=true; tests/lib/build.py), and whatever a fixture could not
clean up is cleaned up at the end of the session."""
import pytest

from tests.lib import build, gateway_util


def pytest_configure(config):
    config.addinivalue_line("markers", f"{build.MARKER}(*names): binaries of ours the test runs "
                            "(tests/lib/build.py BINARIES); missing ones skip it, or fail it "
                            "under CI=true")


def pytest_runtest_setup(item):
    for mark in item.iter_markers(build.MARKER):
        build.require(*mark.args)


@pytest.fixture(scope="session", autouse=True)
def _gateways_cleaned_up():
    """Finalizer of last resort: every openshell-gateway started by a test,
    its supervisors and its osgw-* state dir (tests/lib/gateway_util.py)."""
    yield
    gateway_util.cleanup_all()
