"""Helpers for the gateway/CLI integration tests (tests/integration/test_gateway_*.py).

Runs the real openshell-gateway (local driver, real supervisors with the
inpod backend) on a free loopback port and a temporary state dir, the real
`openshell` CLI against it, and cleans up every process and directory it
made, even when a test fails. Nothing here mocks the gateway or the driver."""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from tests.lib import build

GATEWAY = build.binary("openshell-gateway")
CLI = build.binary("openshell")
SUPERVISOR = build.binary("openshell-supervisor")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def forward_answers(port, send, want, timeout=5):
    """Whether a connection to 127.0.0.1:port (a `sandbox port-forward`
    listener) answers send with exactly want; False when it cannot connect
    or the answer differs (for wait_for while the far server comes up)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(send)
            got = b""
            while len(got) < len(want):
                d = s.recv(len(want) - len(got))
                if not d:
                    break
                got += d
            return got == want
    except OSError:
        return False


def osb_links():
    """Supervisor-side veths (osbN) in this namespace."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return set(re.findall(r"^\d+: (osb\d+)[@:]", out, re.M))


def supervisors_for(sandbox_id):
    """pids of openshell-supervisor processes running for this sandbox id."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"openshell-supervisor") and \
                sandbox_id.encode() in argv[:12]:
            pids.append(int(d))
    return pids


def wait_for(pred, timeout=20, step=0.1, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


_made = []  # every Gateway of this process, for cleanup_all()


def pid_alive(pid, start_time):
    """Whether process `pid` with this start time (clock ticks, /proc/PID/stat
    field 22) still exists, zombies included."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19]) == start_time
    except (OSError, IndexError, ValueError):
        return False


def recorded_supervisors(state_dir):
    """(pid, start time) of every supervisor the local driver recorded."""
    out = []
    base = os.path.join(state_dir, "sandboxes")
    for sid in os.listdir(base) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, sid, "supervisor.pid")) as f:
                pid, start = f.read().split()[:2]
            out.append((int(pid), int(start)))
        except (OSError, ValueError):
            continue
    return out


def remove_tree(path, timeout=10):
    """rm -rf that fails loudly: a state dir left behind is a test bug."""
    end = time.monotonic() + timeout
    while os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        if time.monotonic() > end:
            shutil.rmtree(path)  # raises, naming what could not be removed
        time.sleep(0.1)


def cleanup_all():
    """Session finalizer: cleans up every Gateway a fixture or test did not
    (one whose start failed before its fixture could yield, for instance)."""
    while _made:
        g = _made.pop()
        if g.proc or (g.owns_dir and os.path.lexists(g.state_dir)):
            g.cleanup()


class Gateway:
    """One openshell-gateway on a temp state dir and a free port."""

    def __init__(self, state_dir=None, extra_env=None, ssl_context=None, argv_prefix=None):
        _made.append(self)
        # e.g. ["unshare", "--mount", "--", "sh", "-c", SCRIPT, "sh"]: the gateway (and
        # its supervisors) run with what the prefix arranged, such as bind mounts.
        self.argv_prefix = list(argv_prefix or [])
        self.owns_dir = state_dir is None
        self.ssl_context = ssl_context  # set: the TCP listener speaks TLS (request() too)
        self.state_dir = state_dir or tempfile.mkdtemp(prefix="osgw-", dir="/var/tmp")
        self.port = free_port()
        self.proc = None
        self.log_path = os.path.join(self.state_dir, "gateway-test.log")
        self.extra_env = extra_env or {}

    @property
    def env(self):
        """Environment for the CLI: this gateway's state dir and TCP port."""
        e = dict(os.environ)
        e.pop("OPENSHELL_GATEWAY", None)
        e.pop("OPENSHELL_TOKEN", None)
        e["OPENSHELL_GATEWAY_STATE_DIR"] = self.state_dir
        e["OPENSHELL_GATEWAY_LISTEN_ADDRESS"] = f"127.0.0.1:{self.port}"
        return e

    def start(self, extra_env=None):
        env = dict(self.env, **self.extra_env, **(extra_env or {}))
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([*self.argv_prefix, GATEWAY, "--state-dir", self.state_dir, "--listen",
                                      f"127.0.0.1:{self.port}"], env=env,
                                     stdout=self.log, stderr=self.log)
        wait_for(self.healthy, 10, what="gateway health")
        return self

    def healthy(self):
        try:
            return self.request("GET", "/v1/health", token=None)[0] == 200
        except OSError:
            if self.proc and self.proc.poll() is not None:
                raise AssertionError(f"gateway exited with {self.proc.returncode}: "
                                     f"{self.log_text()}")
            return False

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    @property
    def token(self):
        with open(os.path.join(self.state_dir, "admin.token")) as f:
            return f.read().strip()

    def request(self, method, path, body=None, token="admin", raw=None, headers=None):
        """(status, parsed JSON or text). token: "admin", None, or a token string."""
        if self.ssl_context:
            c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30,
                                            context=self.ssl_context)
        else:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h = dict(headers or {})
        if token == "admin":
            token = self.token
        if token:
            h["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode(errors="replace")
        c.close()
        try:
            return r.status, json.loads(text)
        except ValueError:
            return r.status, text

    def sandbox(self, name):
        st, body = self.request("GET", f"/v1/sandboxes/{name}")
        return body if st == 200 else None

    def wait_phase(self, name, *phases, timeout=30):
        return wait_for(lambda: (s := self.sandbox(name)) and s["phase"] in phases and s,
                        timeout, what=f"{name} in {phases}")

    def cli(self, *args, check=None, timeout=90, env=None):
        r = subprocess.run([CLI, *args], env=dict(self.env, **(env or {})),
                           capture_output=True, text=True, timeout=timeout)
        if check is not None:
            assert r.returncode == check, (r.returncode, r.stdout, r.stderr)
        return r

    def sandbox_dir(self, sid):
        return os.path.join(self.state_dir, "sandboxes", sid)

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=15)
        self.proc = None

    def cleanup(self):
        """Stops the gateway and every supervisor it started; removes the state dir."""
        self.stop()
        base = os.path.join(self.state_dir, "sandboxes")
        for sid in os.listdir(base) if os.path.isdir(base) else []:
            for pid in supervisors_for(sid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            wait_for(lambda: not supervisors_for(sid), 10, what="supervisors gone")
        # A supervisor that ended stays a zombie (no cmdline, so supervisors_for
        # no longer sees it) until its monitor has written "exit" into the state
        # dir (src/drivers/local/local_proc.c): removing the dir before that
        # raced with the write and left osgw-*/sandboxes/ID/exit behind.
        recorded = recorded_supervisors(self.state_dir)
        wait_for(lambda: not any(pid_alive(p, t) for p, t in recorded), 10,
                 what="supervisors reaped by their monitors")
        if self.owns_dir:
            remove_tree(self.state_dir)
