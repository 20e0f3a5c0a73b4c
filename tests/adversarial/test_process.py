"""Process and privilege escapes from inside a real sandbox: the agent is
uid 65534 with no capabilities, no new privileges and a seccomp filter; a
setuid-root binary gives it nothing; the supervisor and host processes are
outside its PID namespace (no ptrace, no signals); TIOCSTI cannot inject
into a terminal. Positive controls: the same setuid binary elevates outside,
and the agent can signal its own children."""
import os
import subprocess

import pytest

from tests.lib.adv_util import NET

POLICY = f"""  web:
    endpoints:
      - {{ host: upstream.test, port: 80, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""
PROBES = ["pr_identity", "pr_setuid_binary", "pr_ptrace_and_signals", "pr_tiocsti"]


@pytest.fixture(scope="module")
def sb(run_sandbox, bait):
    return run_sandbox("proc", POLICY, PROBES, extra_ro=[bait.suid_dir])


def test_agent_has_no_privilege_left(sb):
    r = sb.result("pr_identity")
    assert r["uid"] == r["euid"] == 65534 and r["gid"] == 65534 and r["groups"] == []
    assert int(r["CapEff"], 16) == 0 and int(r["CapBnd"], 16) == 0
    assert r["NoNewPrivs"] == "1" and r["Seccomp"] == "2"
    assert r["setuid0"] == "EPERM"


def test_setuid_root_binary_gives_nothing_inside(sb):
    r = sb.result("pr_setuid_binary")
    assert r["rc"] == 0 and "euid=0" not in r["out"] and "uid=65534" in r["out"], r


def test_setuid_root_binary_elevates_outside_positive_control(bait):
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        bait.suid_binary], capture_output=True, text=True)
    assert "euid=0" in r.stdout, r.stdout


def test_supervisor_cannot_be_ptraced_or_signalled(sb):
    r = sb.result("pr_ptrace_and_signals")
    assert r["ptrace_supervisor"] == "EPERM" and r["ptrace_pid1"] == "EPERM"
    assert r["kill_supervisor"] == "ESRCH"
    assert sb.rc == 0, "the supervisor ran to the end"


def test_host_process_cannot_be_signalled(sb, bait):
    r = sb.result("pr_ptrace_and_signals")
    assert r["kill_victim"] == "ESRCH"
    assert bait.victim.poll() is None, "the host process is alive"
    assert r["kill_own_child_control"] == "OK"


def test_only_sandbox_pids_visible_and_init_unkillable(sb, bait):
    r = sb.result("pr_ptrace_and_signals")
    assert bait.victim.pid not in r["visible_pids"] or bait.victim.pid < 50
    assert max(r["visible_pids"]) < 1000 and 1 in r["visible_pids"]
    assert r["kill_pid1"] in ("EPERM", "OK")  # init ignores unhandled signals
    assert os.path.exists(f"/proc/{sb.proc.pid}") or sb.rc == 0


def test_tiocsti_refused_and_no_controlling_terminal(sb):
    r = sb.result("pr_tiocsti")
    # No controlling terminal (ENXIO), refused (EACCES), or not in the
    # agent's filesystem view at all (ENOENT): never opened.
    assert r["dev_tty"] in ("ENXIO", "EACCES", "ENOENT")
    assert r["tiocsti_any_fd"] == "1" and r["tiocsti_stdin"]["tiocsti"] == "1"  # EPERM
    assert r["tcgets_control"] == "9"  # EBADF: the allowed ioctl reached the kernel
