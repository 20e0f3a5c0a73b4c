"""openshell-sandbox process controls: the agent cannot ptrace or signal the
launcher or anything outside its PID namespace, cannot regain root through a
setuid binary, has no core dumps, cannot inject with TIOCSTI, holds only fds
0-2, never sees OPENSHELL_* variables; exit status and signals pass through."""

import errno
import json
import os
import pty
import resource
import shutil
import signal
import subprocess
import time

import pytest

from tests.lib import build
from tests.lib import sandbox_util as su

pytestmark = build.needs("openshell-sandbox", "sandbox-probe", "sandbox-deny")


def drop_to_agent_uid():
    os.setgroups([])
    os.setgid(su.AGENT_GID)
    os.setuid(su.AGENT_UID)


@pytest.fixture
def outsider():
    """A process outside the sandbox running as the agent's own uid."""
    p = subprocess.Popen(["/bin/sleep", "60"], preexec_fn=drop_to_agent_uid)
    yield p
    p.kill()
    p.wait()


def test_agent_cannot_signal_or_ptrace_a_same_uid_process_outside(outsider):
    for new_ns in (True, False):
        r = su.run(su.spec([su.PROBE, "kill", str(outsider.pid)], new_namespaces=new_ns))
        assert r.rc == 0, r
        # ESRCH: invisible in the PID namespace; EPERM: Landlock signal scoping.
        assert su.probe_lines(r.stdout)["kill"] in (errno.ESRCH, errno.EPERM), (new_ns, r)
        r = su.run(su.spec([su.PROBE, "ptrace", str(outsider.pid)], new_namespaces=new_ns))
        assert su.probe_lines(r.stdout)["ptrace_attach"] == errno.EPERM, r
    # Positive control: unconfined, the same uid may signal and trace it.
    out = subprocess.run([su.PROBE, "kill", str(outsider.pid)], capture_output=True,
                         text=True, preexec_fn=drop_to_agent_uid)
    assert su.probe_lines(out.stdout)["kill"] == 0


def test_agent_can_signal_its_own_child_but_not_the_launcher():
    script = ("/bin/sleep 30 & c=$!; kill -0 $c && echo child-ok; kill $c; "
              "kill -0 $PPID 2>/dev/null && echo parent-reachable; "
              "kill -0 1 2>/dev/null && echo init-reachable; echo done")
    r = su.run(su.spec(["/bin/sh", "-c", script], new_namespaces=False))
    assert r.rc == 0 and "child-ok" in r.stdout and "done" in r.stdout, r
    assert "parent-reachable" not in r.stdout and "init-reachable" not in r.stdout, r


def test_pid_namespace_shows_only_the_sandbox():
    r = su.run(su.spec(["/bin/sh", "-c", "ls /proc | grep -c '^[0-9]'; echo $$"]))
    lines = r.stdout.split()
    assert r.rc == 0 and int(lines[0]) <= 4 and lines[1] == "2", r
    # Positive control: without new namespaces the host's processes are visible.
    r = su.run(su.spec(["/bin/sh", "-c", "ls /proc | grep -c '^[0-9]'"], new_namespaces=False))
    assert r.rc == 0 and int(r.stdout.split()[0]) > 4, r


def test_setuid_binary_cannot_regain_root():
    d = su.make_workdir()
    try:
        probe = os.path.join(d, "suid-probe")
        shutil.copy(su.PROBE, probe)
        os.chown(probe, 0, 0)
        os.chmod(probe, 0o4755)
        # Positive control: outside the sandbox the setuid bit works for this uid.
        out = subprocess.run([probe, "creds"], capture_output=True, text=True,
                             preexec_fn=drop_to_agent_uid)
        assert "uid 65534 0 0" in out.stdout, out
        r = su.run(su.spec([probe, "creds"], read_only=[d]))
        assert r.rc == 0, r
        assert "uid 65534 65534 65534" in r.stdout, r
        lines = su.probe_lines(r.stdout)
        assert lines["setuid0"] == errno.EPERM and lines["setresuid0"] == errno.EPERM
    finally:
        su.remove_workdir(d)


def allow_core_dumps():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def test_core_limit_is_zero_and_cannot_be_raised():
    # The launcher inherits unlimited core dumps; the agent must still see 0/0.
    r = su.run(su.spec([su.PROBE, "rlimit-core"]), preexec_fn=allow_core_dumps)
    assert r.rc == 0 and "core 0 0" in r.stdout, r
    assert su.probe_lines(r.stdout)["raise_core"] == errno.EPERM
    r = su.run(su.spec(["/bin/sh", "-c", "ulimit -c"]), preexec_fn=allow_core_dumps)
    assert r.stdout.strip() == "0", r
    # Positive control: the same inherited limits, unconfined, are not zero.
    out = subprocess.run([su.PROBE, "rlimit-core"], capture_output=True, text=True,
                         preexec_fn=allow_core_dumps)
    assert "core 0 0" not in out.stdout and "core " in out.stdout, out


def test_tiocsti_is_blocked_on_the_agents_terminal():
    master, slave = pty.openpty()
    try:
        r = su.run(su.spec([su.PROBE, "tiocsti"], tty=True), stdin=slave)
        assert r.rc == 0 and r.execed, r
        lines = su.probe_lines(r.stdout)
        assert lines["tiocsti"] == errno.EPERM
        # Positive control: other ioctls on the same terminal work.
        assert lines["tiocgwinsz"] == 0
    finally:
        os.close(master)
        os.close(slave)


def test_tty_mode_gives_the_agent_a_controlling_terminal():
    master, slave = pty.openpty()
    try:
        r = su.run(su.spec(["/bin/sh", "-c", "exec 3</dev/tty && echo has-tty"], tty=True,
                           read_write=["/dev/tty"]), stdin=slave)
        assert r.rc == 0 and "has-tty" in r.stdout, r
        # Without tty the agent has no controlling terminal at all.
        r = su.run(su.spec(["/bin/sh", "-c", "exec 3</dev/tty && echo has-tty"],
                           read_write=["/dev/tty"]), stdin=slave)
        assert "has-tty" not in r.stdout, r
    finally:
        os.close(master)
        os.close(slave)


def test_only_fds_0_to_2_reach_the_agent():
    leak_r, leak_w = os.pipe()  # inherited by the launcher, must not reach the agent
    os.set_inheritable(leak_r, True)
    try:
        r = su.run(su.spec([su.PROBE, "fds"]), pass_fds=(leak_r,))
        assert r.rc == 0, r
        assert sorted(r.stdout.split()) == ["0", "1", "2", "fd", "fd", "fd"], r
    finally:
        os.close(leak_r)
        os.close(leak_w)


def test_supervisor_only_variables_never_reach_the_agent():
    s = su.spec(["/usr/bin/env"], env={"PATH": "/usr/bin:/bin", "VISIBLE": "yes",
                                      "OPENSHELL_SPEC_SECRET": "s1"})
    r = su.run(s, env={"PATH": "/usr/bin:/bin", "OPENSHELL_LAUNCHER_SECRET": "s2",
                       "INHERITED": "no"})
    assert r.rc == 0, r
    assert "VISIBLE=yes" in r.stdout  # positive control: spec env arrives
    assert "OPENSHELL_" not in r.stdout and "INHERITED" not in r.stdout, r
    assert any("OPENSHELL_SPEC_SECRET" in l.get("warning", "") for l in r.status)


@pytest.mark.parametrize("new_namespaces", [True, False])
def test_exit_code_and_signal_are_reported(new_namespaces):
    r = su.run(su.spec(["/bin/sh", "-c", "exit 7"], new_namespaces=new_namespaces))
    assert r.rc == 7, r
    r = su.run(su.spec(["/bin/sh", "-c", "kill -SEGV $$"], new_namespaces=new_namespaces))
    assert r.rc == 128 + signal.SIGSEGV, r


@pytest.mark.parametrize("new_namespaces", [True, False])
def test_signals_to_the_launcher_are_forwarded(new_namespaces):
    st_r, st_w = os.pipe()
    spec_path = os.path.join(su.make_workdir(), "spec.json")
    with open(spec_path, "w") as f:
        json.dump(su.spec(["/bin/sh", "-c", "trap 'echo got-usr1' USR1; echo ready; "
                           "while :; do /bin/sleep 0.05; done"],
                          new_namespaces=new_namespaces), f)
    p = subprocess.Popen([su.LAUNCHER, "--spec", spec_path, "--status-fd", str(st_w)],
                         stdout=subprocess.PIPE, pass_fds=(st_w,), env=su.LAUNCHER_ENV)
    os.close(st_w)
    with os.fdopen(st_r) as st:
        status = st.read()  # EOF == the agent has been exec'ed
    assert '"step":"exec","ok":true' in status
    assert p.poll() is None  # EOF came while the agent still runs
    assert p.stdout.readline() == b"ready\n"  # the trap is installed
    p.send_signal(signal.SIGUSR1)
    assert p.stdout.readline() == b"got-usr1\n"
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=20)
    assert p.returncode == 128 + signal.SIGTERM
    su.remove_workdir(os.path.dirname(spec_path))


def test_killing_the_launcher_kills_the_agent():
    d = su.make_workdir()
    spec_path = os.path.join(d, "spec.json")
    with open(spec_path, "w") as f:
        json.dump(su.spec(["/bin/sleep", "1000"], new_namespaces=False), f)
    p = subprocess.Popen([su.LAUNCHER, "--spec", spec_path], env=su.LAUNCHER_ENV)
    time.sleep(0.5)
    agents = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True)
    child = int(agents.stdout.split()[0])
    assert os.path.exists("/proc/%d" % child)
    p.kill()
    p.wait()
    for _ in range(100):
        if not os.path.exists("/proc/%d" % child):
            break
        time.sleep(0.05)
    assert not os.path.exists("/proc/%d" % child)
    su.remove_workdir(d)
