"""Supervisor hardening and tampering, with a real sandbox: once the agent
runs, the supervisor has confined itself (no new privileges, seccomp filter
without mount, module, bpf or kexec calls) and still makes proxy decisions;
the agent cannot see its process, files or audit log."""
import os

import pytest

from tests.lib.adv_util import NET, last

POLICY = f"""  web:
    endpoints:
      - {{ host: upstream.test, port: 80, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""
STATUS = {}


def read_status(sb):
    with open(f"/proc/{sb.proc.pid}/status") as f:
        STATUS.update(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
    STATUS["fds"] = os.listdir(f"/proc/{sb.proc.pid}/fd")
    STATUS["fd_targets"] = [os.readlink(f"/proc/{sb.proc.pid}/fd/{fd}") for fd in STATUS["fds"]]


@pytest.fixture(scope="module")
def sb(run_sandbox):
    return run_sandbox("sup", POLICY, ["sup_after_selfguard", "fs_supervisor_files"],
                       on_barrier={"selfguard": read_status})


def test_supervisor_runs_with_seccomp_filter_and_no_new_privs(sb):
    assert STATUS["Seccomp"].strip() == "2"
    assert STATUS["NoNewPrivs"].strip() == "1"


def test_supervisor_keeps_its_capabilities_for_identity(sb):
    assert int(STATUS["CapEff"].strip(), 16) != 0


def test_host_process_without_selfguard_positive_control():
    with open("/proc/self/status") as f:
        text = f.read()
    assert "Seccomp:\t0" in text and "NoNewPrivs:\t0" in text


def test_proxy_still_decides_after_selfguard(sb, upstream):
    r = sb.result("sup_after_selfguard")
    assert r["allowed"]["status"] == 200
    assert [q for q in upstream.requests() if q["path"] == "/after-selfguard"]
    assert r["denied"]["status"] == 403 and r["denied"]["json"]["reason"] == "no_matching_endpoint"
    assert last(sb.records(), event="http", decision="allow", path="/after-selfguard")
    assert sb.rc == 0 and "selfguard" not in sb.err


def test_supervisor_holds_no_agent_writable_file(sb):
    files = [t for t in STATUS["fd_targets"] if t.startswith("/")]
    for path in files:
        if path.startswith("/dev/") or path.startswith("/proc/"):
            continue
        assert not path.startswith("/tmp/") or path.startswith(sb.private), path
    r = sb.result("fs_supervisor_files")
    assert r["audit"] in ("ENOENT", "EACCES") and r["sup_proc"] == "ENOENT"


def test_supervisor_announces_running_after_selfguard(sb):
    assert "running" in sb.err, "control: the supervisor announced the running sandbox"
