"""What the CLI and the audit log say about a sandbox's policy and processes:
one `policy_loaded` record per start (the gateway's push of the same revision
at session start is not a second load), `policy get` shows the revision in
force and names newer ones that are not (failed, pending), `policy list`
marks it; the local driver's per-sandbox monitor is named for what it is in
ps instead of carrying the gateway's command line."""

import json
import os

from tests.lib import build
from tests.lib.gateway_util import GATEWAY, supervisors_for, wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor",
                         "openshell-sandbox")

POLICY_A = """version: 1
network_policies:
  one:
    endpoints: [{ host: a.test, port: 443 }]
    binaries: [{ path: /usr/bin/curl }]
"""
POLICY_B = POLICY_A.replace("a.test", "b.test")
STATIC_CHANGE = "version: 1\nfilesystem_policy:\n  read_only: [/usr]\n  read_write: [/tmp]\n"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def loaded_records(gw, sid):
    with open(os.path.join(gw.sandbox_dir(sid), "audit.log")) as f:
        recs = [json.loads(l) for l in f if l.strip()]
    return [r for r in recs if r.get("event") == "policy" and r.get("reason") == "policy_loaded"]


def test_policy_loaded_once_per_start(gw, tmp_path):
    gw.cli("sandbox", "create", "--name", "once", "--policy", write(tmp_path, "a.yaml", POLICY_A),
           "--detach", "--", "sleep", "300", check=0)
    sid = gw.sandbox("once")["id"]
    # Ready needs the session, whose first message pushes revision 1.
    wait_for(lambda: "session: policy revision 1 loaded" in
             open(os.path.join(gw.sandbox_dir(sid), "supervisor.log")).read(), 20,
             what="revision 1 pushed")
    assert len(loaded_records(gw, sid)) == 1, loaded_records(gw, sid)
    # Another start: one more.
    gw.cli("sandbox", "stop", "once", check=0)
    gw.cli("sandbox", "start", "once", check=0)
    wait_for(lambda: len(loaded_records(gw, sid)) >= 2, 20, what="second start's record")
    assert len(loaded_records(gw, sid)) == 2
    # Positive control: a different policy is a load, recorded once.
    r = gw.cli("policy", "set", "once", "--policy", write(tmp_path, "b.yaml", POLICY_B), "--wait",
               "--timeout", "30")
    assert r.returncode == 0, r.stderr
    recs = loaded_records(gw, sid)
    assert len(recs) == 3 and recs[-1].get("detail") == "revision 2", recs


def test_policy_get_shows_the_revision_in_force(gw, tmp_path):
    gw.cli("sandbox", "create", "--name", "pf", "--policy", write(tmp_path, "a.yaml", POLICY_A),
           "--detach", "--", "sleep", "300", check=0)
    r = gw.cli("policy", "set", "pf", "--policy", write(tmp_path, "s.yaml", STATIC_CHANGE),
               "--wait", "--timeout", "30")
    assert r.returncode == 1  # refused by the supervisor: revision 2 failed
    r = gw.cli("policy", "get", "pf", check=0)
    assert r.stdout.startswith("# revision 1 (loaded, in force)\n"), r.stdout
    assert "a.test" in r.stdout and "read_only: [/usr]" not in r.stdout
    assert "openshell: revision 2 is failed: " in r.stderr and "(not in force)" in r.stderr
    body = json.loads(gw.cli("-o", "json", "policy", "get", "pf", check=0).stdout)
    assert body["revision"] == 1 and body["in_force"] is True
    assert [(n["revision"], n["status"]) for n in body["newer"]] == [(2, "failed")]
    r = gw.cli("policy", "list", "pf", check=0)
    rows = [l.split() for l in r.stdout.splitlines()[1:]]
    assert r.stdout.splitlines()[0].split()[:3] == ["REVISION", "STATUS", "IN_FORCE"]
    assert [(x[0], x[1], x[2]) for x in rows] == [("2", "failed", "false"),
                                                  ("1", "loaded", "true")], r.stdout
    # Positive control: a good revision takes over.
    r = gw.cli("policy", "set", "pf", "--policy", write(tmp_path, "b.yaml", POLICY_B), "--wait",
               "--timeout", "30")
    assert r.returncode == 0, r.stderr
    r = gw.cli("policy", "get", "pf", check=0)
    assert r.stdout.startswith("# revision 3 (loaded, in force)\n") and r.stderr == ""


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().rstrip(b"\0").split(b"\0")


def test_monitors_are_named_for_what_they_are(gw):
    gw.cli("sandbox", "create", "--name", "m1", "--detach", "--", "sleep", "300", check=0)
    gw.cli("sandbox", "create", "--name", "m2", "--detach", "--", "sleep", "300", check=0)
    for name in ("m1", "m2"):
        sid = gw.sandbox(name)["id"]
        (sup,) = supervisors_for(sid)
        with open(f"/proc/{sup}/stat") as f:
            monitor = int(f.read().rsplit(")", 1)[1].split()[1])
        assert cmdline(monitor) == [f"openshell-monitor {sid}".encode()], cmdline(monitor)
        with open(f"/proc/{monitor}/comm") as f:
            assert f.read().strip() == "openshell-mon"
    # Only the gateway itself shows the gateway's command line.
    gateways = [int(p) for p in os.listdir("/proc") if p.isdigit()
                and os.path.exists(f"/proc/{p}/cmdline")
                and (lambda c: c and c[0] == GATEWAY.encode() and
                     gw.state_dir.encode() in b" ".join(c))(safe_cmdline(p))]
    assert gateways == [gw.proc.pid], gateways


def safe_cmdline(pid):
    try:
        return cmdline(pid)
    except OSError:
        return []
