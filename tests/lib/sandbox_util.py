"""Helpers for the openshell-sandbox integration tests (tests/integration/test_sandbox_*.py).

Runs the real launcher as root with a JSON launch spec and collects its exit
status, output and status-fd lines. Never mocks a kernel feature."""

import json
import os
import shutil
import subprocess
import tempfile

from tests.lib import build, sanitizer_util

BUILD = build.BUILD
LAUNCHER = build.binary("openshell-sandbox")
PROBE = build.binary("sandbox-probe")
DENY = build.binary("sandbox-deny")

AGENT_UID = 65534
AGENT_GID = 65534
SYSTEM_RO = ["/usr", "/bin", "/lib", "/lib64", "/etc", "/proc", "/dev/urandom"]


def make_workdir(owner=None):
    """A scratch directory outside /tmp (new_namespaces hides the host's /tmp)."""
    d = tempfile.mkdtemp(prefix="osb-test-", dir="/var/tmp")
    os.chmod(d, 0o755)
    if owner is not None:
        os.chown(d, owner, owner)
    return d


def remove_workdir(d):
    shutil.rmtree(d, ignore_errors=True)


def spec(argv, read_only=(), read_write=(), **extra):
    """A launch spec with the usual system paths readable and the build dir
    (where the probe lives) readable and executable."""
    s = {
        "argv": list(argv),
        "env": {"PATH": "/usr/bin:/bin"},
        "user": AGENT_UID,
        "group": AGENT_GID,
        "filesystem": {
            "read_only": SYSTEM_RO + [os.path.realpath(BUILD)] + list(read_only),
            "read_write": ["/dev/null"] + list(read_write),
        },
        "new_namespaces": True,
    }
    s.update(extra)
    return s


class Result:
    def __init__(self, rc, stdout, stderr, status_lines):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.status = status_lines

    @property
    def failure(self):
        """The failure status line (the last one), or None."""
        fails = [l for l in self.status if "errno" in l]
        return fails[-1] if fails else None

    @property
    def execed(self):
        return self.failure is None and {"step": "exec", "ok": True} in self.status

    def __repr__(self):
        return "Result(rc=%r, stdout=%r, stderr=%r, status=%r)" % (
            self.rc, self.stdout, self.stderr, self.status)


def parse_status(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# Sanitizer builds: the run's ASan/UBSan options (reports land in its log
# directory), but no leak check: the launcher exits after the PID namespace it
# unshared lost its init, where LeakSanitizer cannot clone its tracer.
LAUNCHER_ENV = sanitizer_util.without_leak_check(
    {"PATH": "/usr/bin:/bin", **sanitizer_util.sanitizer_env()})


def run(spec_obj, wrapper=(), stdin=subprocess.DEVNULL, preexec_fn=None, pass_fds=(),
        env=None, timeout=60, raw_spec=None):
    """Runs the launcher with the spec on --spec-fd and a status pipe; waits."""
    spec_r, spec_w = os.pipe()
    st_r, st_w = os.pipe()
    data = raw_spec if raw_spec is not None else json.dumps(spec_obj).encode()
    os.write(spec_w, data)  # specs are small: fits in the pipe buffer
    os.close(spec_w)
    cmd = list(wrapper) + [LAUNCHER, "--spec-fd", str(spec_r), "--status-fd", str(st_w)]
    try:
        p = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             pass_fds=(spec_r, st_w) + tuple(pass_fds), preexec_fn=preexec_fn,
                             env=dict(LAUNCHER_ENV, **(env or {})))
    finally:
        os.close(spec_r)
        os.close(st_w)
    with os.fdopen(st_r, "rb") as st:
        out, err = p.communicate(timeout=timeout)
        status = st.read().decode()
    return Result(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                  parse_status(status))


def probe_lines(stdout):
    """'name errno' lines of sandbox-probe into a dict name -> int."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out
