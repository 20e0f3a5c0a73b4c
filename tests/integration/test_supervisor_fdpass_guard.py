"""The sandbox's cgroup2 membership directory and the fd-passing guard
bound to it (src/supervisor/backend/fdpass_guard.c): every local sandbox is
a member of <cgroup2>/openshell/<id>, limits or not, so caller identity and
the guard have a cgroup; the start record says "fd-passing guard on|off",
and off always comes with a warning naming why. A policy asking for
hard_requirement never starts its agent without the guard, beside the same
policy in best_effort as the positive control. The guard's refusals
themselves are pinned in tests/adversarial/test_identity_sharing.py."""
import os
import subprocess
import tempfile

import pytest

from tests.lib.boundary_util import BOUNDARY_POLICY
from test_supervisor_limits import cgroup_layout, supervisor_argv

MOUNTS = cgroup_layout()["mounts"]


def first_cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[fields.index("-") + 1] == "cgroup2":
                return fields[4].replace("\\040", " ")
    return None


UNIFIED = first_cgroup2_mount()
MARK = "agent-ran"


def run(sid, script, landlock="best_effort", hide_cgroups=False):
    policy_text = BOUNDARY_POLICY.replace("version: 1\n",
                                          f"version: 1\nlandlock: {{ compatibility: {landlock} }}\n")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(policy_text)
        policy = f.name
    argv = supervisor_argv(sid, policy, script)
    if hide_cgroups:
        mounts = " ".join(reversed(MOUNTS))
        argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                f'umount -l {mounts} && exec "$@"', "sh", *argv]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout + r.stderr
    finally:
        os.unlink(policy)


def guard_state(out):
    on, off = "fd-passing guard on" in out, "fd-passing guard off" in out
    assert on != off, out
    if off:
        assert "fd-passing guard unavailable:" in out, out
    return on


@pytest.mark.skipif(UNIFIED is None, reason="no cgroup2 hierarchy mounted")
def test_without_limits_the_sandbox_is_a_member_of_its_cgroup2_directory():
    sid = "fg-member"
    rc, out = run(sid, f"cat /proc/self/cgroup; echo {MARK}")
    assert rc == 0 and MARK in out, out
    assert "0::/openshell/" + sid in out.splitlines(), out
    assert "falling back to rlimits" not in out, out
    assert not os.path.exists(os.path.join(UNIFIED, "openshell", sid))


def test_the_start_record_names_the_guard_state():
    rc, out = run("fg-state", f"echo {MARK}")
    assert rc == 0 and MARK in out, out
    guard_state(out)


def test_without_a_cgroup2_directory_the_guard_is_off_and_says_why():
    rc, out = run("fg-nocg", f"echo {MARK}", hide_cgroups=True)
    assert rc == 0 and MARK in out, out
    assert not guard_state(out)
    assert "no cgroup2 directory" in out, out


def test_hard_requirement_never_starts_the_agent_without_the_guard():
    rc, out = run("fg-hard", f"echo {MARK}", landlock="hard_requirement", hide_cgroups=True)
    assert rc != 0 and MARK not in out, out
    assert "fd-passing guard (hard_requirement)" in out, out
    # Positive control: the same sandbox in best_effort runs.
    rc, out = run("fg-soft", f"echo {MARK}", hide_cgroups=True)
    assert rc == 0 and MARK in out, out


def test_hard_requirement_with_a_cgroup_starts_exactly_when_the_guard_is_on():
    rc, out = run("fg-hard2", f"echo {MARK}")
    on = guard_state(out)
    rc, out = run("fg-hard2", f"echo {MARK}", landlock="hard_requirement")
    assert (rc == 0 and MARK in out) == on, out
