"""test_boundary_cycles.py - 1,000 inpod attach/confirm/teardown cycles leave
nothing behind: no supervisor-side veth, no nftables table in the host, no
fd in the process, no namespace mount. Counts before and after; the positive
control shows the counters do see a live sandbox's resources."""
import json
import os
import subprocess
import sys
import time

import pytest

from tests.lib import build
from tests.lib.boundary_util import BENCH, PROBE, Supervisor, our_links

pytestmark = [build.needs("boundary-bench"),
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def nsfs_mounts():
    """Namespace bind mounts of ours (other tests on this host may add their own)."""
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if " nsfs " in line and ("openshell" in line or "osb" in line)]


def host_tables():
    return subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout


def settle(baseline, timeout=30):
    """Namespace teardown finishes in the kernel's batched cleanup: wait for it."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and our_links() != baseline:
        time.sleep(0.1)
    return our_links()


def test_counters_see_a_live_sandbox():
    before = our_links()
    sup = Supervisor("bt-count", [sys.executable, PROBE, "sleep=10"]).start()
    try:
        sup.netns()
        assert len(our_links()) == len(before) + 1
    finally:
        sup.stop()
    assert settle(before) == before


def test_thousand_cycles_leave_nothing_behind():
    links, tables, mounts = our_links(), host_tables(), nsfs_mounts()
    r = subprocess.run([BENCH, "--cycles", "1000"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert stats["cycles"] == 1000
    assert stats["fds_after"] == stats["fds_before"], stats
    assert settle(links) == links
    # Other engineers' tests may change the host's tables; ours must never appear.
    assert "openshell" not in tables and "openshell" not in host_tables()
    assert nsfs_mounts() == mounts == []
