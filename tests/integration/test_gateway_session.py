"""The supervisor <-> gateway session, with the real gateway, local driver and
supervisors: the supervisor dials out with its token file; Ready needs a live
session (a frozen supervisor or a cut stream drops it, resuming brings it
back); a policy update is pushed and loaded (how fast is measured by
bench/cases/policy-push, not asserted here); a refused update is reported failed and
the running policy stays; tokens are scoped to their own sandbox's session;
the session survives a gateway restart."""

import json
import os
import signal
import socket
import subprocess
import time

import pytest

from tests.lib import build
from tests.lib.gateway_util import SUPERVISOR, Gateway, wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

POLICY_V1 = "version: 1\n"
POLICY_V2 = """version: 1
network_policies:
  local:
    endpoints:
      - { host: upstream.test, port: 8443 }
    binaries:
      - { path: /usr/bin/curl }
"""
POLICY_V3 = POLICY_V2.replace("8443", "9443")
# Valid for the gateway, refused by a live supervisor (static part changed).
POLICY_STATIC_CHANGE = """version: 1
filesystem_policy:
  read_only: [/usr, /lib, /etc]
  read_write: [/tmp]
"""
CUT_MS = 3000


@pytest.fixture
def gw():
    g = Gateway(extra_env={"OPENSHELL_TEST_SESSION_CUT_MS": str(CUT_MS)}).start()
    yield g
    g.cleanup()


def create(gw, name, policy=POLICY_V1):
    st, body = gw.request("POST", "/v1/sandboxes",
                          {"name": name, "command": ["sleep", "300"], "policy": policy})
    assert st in (200, 201, 202), body
    gw.wait_phase(name, "Ready")
    return body["id"]


def supervisor_pid(gw, sid):
    with open(os.path.join(gw.sandbox_dir(sid), "supervisor.pid")) as f:
        return int(f.read().split()[0])


def token_of(gw, sid):
    with open(os.path.join(gw.sandbox_dir(sid), "token")) as f:
        return f.read().strip()


def audit_policy_records(gw, sid):
    out = []
    with open(os.path.join(gw.sandbox_dir(sid), "audit.log")) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("event") == "policy":
                out.append(rec)
    return out


def revisions(gw, name):
    st, body = gw.request("GET", f"/v1/sandboxes/{name}/policies")
    assert st == 200, body
    return {r["revision"]: r for r in body["revisions"]}


def phase(gw, name):
    return gw.sandbox(name)["phase"]


def open_session(gw, sid, token):
    """Raw session request over TCP: (status line, bytes read within 2 s)."""
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=5)
    hdr = f"Authorization: Bearer {token}\r\n" if token is not None else ""
    s.sendall(f"GET /v1/supervisor/sandboxes/{sid}/session HTTP/1.1\r\nHost: x\r\n{hdr}\r\n"
              .encode())
    data = b""
    end = time.monotonic() + 2
    s.settimeout(0.2)
    while time.monotonic() < end and b'"hello"' not in data:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        data += chunk
    s.close()
    return data.split(b"\r\n", 1)[0].decode(), data


def test_supervisor_dials_out_with_its_token_file_never_in_argv_or_env(gw):
    sid = create(gw, "dial")
    pid = supervisor_pid(gw, sid)
    argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    token = token_of(gw, sid).encode()
    assert b"--gateway" in argv and b"--token-file" in argv
    assert argv[argv.index(b"--token-file") + 1].endswith(b"/token")
    # The local driver maps host.openshell.internal to the veth's host side.
    assert argv[argv.index(b"--host-gateway") + 1] == b"proxy"
    assert not any(token in a for a in argv)
    assert token not in open(f"/proc/{pid}/environ", "rb").read()
    st = os.stat(os.path.join(gw.sandbox_dir(sid), "token"))
    assert st.st_mode & 0o077 == 0
    # The initial revision was delivered on the session and reported back.
    wait_for(lambda: revisions(gw, "dial")[1]["status"] == "loaded", 10,
             what="revision 1 loaded")


def test_ready_only_while_the_session_is_live_frozen_supervisor(gw):
    sid = create(gw, "frz")
    pid = supervisor_pid(gw, sid)
    os.kill(pid, signal.SIGSTOP)
    try:
        row = gw.wait_phase("frz", "Provisioning", timeout=10)  # a wait bound, not a figure
        assert "session" in row["message"]
    finally:
        os.kill(pid, signal.SIGCONT)
    gw.wait_phase("frz", "Ready", timeout=15)
    assert supervisor_pid(gw, sid) == pid  # same supervisor, not a restart


def test_cut_stream_drops_ready_at_once_and_redial_restores_it(gw):
    sid = create(gw, "cut")
    # Positive control: Ready stays Ready while nothing happens.
    time.sleep(1.5)
    assert phase(gw, "cut") == "Ready"
    os.kill(supervisor_pid(gw, sid), signal.SIGUSR2)  # test hook: cut, redial after CUT_MS
    # Not Ready before the redial: once it redials, Ready comes back and a
    # late drop could not be told from none, so the redial delay bounds the wait.
    gw.wait_phase("cut", "Provisioning", timeout=CUT_MS / 1000)
    gw.wait_phase("cut", "Ready", timeout=15)
    assert "supervisor session closed" in gw.log_text()


def test_policy_update_is_pushed_and_loaded(gw, tmp_path):
    sid = create(gw, "push")
    wait_for(lambda: revisions(gw, "push")[1]["status"] == "loaded", 10, what="rev 1 loaded")
    before = audit_policy_records(gw, sid)
    gen_before = max(r.get("generation", 0) for r in before)
    st, body = gw.request("PUT", "/v1/sandboxes/push/policy", {"policy": POLICY_V2})
    assert st == 202 and body["revision"] == 2, body

    def loaded():
        return [r for r in audit_policy_records(gw, sid)
                if r["reason"] == "policy_loaded" and r.get("detail") == "revision 2"]
    # Pushed on the session, not picked up by a poll; 10 s is a wait bound only.
    recs = wait_for(loaded, 10, step=0.05, what="policy_loaded for revision 2")
    assert recs[0]["generation"] == gen_before + 1
    wait_for(lambda: revisions(gw, "push")[2]["status"] == "loaded", 5, what="rev 2 loaded")
    # Through the CLI: --wait ends on the supervisor's report.
    p = tmp_path / "v3.yaml"
    p.write_text(POLICY_V3)
    r = gw.cli("policy", "set", "push", "--policy", str(p), "--wait", "--timeout", "10")
    assert r.returncode == 0, r.stderr
    assert revisions(gw, "push")[3]["status"] == "loaded"


def test_refused_update_is_reported_failed_and_the_running_policy_stays(gw, tmp_path):
    sid = create(gw, "bad", policy=POLICY_V2)
    wait_for(lambda: revisions(gw, "bad")[1]["status"] == "loaded", 10, what="rev 1 loaded")
    p = tmp_path / "static.yaml"
    p.write_text(POLICY_STATIC_CHANGE)
    r = gw.cli("policy", "set", "bad", "--policy", str(p), "--wait", "--timeout", "10")
    assert r.returncode == 1 and "failed" in r.stderr, (r.stdout, r.stderr)
    rev = revisions(gw, "bad")[2]
    assert rev["status"] == "failed" and "filesystem_policy" in rev["message"]
    recs = audit_policy_records(gw, sid)
    refused = [x for x in recs if x["reason"] == "policy_invalid"]
    assert refused and refused[-1]["detail"].startswith("revision 2:")
    loaded_gens = [x["generation"] for x in recs if x["reason"] == "policy_loaded"]
    # The running generation did not move: the refusal names the one still in force.
    assert refused[-1]["generation"] == max(loaded_gens)
    # Positive control: the next valid update loads on top of the kept policy.
    p.write_text(POLICY_V3)
    r = gw.cli("policy", "set", "bad", "--policy", str(p), "--wait", "--timeout", "10")
    assert r.returncode == 0, r.stderr
    assert revisions(gw, "bad")[2]["status"] == "failed"
    assert phase(gw, "bad") == "Ready"


def test_session_tokens_are_scoped_to_their_own_sandbox(gw):
    a = create(gw, "tok-a")
    b = create(gw, "tok-b")
    ta = token_of(gw, a)
    # Positive control: A's token opens A's session and gets the hello.
    status, data = open_session(gw, a, ta)
    assert status.endswith("200 OK"), data
    assert b'"hello"' in data and a.encode() in data
    # A's token on B's session: 403. No token or a wrong one: 401.
    status, data = open_session(gw, b, ta)
    assert " 403 " in status, data
    assert " 401 " in open_session(gw, a, None)[0]
    assert " 401 " in open_session(gw, a, "f" * 64)[0]
    # The admin token is not a supervisor token.
    assert " 403 " in open_session(gw, a, gw.token)[0]
    # Reports are scoped the same way.
    st, _ = gw.request("POST", f"/v1/supervisor/sandboxes/{b}/policy-status",
                       {"revision": 1, "status": "failed"}, token=ta)
    assert st == 403
    st, body = gw.request("POST", f"/v1/supervisor/sandboxes/{a}/policy-status",
                          {"revision": 1, "status": "maybe"}, token=ta)
    assert st == 400 and "loaded" in body["message"]
    st, _ = gw.request("POST", f"/v1/supervisor/sandboxes/{a}/policy-status",
                       {"revision": 99, "status": "loaded"}, token=ta)
    assert st == 404
    assert revisions(gw, "tok-b")[1]["status"] != "failed"


def test_session_survives_a_gateway_restart(gw, tmp_path):
    sid = create(gw, "surv")
    pid = supervisor_pid(gw, sid)
    gw.stop(signal.SIGTERM)
    gw.start()
    gw.wait_phase("surv", "Ready", timeout=20)
    assert supervisor_pid(gw, sid) == pid
    # The new session carries pushes: a policy set is loaded by the same supervisor.
    p = tmp_path / "v2.yaml"
    p.write_text(POLICY_V2)
    r = gw.cli("policy", "set", "surv", "--policy", str(p), "--wait", "--timeout", "10")
    assert r.returncode == 0, r.stderr
    assert any(x.get("detail") == "revision 2" and x["reason"] == "policy_loaded"
               for x in audit_policy_records(gw, sid))


def test_token_file_readable_by_others_is_refused(tmp_path):
    tok = tmp_path / "token"
    tok.write_text("a" * 64)
    os.chmod(tok, 0o644)
    pol = tmp_path / "p.yaml"
    pol.write_text(POLICY_V1)
    r = subprocess.run([SUPERVISOR, "--backend", "inpod", "--sandbox-id", "tokperm",
                        "--proxy-port", "3999", "--policy", str(pol), "--gateway",
                        "unix:/nonexistent/gw.sock", "--token-file", str(tok), "--", "true"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "mode 0600" in r.stderr, r.stderr
    # Flags go together.
    r = subprocess.run([SUPERVISOR, "--backend", "inpod", "--sandbox-id", "tokperm",
                        "--proxy-port", "3999", "--policy", str(pol), "--gateway",
                        "unix:/nonexistent/gw.sock", "--", "true"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "go together" in r.stderr, r.stderr
