"""Operator limits on the agent when the host has no cgroup controllers to
hold them: --max-processes falls back to RLIMIT_NPROC (per uid: a fork bomb
stops there), --max-memory-mb to RLIMIT_AS (per process), with a warning.
Where the controllers are mounted the limits are cgroups for the whole
sandbox instead (test_supervisor_cgroups.py), so these runs hide them: an
OOM-killed agent never sees the MemoryError the rlimit gives. Each limit
beside a run without it."""
import os
import shlex
import subprocess
import tempfile

from tests.lib import build
from tests.lib.boundary_util import BOUNDARY_POLICY, LAUNCHER, SUPERVISOR
from tests.lib.sanitizer_util import skip_if_sanitized

pytestmark = build.needs("openshell-supervisor", "openshell-sandbox")

def fork_script(n):
    """An agent that forks n sleepers, reporting how many started and the
    errno of every fork that failed."""
    return ("python3 -c '\n"
            "import errno, os, time\n"
            "n, failed = 0, []\n"
            f"for _ in range({n}):\n"
            "    try:\n"
            "        pid = os.fork()\n"
            "    except OSError as e:\n"
            "        failed.append(errno.errorcode[e.errno])\n"
            "        continue\n"
            "    if pid == 0:\n"
            "        time.sleep(3)\n"
            "        os._exit(0)\n"
            "    n += 1\n"
            "print(\"started=%d\" % n)\n"
            "print(\"failed=\" + \",\".join(sorted(set(failed))) + \" count=%d\" % len(failed))\n"
            "'")


FORK = fork_script(60)
ALLOC = "python3 -c 'b = bytearray(300 * 1024 * 1024); print(\"allocated\")'"
FALLBACK = "falling back to rlimits"


def cgroup_layout():
    """{"pids"|"memory": (version, mount point)} for the controllers mounted
    here, chosen as src/supervisor/backend/cgroup.c does; plus "mounts": every cgroup
    mount point."""
    found = {"mounts": []}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            fstype, mnt = fields[dash + 1], fields[4].replace("\\040", " ")
            if fstype == "cgroup":
                ctl, version = fields[dash + 3].split(","), 1
            elif fstype == "cgroup2":
                try:
                    with open(os.path.join(mnt, "cgroup.controllers")) as c:
                        ctl, version = c.read().split(), 2
                except OSError:
                    ctl, version = [], 2
            else:
                continue
            found["mounts"].append(mnt)
            for name in ("pids", "memory"):
                if name in ctl and (name not in found or found[name][0] == 2 and version == 1):
                    found[name] = (version, mnt)
    return found


def sandbox_cgroup_dirs(sid):
    """Where the supervisor puts sandbox sid's cgroups on this host."""
    lay = cgroup_layout()
    return sorted({os.path.join(lay[c][1], "openshell", sid) for c in ("pids", "memory")
                   if c in lay})


def supervisor_argv(sid, policy, script, *flags):
    return [SUPERVISOR, "--backend", "inpod", "--sandbox-id", sid, "--proxy-port", "3128",
            "--launcher", LAUNCHER, "--policy", policy, "--audit-log", "/dev/null", *flags, "--",
            "/bin/sh", "-c", script]


def supervise(sid, script, *flags, hide_cgroups=False):
    """Runs a real supervisor to the end; stdout + stderr. hide_cgroups runs
    it in a private mount namespace with every cgroup hierarchy unmounted."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(BOUNDARY_POLICY)
        policy = f.name
    argv = supervisor_argv(sid, policy, script, *flags)
    if hide_cgroups:
        mounts = " ".join(shlex.quote(m) for m in reversed(cgroup_layout()["mounts"]))
        argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                f'umount -l {mounts} && exec "$@"', "sh", *argv]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return r.stdout + r.stderr
    finally:
        os.unlink(policy)


def started(out):
    line = [l for l in out.splitlines() if l.startswith("started=")][-1]
    return int(line.split("=")[1])


# RLIMIT_NPROC counts every process of the uid on the host: a uid no other
# test uses (sandboxes run as nobody) keeps them out of the count.
OWN_UID = ("--user", "lp", "--group", "lp")


def test_without_cgroups_max_processes_falls_back_to_rlimit_nproc():
    assert started(supervise("lim-free", FORK, *OWN_UID, hide_cgroups=True)) == 60
    out = supervise("lim-nproc", FORK, "--max-processes", "20", *OWN_UID, hide_cgroups=True)
    assert 0 < started(out) < 20
    assert "no pids cgroup controller is mounted" in out and FALLBACK in out, out


@skip_if_sanitized("ASan reserves terabytes of shadow address space, so an address-space "
                   "cap stops the sanitized launcher before the agent runs")
def test_without_cgroups_max_memory_falls_back_to_rlimit_as():
    assert "allocated" in supervise("lim-mem-free", ALLOC, hide_cgroups=True)
    out = supervise("lim-mem", ALLOC, "--max-memory-mb", "128", hide_cgroups=True)
    assert "allocated" not in out and "MemoryError" in out
    assert "no memory cgroup controller is mounted" in out and FALLBACK in out, out


def test_bad_limit_is_refused_with_a_clear_error():
    out = supervise("lim-bad", "true", "--max-processes", "zero")
    assert "--max-processes" in out
