"""On the local host --max-processes / --max-memory-mb are cgroup limits for
the whole sandbox (pids.max, the memory limit): the supervisor creates
<root>/openshell/<id>, the launcher joins it before anything runs, and
teardown removes it. Each limit beside the same agent without it (no flags:
no cgroup at all); after every run no openshell/<id> directory is left."""
import os
import signal
import subprocess
import time

import pytest

from tests.lib.boundary_util import BOUNDARY_POLICY
from test_supervisor_limits import (FALLBACK, cgroup_layout, fork_script, sandbox_cgroup_dirs,
                                    started, supervise, supervisor_argv)

LAYOUT = cgroup_layout()
pytestmark = pytest.mark.skipif(not ("pids" in LAYOUT and "memory" in LAYOUT),
                                reason="no pids and memory cgroup controllers mounted")

FORK50 = fork_script(50)
ALLOC200 = ("python3 -c 'b = bytearray(200 * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096]);"
            " print(\"allocated\")'; echo alloc_rc=$?")


def memory_dir(sid):
    return os.path.join(LAYOUT["memory"][1], "openshell", sid)


def in_sandbox_cgroup(out, controller, sid):
    """Did the agent's /proc/self/cgroup place it in openshell/<sid>?"""
    lines = [l for l in out.splitlines() if l.count(":") >= 2 and l.split(":")[0].isdigit()]
    mine = [l for l in lines if (controller in l.split(":")[1].split(",") or
                                 (LAYOUT[controller][0] == 2 and l.startswith("0::")))]
    return any(l.endswith("/openshell/" + sid) for l in mine)


def assert_no_cgroup_left(sid):
    left = [d for d in sandbox_cgroup_dirs(sid) if os.path.exists(d)]
    assert not left, f"cgroups left behind: {left}"


def test_max_processes_is_a_pids_cgroup_for_the_sandbox():
    sid = "cg-pids"
    script = "cat /proc/self/cgroup; grep 'Max processes' /proc/self/limits; " + FORK50
    out = supervise(sid, script, "--max-processes", "20")
    assert FALLBACK not in out, out
    assert in_sandbox_cgroup(out, "pids", sid), out
    n = started(out)
    assert 0 < n < 20, out
    # The failures are the pids cgroup refusing forks, not RLIMIT_NPROC: the
    # agent's rlimit is not 20.
    assert f"failed=EAGAIN count={50 - n}" in out, out
    nproc = [l for l in out.splitlines() if l.startswith("Max processes")][0].split()
    assert nproc[2] != "20", out
    assert_no_cgroup_left(sid)


def test_without_flags_the_same_fork_loop_runs_and_no_cgroup_is_made():
    sid = "cg-free"
    dirs = " ".join(sandbox_cgroup_dirs(sid))
    script = f"cat /proc/self/cgroup; for d in {dirs}; do test -e $d && echo made=$d; done; " + \
        FORK50
    out = supervise(sid, script)
    assert started(out) == 50 and "failed= count=0" in out, out
    assert not in_sandbox_cgroup(out, "pids", sid) and "made=" not in out, out
    assert_no_cgroup_left(sid)


def peak_and_limit_script(sid):
    d = memory_dir(sid)
    if LAYOUT["memory"][0] == 1:
        peak, limit = "memory.max_usage_in_bytes", "memory.limit_in_bytes"
    else:
        peak, limit = "memory.peak", "memory.max"
    return f"echo peak=$(cat {d}/{peak}); echo limit=$(cat {d}/{limit})"


def value(out, key):
    return int([l for l in out.splitlines() if l.startswith(key + "=")][-1].split("=")[1])


def test_max_memory_is_a_memory_cgroup_the_sandbox_cannot_exceed():
    sid = "cg-mem"
    if LAYOUT["memory"][0] == 2 and not os.path.exists(
            os.path.join(LAYOUT["memory"][1], "memory.peak")):
        pytest.skip("kernel without memory.peak")
    script = "cat /proc/self/cgroup; " + ALLOC200 + "; " + peak_and_limit_script(sid)
    out = supervise(sid, script, "--max-memory-mb", "64")
    assert FALLBACK not in out, out
    assert in_sandbox_cgroup(out, "memory", sid), out
    # OOM-killed (137) or refused (MemoryError); never allocated.
    assert "allocated" not in out, out
    assert value(out, "alloc_rc") == 137 or "MemoryError" in out, out
    assert value(out, "limit") == 64 << 20, out
    # The allocation was charged here (it pushed usage up) and never past
    # the limit.
    assert 32 << 20 < value(out, "peak") <= 64 << 20, out
    assert_no_cgroup_left(sid)


def test_without_flags_the_same_allocation_succeeds():
    out = supervise("cg-mem-free", ALLOC200)
    assert "allocated" in out and value(out, "alloc_rc") == 0, out
    assert_no_cgroup_left("cg-mem-free")


def test_stop_by_signal_kills_what_is_left_and_removes_the_cgroups(tmp_path):
    """A process in the sandbox's cgroups but outside its PID namespace (the
    namespace's end does not reach it) is killed by teardown all the same."""
    sid = "cg-term"
    policy = tmp_path / "p.yaml"
    policy.write_text(BOUNDARY_POLICY)
    p = subprocess.Popen(supervisor_argv(sid, str(policy), "sleep 100 & sleep 100",
                                         "--max-processes", "20", "--max-memory-mb", "64"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stray = subprocess.Popen(["sleep", "60"])
    try:
        procs = os.path.join(sandbox_cgroup_dirs(sid)[0], "cgroup.procs")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if os.path.exists(procs) and len(open(procs).read().split()) >= 3:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the agent never showed up in its cgroup")
        for d in sandbox_cgroup_dirs(sid):
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(stray.pid))
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=30)[0]
        stray_status = stray.wait(timeout=10)
    finally:
        for proc in (p, stray):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert p.returncode == 128 + signal.SIGTERM, out
    assert stray_status == -signal.SIGKILL, out
    assert_no_cgroup_left(sid)


def test_leftover_cgroups_of_a_crashed_run_are_replaced_busy_ones_refused():
    sid = "cg-stale"
    dirs = sandbox_cgroup_dirs(sid)
    for d in dirs:
        os.makedirs(d, exist_ok=True)  # an empty leftover: replaced
    out = supervise(sid, "cat /proc/self/cgroup", "--max-processes", "20", "--max-memory-mb", "64")
    assert FALLBACK not in out and in_sandbox_cgroup(out, "pids", sid), out
    assert in_sandbox_cgroup(out, "memory", sid), out
    assert_no_cgroup_left(sid)
    # One that holds a process belongs to someone else: the supervisor
    # neither kills it nor uses the cgroup, and says so.
    pids_dir = os.path.join(LAYOUT["pids"][1], "openshell", sid)
    os.makedirs(pids_dir)
    other = subprocess.Popen(["sleep", "60"])
    try:
        with open(os.path.join(pids_dir, "cgroup.procs"), "w") as f:
            f.write(str(other.pid))
        # Shell builtins only: RLIMIT_NPROC counts every process of the
        # agent's uid on the host, so a fork could already be refused.
        out = supervise(sid, "printf nproc=; ulimit -p", "--max-processes", "20")
        assert FALLBACK in out and pids_dir in out, out
        assert other.poll() is None
        assert value(out, "nproc") == 20, out
    finally:
        other.kill()
        other.wait()
        for _ in range(100):
            try:
                os.rmdir(pids_dir)
                break
            except OSError:
                time.sleep(0.05)
    assert_no_cgroup_left(sid)
