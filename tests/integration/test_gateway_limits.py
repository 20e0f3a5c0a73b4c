"""Operator limits on the local driver: [openshell.drivers.local]
max_processes reaches every sandbox as its pids cgroup limit (an rlimit where
no controller is mounted): a fork loop stops there; without it the same loop
runs to the end."""

import pytest

from tests.lib import build
from tests.lib.gateway_util import Gateway
from test_supervisor_limits import FORK

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

POLICY = """version: 1
filesystem_policy:
  include_workdir: false
  read_only: [/]
  read_write: [/tmp, /dev/null]
network_policies: {}
"""


def started(gw, name, tmp_path):
    pol = tmp_path / f"{name}.yaml"
    pol.write_text(POLICY)
    r = gw.cli("sandbox", "create", "--name", name, "--policy", str(pol), "--", "/bin/sh", "-c",
               FORK)
    line = [l for l in r.stdout.splitlines() if l.startswith("started=")]
    assert line, (r.stdout, r.stderr)
    return int(line[-1].split("=")[1])


@pytest.mark.parametrize("limit", [None, "20"])
def test_max_processes_from_gateway_config(tmp_path, limit):
    env = {"OPENSHELL_DRIVERS_LOCAL_MAX_PROCESSES": limit} if limit else {}
    gw = Gateway(extra_env=env).start()
    try:
        n = started(gw, "lim", tmp_path)
        if limit:
            assert 0 < n < 20
        else:
            assert n == 60
    finally:
        gw.cleanup()
