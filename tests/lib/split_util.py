"""Helpers for the split backend tests (tests/integration/test_split_*.py):
run the real openshell-supervisor with --backend split, start the real
openshell-sandbox in the agent namespace as an unprivileged user with no
capabilities (the way a restricted Pod runs it), and a stand-in supervisor
written in Python (named as such: it speaks the documented wire protocol of
docs/split-backend.md) for the tests that need a fake or forged peer."""
import hashlib
import hmac
import json
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time

from tests.lib import build

SUPERVISOR = build.binary("openshell-supervisor")
LAUNCHER = build.binary("openshell-sandbox")
NOBODY = 65534
# setpriv: drop to nobody, no supplementary groups, empty bounding and
# inheritable sets, so the launcher holds no capability at all.
DROP = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]


def write_key(directory, name="key", key=None):
    key = key if key is not None else os.urandom(32)
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(key.hex() + "\n")
    os.chmod(path, 0o644)  # the unprivileged launcher reads it
    return path, key


def workdir():
    d = tempfile.mkdtemp(prefix="osplit-")
    os.chmod(d, 0o777)
    return d


class SplitSupervisor:
    """openshell-supervisor --backend split --split-mode local."""

    def __init__(self, sandbox_id, policy_text, key_path, argv, d, extra=(), port=3128,
                 control=3129, timeout_ms=20000):
        self.id = sandbox_id
        self.netns = f"openshell-split-{sandbox_id}"
        self.dir = d
        self.control = control
        self.policy = os.path.join(d, f"{sandbox_id}-policy.yaml")
        self.audit = os.path.join(d, f"{sandbox_id}-audit.log")
        with open(self.policy, "w") as f:
            f.write(policy_text)
        self.cmd = [SUPERVISOR, "--backend", "split", "--sandbox-id", sandbox_id,
                    "--proxy-port", str(port), "--split-key", key_path,
                    "--split-control-port", str(control),
                    "--split-confirm-timeout", str(timeout_ms), "--policy", self.policy,
                    "--audit-log", self.audit, "--user", "nobody",
                    "--run-dir", os.path.join(d, f"{sandbox_id}-run"), *extra, "--", *argv]
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        end = time.monotonic() + 10
        while not os.path.exists(f"/run/netns/{self.netns}"):
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < end, "the agent namespace never appeared"
            time.sleep(0.02)
        return self

    def in_netns(self, *argv, **kw):
        return subprocess.run(["ip", "netns", "exec", self.netns, *argv], capture_output=True,
                              text=True, **kw)

    def gateway(self):
        out = subprocess.run(["ip", "-n", self.netns, "-4", "route", "show", "default"],
                             capture_output=True, text=True, check=True).stdout
        return out.split()[2]

    def launch(self, key_path, target=None, timeout=60):
        """The launcher, unprivileged, inside the agent namespace."""
        target = target or f"{self.gateway()}:{self.control}"
        return self.in_netns(*DROP, LAUNCHER, "--supervisor", target, "--trust", key_path,
                             timeout=timeout)

    def wait(self, timeout=60):
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def records(self):
        try:
            with open(self.audit) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True)


# --- the stand-in supervisor (test fake) -------------------------------------

LABELS = {
    "sup": b"openshell-split v1 supervisor proof\0",
    "lau": b"openshell-split v1 launcher proof\0",
    "s2l": b"openshell-split v1 supervisor to launcher\0",
    "l2s": b"openshell-split v1 launcher to supervisor\0",
}
PROBE, REPORT, SPEC, ABORT, STATUS, LAUNCHED, EXIT = range(1, 8)


def derive(key, label, nl, ns):
    return hmac.new(key, LABELS[label] + nl + ns, hashlib.sha256).digest()


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError("peer closed")
        data += chunk
    return data


class FakeSupervisor:
    """Accepts one launcher and speaks the protocol with `key`. With the
    right key it is a working (if minimal) supervisor; with a wrong one it
    shows what an impostor can get the launcher to do."""

    def __init__(self, key, addr="127.0.0.1"):
        self.key = key
        self.sock = socket.socket()
        self.sock.bind((addr, 0))
        self.sock.listen(1)
        self.sock.settimeout(30)
        self.addr = f"{addr}:{self.sock.getsockname()[1]}"
        self.seq_tx = 0
        self.seq_rx = 0

    def accept(self):
        self.conn, _ = self.sock.accept()
        self.conn.settimeout(30)
        hello = recv_exact(self.conn, 40)
        assert hello[:8] == b"OSSPLIT1"
        self.nl, self.ns = hello[8:], os.urandom(32)
        self.conn.sendall(self.ns + derive(self.key, "sup", self.nl, self.ns))
        self.k_tx = derive(self.key, "s2l", self.nl, self.ns)
        self.k_rx = derive(self.key, "l2s", self.nl, self.ns)

    def read_proof(self):
        """The launcher's proof (b"" when it hung up instead of answering)."""
        try:
            return recv_exact(self.conn, 32)
        except (EOFError, ConnectionResetError):
            return b""

    def send(self, kind, obj):
        payload = json.dumps(obj).encode() if obj is not None else b""
        hdr = struct.pack(">BI", kind, len(payload))
        tag = hmac.new(self.k_tx, struct.pack(">Q", self.seq_tx) + hdr + payload,
                       hashlib.sha256).digest()
        self.seq_tx += 1
        try:
            self.conn.sendall(hdr + payload + tag)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def recv(self):
        hdr = recv_exact(self.conn, 5)
        kind, n = struct.unpack(">BI", hdr)
        payload = recv_exact(self.conn, n)
        tag = recv_exact(self.conn, 32)
        want = hmac.new(self.k_rx, struct.pack(">Q", self.seq_rx) + hdr + payload,
                        hashlib.sha256).digest()
        assert hmac.compare_digest(tag, want), "launcher frame with a bad tag"
        self.seq_rx += 1
        return kind, payload

    def close(self):
        for s in (getattr(self, "conn", None), self.sock):
            if s:
                s.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
