"""openshell-sandbox placement fields: the workspace on /sandbox, cgroups
joined before anything runs, and `join` (what `sandbox exec` uses) entering an
existing sandbox's namespaces. Real mounts, real cgroups, real setns."""

import errno
import json
import os
import subprocess
import time
import uuid

import pytest

from tests.lib import build
from tests.lib import sandbox_util as su

pytestmark = build.needs("openshell-sandbox", "sandbox-probe", "sandbox-deny")


@pytest.fixture
def work():
    d = su.make_workdir()
    yield d
    su.remove_workdir(d)


def test_workspace_is_mounted_on_sandbox(work):
    ws = os.path.join(work, "ws")
    os.mkdir(ws)
    os.chown(ws, su.AGENT_UID, su.AGENT_GID)
    with open(os.path.join(ws, "kept.txt"), "w") as f:
        f.write("from before\n")
    s = su.spec(["/bin/sh", "-c", "pwd; cat kept.txt; echo new > made.txt; "
                 "grep ' /sandbox ' /proc/self/mountinfo"],
                read_write=["/sandbox"], workspace=ws, cwd="/sandbox")
    r = su.run(s)
    assert r.rc == 0, r
    lines = r.stdout.splitlines()
    assert lines[0] == "/sandbox" and lines[1] == "from before", r
    assert "nosuid" in lines[2] and "nodev" in lines[2], r
    with open(os.path.join(ws, "made.txt")) as f:
        assert f.read() == "new\n"  # written through /sandbox, kept on the host


def test_workspace_needs_new_namespaces_and_an_existing_dir(work):
    s = su.spec(["/bin/true"], workspace=work, new_namespaces=False)
    r = su.run(s)
    assert r.rc == 125 and r.failure["step"] == "spec", r
    assert "new_namespaces" in r.failure["message"], r
    s = su.spec(["/bin/true"], workspace=os.path.join(work, "missing"))
    r = su.run(s)
    assert r.rc == 125 and r.failure["step"] == "namespaces", r
    assert r.failure["errno"] == errno.ENOENT and "workspace" in r.failure["message"], r


def pids_cgroup_root():
    for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
        if os.path.exists(os.path.join(root, "pids.max" if root == "/sys/fs/cgroup" else
                                       "cgroup.procs")):
            return root
    pytest.skip("no pids cgroup controller mounted")


@pytest.fixture
def pids_cgroup():
    root = pids_cgroup_root()
    d = os.path.join(root, "openshell-test-" + uuid.uuid4().hex[:8])
    os.mkdir(d)
    yield d
    for _ in range(50):
        try:
            os.rmdir(d)
            return
        except OSError:
            time.sleep(0.05)


def test_cgroup_is_joined_first_and_limits_the_agent(work, pids_cgroup):
    with open(os.path.join(pids_cgroup, "pids.max"), "w") as f:
        f.write("6")
    # Eight background sleeps cannot all start under pids.max=6: the shell
    # stops at the first failed fork.
    script = "cat /proc/self/cgroup; for i in 1 2 3 4 5 6 7 8; do sleep 3 & done; " \
             "echo all-started; kill $(jobs -p); wait"
    r = su.run(su.spec(["/bin/sh", "-c", script], cgroups=[pids_cgroup]))
    assert r.rc != 0 and "all-started" not in r.stdout and "fork" in r.stderr.lower(), r
    rel = pids_cgroup.split("/sys/fs/cgroup", 1)[1]
    rel = rel.split("/", 2)[2] if rel.startswith("/pids/") else rel.lstrip("/")
    assert any(l.endswith(":/" + rel) for l in r.stdout.splitlines()), r
    # Positive control: the same agent without the cgroup forks freely.
    r = su.run(su.spec(["/bin/sh", "-c", script]))
    assert r.rc == 0 and "all-started" in r.stdout, r


def test_cgroup_that_does_not_exist_fails_before_the_agent(work):
    s = su.spec(["/bin/true"], cgroups=["/sys/fs/cgroup/pids/openshell-test-missing"])
    r = su.run(s)
    assert r.rc == 125 and r.failure["step"] == "cgroup", r
    assert r.failure["errno"] == errno.ENOENT and not r.execed, r


def test_join_enters_a_running_sandbox(work):
    """A second launcher with `join` sees the first sandbox's hostname, its
    /proc (only its pids), its network namespace and its /tmp."""
    marker = "ready-" + uuid.uuid4().hex[:6]
    first = su.spec(["/bin/sh", "-c", "echo %s > /tmp/m; sleep 30" % marker],
                    read_write=["/tmp"], hostname="joined-box")
    spec_r, spec_w = os.pipe()
    os.write(spec_w, json.dumps(first).encode())
    os.close(spec_w)
    outer = subprocess.Popen([su.LAUNCHER, "--spec-fd", str(spec_r)], pass_fds=(spec_r,),
                             env=su.LAUNCHER_ENV)
    os.close(spec_r)
    pidfd = None
    try:
        init = None
        for _ in range(200):
            try:
                with open("/proc/%d/task/%d/children" % (outer.pid, outer.pid)) as f:
                    kids = f.read().split()
                if kids:
                    init = int(kids[0])
                    if os.readlink("/proc/%d/ns/pid" % init) != os.readlink("/proc/self/ns/pid"):
                        break
            except OSError:
                pass
            time.sleep(0.02)
        assert init, "the first sandbox never started"
        pidfd = os.pidfd_open(init)
        time.sleep(0.2)  # let the first agent write its marker
        s = su.spec(["/bin/sh", "-c", "hostname; cat /tmp/m; ls /proc | grep -c '^[0-9]'; "
                     "readlink /proc/self/ns/net"], read_write=["/tmp"],
                    new_namespaces=False, join=pidfd)
        r = su.run(s, pass_fds=(pidfd,))
        assert r.rc == 0, r
        lines = r.stdout.split()
        assert lines[0] == "joined-box" and lines[1] == marker, r
        assert int(lines[2]) < 10, r  # the sandbox's pids, not the host's
        assert lines[3] == os.readlink("/proc/%d/ns/net" % init), r
        # join excludes creating namespaces.
        bad = dict(s, new_namespaces=True)
        r = su.run(bad, pass_fds=(pidfd,))
        assert r.rc == 125 and r.failure["step"] == "spec", r
    finally:
        if pidfd is not None:
            os.close(pidfd)
        outer.kill()
        outer.wait()
