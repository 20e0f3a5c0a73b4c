"""WebSocket helpers for the proxy tests: real servers (ws_server.py) in the
upstream namespace, and a raw client that writes frames by hand, so attacks a
well-behaved library never sends (unmasked, oversized, fragmented control
frames) can be sent through the proxy."""
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time

from tests.lib import build

WS_SERVER = os.path.join(build.TESTS, "integration", "ws_server.py")
PLAIN_PORT, TLS_PORT = 9001, 9443

TEXT, BINARY, CONT, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


class WsServers:
    """Plain and TLS WebSocket echo servers in the upstream namespace,
    stopped with it (they join its processes)."""

    def __init__(self, upstream, addr="198.51.100.10"):
        self.log = os.path.join(upstream.dir, "ws.log")
        open(self.log, "w").close()
        for port, tls in ((PLAIN_PORT, False), (TLS_PORT, True)):
            args = ["ip", "netns", "exec", upstream.ns, sys.executable, WS_SERVER,
                    addr, str(port), self.log]
            if tls:
                args += [f"{upstream.dir}/srv.pem", f"{upstream.dir}/srv.key"]
            p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
            assert p.stdout.readline().strip() == "ready"
            upstream.procs.append(p)

    def records(self, event=None):
        with open(self.log) as f:
            recs = [json.loads(l) for l in f if l.strip()]
        return [r for r in recs if event is None or r["event"] == event]

    def wait(self, event, path):
        """The records of event on path, once there is one: the server logs
        opening and closing from its handler, after the handshake."""
        for _ in range(400):
            recs = [r for r in self.records(event) if r["path"] == path]
            if recs:
                return recs
            time.sleep(0.05)
        return []

    def messages(self, path=None):
        return [r for r in self.records("message") if path is None or r["path"] == path]

    def clear(self):
        open(self.log, "w").close()


def ws_module_fixtures(policy_text, credentials=None):
    """The fixtures of a module testing one websocket policy: `upstream`
    (with its WebSocket servers as .ws), `proxy` (module scope) and the
    autouse `clean_log`. Use as `upstream, proxy, clean_log = ...`."""
    import pytest
    from tests.lib.proxy_util import Proxy, Upstream

    @pytest.fixture(scope="module")
    def upstream():
        up = Upstream().start()
        up.ws = WsServers(up)
        yield up
        up.stop()

    @pytest.fixture(scope="module")
    def proxy(upstream):
        p = Proxy(upstream, policy_text, credentials=credentials)
        yield p
        p.stop()

    @pytest.fixture(autouse=True)
    def clean_log(upstream):
        upstream.ws.clear()

    return upstream, proxy, clean_log


def frame(op, payload=b"", fin=True, mask=True, rsv=0, length=None):
    """One client frame; length overrides the declared payload length."""
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | rsv | op])
    m = 0x80 if mask else 0
    if n < 126:
        head += bytes([m | n])
    elif n <= 0xFFFF:
        head += bytes([m | 126]) + struct.pack(">H", n)
    else:
        head += bytes([m | 127]) + struct.pack(">Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class RawWs:
    """An upgrade through the proxy's plain-HTTP side, then hand-made frames."""

    def __init__(self, proxy, path, port=PLAIN_PORT, extra="", version="13",
                 host="upstream.test"):
        self.s = socket.create_connection(("127.0.0.1", proxy.port), timeout=20)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET http://{host}:{port}{path} HTTP/1.1\r\n"
                        f"Host: {host}:{port}\r\nUpgrade: websocket\r\n"
                        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                        f"Sec-WebSocket-Version: {version}\r\n{extra}\r\n").encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                break
            self.buf += chunk
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        self.head = head.decode("latin-1")
        self.status = int(self.head.split()[1]) if self.head else 0

    def send(self, *frames):
        for f in frames:
            self.s.sendall(f)

    def _need(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk

    def recv(self):
        """The next server frame as (fin, opcode, payload), None at EOF."""
        try:
            self._need(2)
            b0, b1 = self.buf[0], self.buf[1]
            n, o = b1 & 0x7F, 2
            if n == 126:
                self._need(4)
                n, o = struct.unpack(">H", self.buf[2:4])[0], 4
            elif n == 127:
                self._need(10)
                n, o = struct.unpack(">Q", self.buf[2:10])[0], 10
            self._need(o + n)
        except (EOFError, ConnectionResetError, socket.timeout):
            return None
        payload = self.buf[o:o + n]
        self.buf = self.buf[o + n:]
        return bool(b0 & 0x80), b0 & 0x0F, payload

    def close_code(self):
        """Reads to the close frame: (frames before it, its code or None)."""
        seen = []
        while (f := self.recv()) is not None:
            if f[1] == CLOSE:
                return seen, struct.unpack(">H", f[2][:2])[0] if len(f[2]) >= 2 else None
            seen.append(f)
        return seen, None

    def echoed_then_closed(self, good, bad, code):
        """A positive control (good echoed back as one frame), then bad
        answered with a close frame carrying code and nothing before it."""
        self.send(frame(*good))
        assert self.recv() == (True, PONG if good[0] == PING else good[0], good[1])
        self.send(frame(*bad[:2], **(bad[2] if len(bad) > 2 else {})))
        assert self.close_code() == ([], code)

    def close(self):
        self.s.close()
