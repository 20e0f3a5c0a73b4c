"""Shared fixtures of the adversarial suite: one upstream namespace (echo
servers on TEST-NET-2), one canary namespace (TEST-NET-3) and host-side bait
the agent must not reach (an abstract unix socket, a loopback listener, a
process, a secret file, a setuid copy of `id`). Everything is removed at the
end of the session, even when tests fail. The classes behind them, NET and
last() are in tests/lib/adv_util.py."""
import os

import pytest

from tests.lib import build
from tests.lib.adv_util import AdvSandbox, Bait, Canary, Upstream
# Sanitizer builds: a report written during a test fails it.
from tests.lib.sanitizer_util import (pytest_configure, pytest_report_header,  # noqa: F401
                                      pytest_runtest_makereport)


def pytest_collection_modifyitems(config, items):
    """Every case runs the supervisor, the launcher and the probe as root:
    not root is a machine limit (skip); a binary not built is checked per test
    by tests/conftest.py (skip, or fail under CI=true)."""
    needs = build.needs("openshell-supervisor", "openshell-sandbox", "sandbox-probe")
    root = os.geteuid() == 0
    skip = pytest.mark.skip(reason="needs root (namespaces, nftables, setuid bait)")
    for item in items:
        if "adversarial" in str(item.fspath):
            item.add_marker(needs)
            if not root:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def upstream():
    up = Upstream().start()
    yield up
    up.stop()


@pytest.fixture(scope="session")
def canary():
    c = Canary()
    try:
        yield c.up()
    finally:
        c.down()


@pytest.fixture(scope="session")
def bait():
    b = Bait()
    yield b
    b.close()


@pytest.fixture(scope="module")
def run_sandbox(upstream, canary, bait):
    """Factory: runs one sandbox to completion and keeps it for the module's
    tests (they all assert on the same run)."""
    made = []

    def run(name, policy, probes, **kw):
        extra = dict(bait.config(), **kw.pop("extra_config", {}))
        sb = AdvSandbox(name, policy, probes, upstream, canary, extra_config=extra, **kw)
        made.append(sb)
        return sb.run()

    yield run
    for sb in made:
        sb.cleanup()
