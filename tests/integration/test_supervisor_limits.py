"""Operator limits on the agent: --max-processes caps how many processes the
agent's user may run (a fork bomb stops there), --max-memory-mb caps its
address space. Each limit beside a run without it."""
import os
import subprocess
import tempfile

from boundary_util import BOUNDARY_POLICY, LAUNCHER, SUPERVISOR

FORK = ("python3 -c '\n"
        "import os, time\n"
        "n = 0\n"
        "for _ in range(60):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        continue\n"
        "    if pid == 0:\n"
        "        time.sleep(3)\n"
        "        os._exit(0)\n"
        "    n += 1\n"
        "print(\"started=%d\" % n)\n"
        "'")
ALLOC = "python3 -c 'b = bytearray(300 * 1024 * 1024); print(\"allocated\")'"


def supervise(sid, script, *flags):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(BOUNDARY_POLICY)
        policy = f.name
    try:
        r = subprocess.run([SUPERVISOR, "--backend", "inpod", "--sandbox-id", sid,
                            "--proxy-port", "3128", "--launcher", LAUNCHER, "--policy", policy,
                            "--audit-log", "/dev/null", *flags, "--", "/bin/sh", "-c", script],
                           capture_output=True, text=True, timeout=60)
        return r.stdout + r.stderr
    finally:
        os.unlink(policy)


def started(out):
    line = [l for l in out.splitlines() if l.startswith("started=")][-1]
    return int(line.split("=")[1])


def test_max_processes_caps_a_fork_loop():
    assert started(supervise("lim-free", FORK)) == 60
    capped = started(supervise("lim-nproc", FORK, "--max-processes", "20"))
    assert 0 < capped < 20


def test_max_memory_caps_allocation():
    assert "allocated" in supervise("lim-mem-free", ALLOC)
    out = supervise("lim-mem", ALLOC, "--max-memory-mb", "128")
    assert "allocated" not in out and "MemoryError" in out


def test_bad_limit_is_refused_with_a_clear_error():
    out = supervise("lim-bad", "true", "--max-processes", "zero")
    assert "--max-processes" in out
