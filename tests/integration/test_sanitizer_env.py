"""The sanitizer options a test run gives our own binaries (sanitizer_util)
stay with them: the agent that a supervisor starts through the launcher sees
none of them. Against a normal build the same variables carry marker values,
so the property is pinned either way."""
import os

import pytest

from tests.lib import build
from tests.lib import sanitizer_util
from tests.lib.boundary_util import Supervisor

pytestmark = [build.needs("openshell-supervisor", "openshell-sandbox"),
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

NAMES = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")


def test_sanitizer_options_never_reach_the_agent():
    env = sanitizer_util.sanitizer_env() or {"ASAN_OPTIONS": "marker=asan",
                                             "UBSAN_OPTIONS": "marker=ubsan",
                                             "LSAN_OPTIONS": "marker=lsan"}
    sup = Supervisor("san-env", ["/usr/bin/env"], env=env).start()
    try:
        rc, out, err = sup.wait()
    finally:
        sup.stop()
    assert rc == 0, err
    # Positive control: this is the agent's environment, as the supervisor built it.
    assert "HTTP_PROXY=" in out, out
    leaked = [line for line in out.splitlines() if line.split("=", 1)[0] in NAMES]
    assert not leaked, leaked
