"""Per-sandbox uids on the local driver: with [drivers.local]
sandbox_uid_range every sandbox's agent runs as its own uid (= gid) from the
range, over the policy's run_as_user, so two sandboxes are apart by plain
file permissions; the claim is freed when the sandbox is deleted; a bad
range is refused naming the key."""
import os
import subprocess

import pytest

from tests.lib import build
from tests.lib.gateway_util import Gateway

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

POLICY = """version: 1
filesystem_policy:
  include_workdir: false
  read_only: [/]
  read_write: [/tmp, /dev/null]
process:
  run_as_user: 65534
  run_as_group: 65534
network_policies: {}
"""
FIRST, LAST = 300000, 300003


def ids_of(gw, name, tmp_path):
    pol = tmp_path / f"{name}.yaml"
    pol.write_text(POLICY)
    r = gw.cli("sandbox", "create", "--name", name, "--policy", str(pol), "--", "/bin/sh", "-c",
               'echo "ids=$(id -u):$(id -g)"')
    line = [l for l in r.stdout.splitlines() if l.startswith("ids=")]
    assert line, (r.stdout, r.stderr)
    uid, gid = line[-1][4:].split(":")
    return int(uid), int(gid)


def claims(gw):
    d = os.path.join(gw.state_dir, "uids")
    if not os.path.isdir(d):
        return {}
    return {int(f): open(os.path.join(d, f)).read() for f in os.listdir(d)}


def test_each_sandbox_runs_as_its_own_uid_from_the_range(tmp_path):
    gw = Gateway(extra_env={"OPENSHELL_DRIVERS_LOCAL_SANDBOX_UID_RANGE": f"{FIRST}-{LAST}"}).start()
    try:
        a, b = ids_of(gw, "ua", tmp_path), ids_of(gw, "ub", tmp_path)
        assert a[0] == a[1] and b[0] == b[1], (a, b)  # uid = gid
        assert FIRST <= a[0] <= LAST and FIRST <= b[0] <= LAST
        assert a[0] != b[0]
        owners = claims(gw)
        assert set(owners) == {a[0], b[0]}, owners
        # Deleting a sandbox frees its uid.
        gw.cli("sandbox", "delete", "ua")
        assert a[0] not in claims(gw) and b[0] in claims(gw)
    finally:
        gw.cleanup()


def test_without_a_range_the_policy_user_stays(tmp_path):
    gw = Gateway().start()  # control: the same policy, no range
    try:
        assert ids_of(gw, "un", tmp_path) == (65534, 65534)
        assert claims(gw) == {}
    finally:
        gw.cleanup()


@pytest.mark.parametrize("bad", ["300005-300001", "10-20", "abc", "300000"])
def test_a_bad_range_is_refused_naming_the_key(tmp_path, bad):
    conf = tmp_path / "gateway.toml"
    conf.write_text(f'[openshell.drivers.local]\nsandbox_uid_range = "{bad}"\n')
    r = subprocess.run([build.binary("openshell-gateway"), "--check-config", str(conf)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r
    assert "drivers.local.sandbox_uid_range" in r.stderr, r.stderr
    # Control: a good range passes the same check.
    conf.write_text('[openshell.drivers.local]\nsandbox_uid_range = "300000-300009"\n')
    r = subprocess.run([build.binary("openshell-gateway"), "--check-config", str(conf)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r
