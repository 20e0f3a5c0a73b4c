"""test_split_local.py - the split isolation backend on this host, with real
namespaces and the real binaries: the launcher runs unprivileged with no
capabilities inside the agent namespace, dials its supervisor, and the two
authenticate each other with the sandbox's key before anything runs. Every
negative case sits beside a positive control that would fail if the
negative passed for the wrong reason."""
import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from tests.lib import build
from tests.lib.proxy_util import UPSTREAM_IP, Upstream
from tests.lib.split_util import (EXIT, LAUNCHED, LAUNCHER, PROBE, REPORT, SPEC, STATUS,
                                  FakeSupervisor, SplitSupervisor, free_port, workdir, write_key)

pytestmark = [build.needs("openshell-supervisor", "openshell-sandbox"),
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

PLAIN_POLICY = """version: 1
filesystem_policy:
  include_workdir: false
  read_only: [/]
  read_write: [/tmp, /dev/null]
network_policies: {}
"""

WEB_POLICY = """version: 1
filesystem_policy:
  include_workdir: false
  read_only: [/]
  read_write: [/tmp, /dev/null]
network_policies:
  web:
    endpoints:
      - host: upstream.test
        port: 80
        allowed_ips: ["198.51.100.0/24"]
    binaries:
      - { path: /usr/bin/curl }
"""

DIRECT = ("import socket\n"
          "s = socket.socket(); s.settimeout(3)\n"
          "try:\n"
          f"    s.connect(('{UPSTREAM_IP}', 80)); print('direct=connected')\n"
          "except OSError as e:\n"
          "    print('direct=' + type(e).__name__)\n")


@pytest.fixture
def d():
    path = workdir()
    yield path
    subprocess.run(["rm", "-rf", path])


@pytest.fixture
def sups():
    started = []
    yield started
    for s in started:
        s.stop()


@pytest.fixture(scope="module")
def upstream():
    u = Upstream().start()
    yield u
    u.stop()


def marker_agent(path):
    """An agent whose only effect is a file: proof that it ran."""
    return ["/bin/sh", "-c", f"echo ran > {path}"]


def test_agent_reaches_allowed_upstream_only_through_the_proxy(d, sups, upstream):
    key, _ = write_key(d)
    agent = ["/bin/sh", "-c",
             "echo proxy=$(curl -s -o /dev/null -w '%{http_code}' -m 10 http://upstream.test/split);"
             "echo denied=$(curl -s -o /dev/null -w '%{http_code}' -m 10 http://other.test/);"
             f"{sys.executable} -c \"$DIRECT_PROBE\""]
    sup = SplitSupervisor("web", WEB_POLICY, key, ["/usr/bin/env", f"DIRECT_PROBE={DIRECT}", *agent],
                          d, extra=("--hosts", os.path.join(upstream.dir, "hosts"),
                                    "--dns", "192.0.2.53"))
    sups.append(sup.start())
    upstream.clear()
    launched = sup.launch(key)
    rc, out, err = sup.wait()
    assert rc == 0 and launched.returncode == 0, (launched.stderr, err)
    lines = dict(l.split("=", 1) for l in launched.stdout.split() if "=" in l)
    # Through the proxy: the allowed endpoint answers and the upstream saw it...
    assert lines.get("proxy") == "200", launched.stdout
    assert any(r["path"] == "/split" for r in upstream.requests())
    # ...a host outside the policy is refused by the proxy...
    assert lines.get("denied") == "403", launched.stdout
    # ...and the direct path is refused by the fence, not by a dead upstream:
    assert lines.get("direct") == "ConnectionRefusedError", launched.stdout
    direct = socket.create_connection((UPSTREAM_IP, 80), timeout=3)  # positive control
    direct.close()
    events = [r.get("event") for r in sup.records()]
    assert "split_launcher_authenticated" in events
    # One schema with the proxy's records (docs/supervisor.md "Audit records").
    for rec in sup.records():
        assert {"ts", "sandbox", "event", "decision", "reason"} <= rec.keys(), rec
        assert isinstance(rec["ts"], float) and "time" not in rec, rec


def test_launcher_with_wrong_key_is_rejected_and_runs_nothing(d, sups):
    key, _ = write_key(d)
    wrong, _ = write_key(d, "wrong")
    marker = os.path.join(d, "ran")
    sup = SplitSupervisor("wrongkey", PLAIN_POLICY, key, marker_agent(marker), d)
    sups.append(sup.start())
    bad = sup.launch(wrong)
    assert bad.returncode == 125, bad.stderr
    assert "authenticate" in bad.stderr and "did not prove" in bad.stderr, bad.stderr
    assert not os.path.exists(marker)
    # Positive control: the same supervisor, still waiting, accepts the right key.
    good = sup.launch(key)
    rc, out, err = sup.wait()
    assert good.returncode == 0 and rc == 0, (good.stderr, err)
    assert os.path.exists(marker)
    failed = [r for r in sup.records() if r.get("event") == "split_auth_failed"]
    # The launcher checks the supervisor's proof first and hangs up on a mismatch.
    assert len(failed) == 1 and "closed" in failed[0]["detail"], sup.records()
    assert failed[0]["decision"] == "deny" and failed[0]["reason"] == "launcher_auth_failed"


def fake_session(fake, marker, forged_spec_first=False):
    """Plays the supervisor's side of a session; returns the launcher's report."""
    out = {}
    try:
        fake.accept()
        if forged_spec_first:
            # An impostor skips everything and just sends a launch spec.
            fake.send(SPEC, {"argv": ["/bin/sh", "-c", f"echo ran > {marker}"], "user": 65534,
                             "group": 65534})
        out["proof"] = fake.read_proof()
        if not out["proof"]:
            return out
        fake.send(PROBE, {"probes": [f"127.0.0.1:{free_port()}"], "proxy": fake.addr})
        kind, payload = fake.recv()
        out["report"] = (kind, json.loads(payload))
        fake.send(SPEC, {"argv": ["/bin/sh", "-c", f"echo ran > {marker}"], "user": 65534,
                         "group": 65534, "filesystem": {"read_only": ["/"],
                                                        "read_write": ["/tmp", "/dev/null"]}})
        kinds = []
        while True:
            kind, payload = fake.recv()
            kinds.append(kind)
            if kind == EXIT:
                out["exit"] = json.loads(payload)
                break
        out["kinds"] = kinds
    except Exception as e:  # recorded, asserted by the test
        out["error"] = repr(e)
    return out


def run_against_fake(d, fake_key, trust_key_path, marker, forged=False):
    fake = FakeSupervisor(fake_key)
    result = {}
    t = threading.Thread(target=lambda: result.update(fake_session(fake, marker, forged)))
    t.start()
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    r = subprocess.run([*drop, LAUNCHER, "--supervisor", fake.addr, "--trust", trust_key_path],
                       capture_output=True, text=True, timeout=60)
    t.join(30)
    fake.close()
    return r, result


def test_fake_supervisor_without_the_key_cannot_start_anything(d):
    key_path, key = write_key(d)
    marker = os.path.join(d, "ran")
    r, seen = run_against_fake(d, os.urandom(32), key_path, marker, forged=True)
    assert r.returncode == 125 and "authenticate" in r.stderr, r.stderr
    assert "supervisor did not prove" in r.stderr, r.stderr
    assert seen.get("proof") == b"", seen  # the launcher never answered an impostor
    assert not os.path.exists(marker)
    # Positive control: the same stand-in holding the right key does get the
    # launcher through the break test to run its spec.
    r, seen = run_against_fake(d, key, key_path, marker)
    assert r.returncode == 0, (r.stderr, seen)
    assert seen["report"][0] == REPORT and seen["report"][1]["proxy"] == "connected", seen
    assert seen["report"][1]["probes"][0]["result"] == "refused", seen
    assert STATUS in seen["kinds"] and LAUNCHED in seen["kinds"] and seen["exit"] == {"code": 0}
    assert os.path.exists(marker)


def test_no_agent_runs_when_the_break_test_breaks_through(d, sups):
    key, _ = write_key(d)
    # Positive control: with its fence intact a sandbox runs its agent.
    ok_marker = os.path.join(d, "ok")
    ok = SplitSupervisor("fenced", PLAIN_POLICY, key, marker_agent(ok_marker), d)
    sups.append(ok.start())
    launched = ok.launch(key)
    rc, _, err = ok.wait()
    assert rc == 0 and launched.returncode == 0 and os.path.exists(ok_marker), err
    # The platform's fence is gone: the launcher's direct connect gets through.
    marker = os.path.join(d, "ran")
    sup = SplitSupervisor("unfenced", PLAIN_POLICY, key, marker_agent(marker), d)
    sups.append(sup.start())
    assert sup.in_netns("nft", "delete", "table", "inet", "openshell").returncode == 0
    launched = sup.launch(key)
    rc, out, err = sup.wait()
    assert rc == 1 and "break test" in err and "succeeded" in err, err
    # The launcher saw it too and stops on its own (defence in depth).
    assert launched.returncode == 125 and "break-test: the fence does not hold" in \
        launched.stderr, launched.stderr
    assert not os.path.exists(marker)
    assert any(r.get("event") == "split_break_test_failed" for r in sup.records())


def test_no_launcher_means_no_start_and_a_clear_error(d, sups):
    key, _ = write_key(d)
    marker = os.path.join(d, "ran")
    sup = SplitSupervisor("nobody", PLAIN_POLICY, key, marker_agent(marker), d, timeout_ms=800)
    sups.append(sup.start())
    rc, out, err = sup.wait()
    assert rc == 1 and "no authenticated launcher within 800 ms" in err, err
    assert not os.path.exists(f"/run/netns/{sup.netns}")  # teardown removed the name
    assert not os.path.exists(marker)
