"""openshell-sandbox step failures: a real failure injected at each step leaves
the agent unexecuted (its marker file never appears), exits 125/126/127 and
the status fd's last line names the step. Each case has a positive control:
the same spec without the fault runs the agent."""

import errno
import json
import os
import subprocess
import time

import pytest

from tests.lib import build
from tests.lib import sandbox_util as su

pytestmark = build.needs("openshell-sandbox", "sandbox-probe", "sandbox-deny")

@pytest.fixture
def work():
    d = su.make_workdir()
    os.chmod(d, 0o777)
    yield d
    su.remove_workdir(d)


def agent_spec(work, **extra):
    marker = os.path.join(work, "agent-ran")
    return su.spec(["/bin/sh", "-c", "echo ran > " + marker], read_write=[work], **extra), marker


def assert_failed_at(r, marker, step, err=None, rc=125):
    assert r.rc == rc, r
    assert r.failure is not None and r.failure["step"] == step, r
    assert r.status[-1] == r.failure  # the failure is always the last line
    assert r.failure["message"], r
    if err is not None:
        assert r.failure["errno"] == err, r
    assert not os.path.exists(marker), "agent ran despite the failure"
    assert ("openshell-sandbox: %s:" % step) in r.stderr


def assert_ran(r, marker):
    assert r.rc == 0 and r.execed and os.path.exists(marker), r
    os.unlink(marker)


def as_agent_uid():
    os.setgroups([])
    os.setgid(su.AGENT_GID)
    os.setuid(su.AGENT_UID)


def test_positive_control_agent_runs(work):
    s, marker = agent_spec(work)
    assert_ran(su.run(s), marker)


@pytest.mark.parametrize("bad", [
    b"{not json", b'{"argv":["/bin/true"],"user":65534,"group":65534,"bogus":1}',
    b'{"argv":["/bin/true"],"user":0,"group":65534}',
    b'{"argv":["/bin/true"],"user":"no-such-user-xyz"}',
    b'{"argv":[],"user":65534,"group":65534}',
    b'{"argv":["/bin/true"],"user":65534,"group":65534,"filesystem":{"read_write":["/"]}}',
    b'{"argv":["/bin/true"],"user":65534,"group":65534,"filesystem":{"read_only":["rel"]}}',
    b'{"argv":["/bin/true"],"user":65534,"group":65534,"rlimits":{"core":5}}',
    # transfer (docs/files.md) replaces argv, never joins it, and is checked
    # field by field (its positive controls: test_sandbox_files.py).
    b'{"user":65534,"group":65534}',
    b'{"argv":["/bin/true"],"user":65534,"group":65534,'
    b'"transfer":{"op":"upload","path":"a"}}',
    b'{"user":65534,"group":65534,"transfer":{"op":"delete","path":"a"}}',
    b'{"user":65534,"group":65534,"transfer":{"op":"upload"}}',
    b'{"user":65534,"group":65534,"transfer":{"op":"upload","path":""}}',
    b'{"user":65534,"group":65534,"transfer":{"op":"upload","path":"a","mode":1}}',
])
def test_bad_spec_fails_at_step_spec(work, bad):
    r = su.run(None, raw_spec=bad)
    assert r.rc == 125 and r.failure["step"] == "spec" and not r.execed, r


def test_session_fails_when_tty_requested_without_terminal(work):
    s, marker = agent_spec(work, tty=True)
    assert_failed_at(su.run(s), marker, "session", errno.ENOTTY)


def test_netns_fails_on_missing_path_and_joins_a_real_one(work):
    s, marker = agent_spec(work, netns="/run/netns/openshell-test-does-not-exist")
    assert_failed_at(su.run(s), marker, "netns", errno.ENOENT)
    # An fd that is not a network namespace is refused by setns.
    with open("/etc/hostname") as f:
        s, marker = agent_spec(work, netns=f.fileno())
        assert_failed_at(su.run(s, pass_fds=(f.fileno(),)), marker, "netns", errno.EINVAL)
    # Positive control: a real, empty network namespace is joined.
    holder = subprocess.Popen(["unshare", "--net", "/bin/sleep", "60"])
    try:
        for _ in range(100):
            if os.readlink("/proc/%d/ns/net" % holder.pid) != os.readlink("/proc/self/ns/net"):
                break
            time.sleep(0.02)
        s = su.spec(["/bin/cat", "/proc/net/dev"], netns="/proc/%d/ns/net" % holder.pid)
        r = su.run(s)
        assert r.rc == 0, r
        ifaces = [l.split(":")[0].strip() for l in r.stdout.splitlines() if ":" in l]
        assert ifaces == ["lo"], r
    finally:
        holder.kill()
        holder.wait()


def test_namespaces_fail_without_privilege(work):
    s, marker = agent_spec(work, new_namespaces=True)
    assert_failed_at(su.run(s, preexec_fn=as_agent_uid), marker, "namespaces", errno.EPERM)


def test_privileges_fail_when_non_root_launcher_asked_for_another_user(work):
    s, marker = agent_spec(work, new_namespaces=False, user=su.AGENT_UID - 1)
    assert_failed_at(su.run(s, preexec_fn=as_agent_uid), marker, "privileges", errno.EPERM)
    # Positive control (the Kubernetes shape): non-root launcher, its own uid.
    s, marker = agent_spec(work, new_namespaces=False)
    assert_ran(su.run(s, preexec_fn=as_agent_uid), marker)


def test_rlimits_fail_above_the_kernel_maximum(work):
    with open("/proc/sys/fs/nr_open") as f:
        nr_open = int(f.read())
    s, marker = agent_spec(work, rlimits={"nofile": nr_open + 1})
    assert_failed_at(su.run(s), marker, "rlimits", errno.EPERM)
    # Positive control: a legal limit is applied and visible to the agent.
    s = su.spec(["/bin/sh", "-c", "ulimit -n; ulimit -Hn"], rlimits={"nofile": 321})
    r = su.run(s)
    assert r.rc == 0 and r.stdout.split() == ["321", "321"], r


def test_cwd_fails_when_missing_and_applies_when_present(work):
    s, marker = agent_spec(work, cwd=os.path.join(work, "missing"))
    assert_failed_at(su.run(s), marker, "cwd", errno.ENOENT)
    r = su.run(su.spec(["/bin/pwd"], read_only=[work], cwd=work))
    assert r.rc == 0 and r.stdout.strip() == work, r


def test_landlock_fails_hard_when_a_path_is_missing(work):
    s, marker = agent_spec(work, landlock="hard_requirement")
    s["filesystem"]["read_only"].append(os.path.join(work, "missing"))
    assert_failed_at(su.run(s), marker, "landlock", errno.ENOENT)


def test_seccomp_fails_when_the_kernel_refuses_filters(work):
    s, marker = agent_spec(work)
    # seccomp() -> ENOSYS makes libseccomp fall back to prctl(PR_SET_SECCOMP=22),
    # which -> EINVAL: a kernel without seccomp filters.
    wrapper = [su.DENY, "seccomp:%d" % errno.ENOSYS, "prctl:%d:22" % errno.EINVAL, "--"]
    r = su.run(s, wrapper=wrapper)
    assert_failed_at(r, marker, "seccomp")
    # Positive control: the wrapper alone with a harmless rule lets the agent run.
    assert_ran(su.run(s, wrapper=[su.DENY, "acct:%d" % errno.EPERM, "--"]), marker)


def test_exec_fails_with_127_when_missing_and_126_when_not_executable(work):
    r = su.run(su.spec([os.path.join(work, "no-such-agent")], read_only=[work]))
    assert r.rc == 127 and r.failure["step"] == "exec", r
    assert r.failure["errno"] == errno.ENOENT
    plain = os.path.join(work, "plain")
    with open(plain, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(plain, 0o644)
    r = su.run(su.spec([plain], read_only=[work]))
    assert r.rc == 126 and r.failure["step"] == "exec", r
    assert r.failure["errno"] == errno.EACCES
    os.chmod(plain, 0o755)
    r = su.run(su.spec([plain], read_only=[work]))
    assert r.rc == 0 and r.stdout.strip() == "hi", r


# Not in the policy at all: absent from the view (ENOENT, exit 127) with a
# mount namespace; refused by Landlock (EACCES, exit 126) without one.
@pytest.mark.parametrize("new_namespaces,rc,refusal",
                         [(True, 127, errno.ENOENT), (False, 126, errno.EACCES)])
def test_execution_outside_read_only_is_refused(work, new_namespaces, rc, refusal):
    script = os.path.join(work, "script")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(script, 0o755)
    r = su.run(su.spec([script], new_namespaces=new_namespaces))
    assert r.rc == rc and r.failure["errno"] == refusal, r
    # Positive control: listed read_only, it runs.
    r = su.run(su.spec([script], read_only=[work], new_namespaces=new_namespaces))
    assert r.rc == 0 and r.stdout.strip() == "hi", r


def test_usage_errors_exit_2():
    r = subprocess.run([su.LAUNCHER], capture_output=True)
    assert r.returncode == 2 and b"usage" in r.stderr
    r = subprocess.run([su.LAUNCHER, "--spec", "/x", "--spec-fd", "0"], capture_output=True)
    assert r.returncode == 2
