"""Connection floods cannot lock the gateway out: thousands of idle and slow
(slowloris) TCP connections from several addresses, opened and reopened as
fast as the test can, while the admin CLI over the Unix socket, /v1/health on
the TCP port and a live sandbox's supervisor session keep working (a policy
is pushed on the session and loaded during the flood). Unauthenticated
connections that send no request head are closed by the gateway."""

import resource
import socket
import threading
import time

import pytest

from tests.lib import build
from tests.lib.gateway_util import Gateway, wait_for
from tests.lib.http_util import read_head

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

FLOOD_ADDRS = [f"127.0.0.{i}" for i in range(10, 18)]  # 8 peers
HEALTH_ADDR = "127.0.0.2"
IDLE_PER_ADDR = 500  # 4000 idle connections held at once, if the gateway let them
SLOW = 100
POLICY2 = "version: 1\nnetwork_policies: {}\n"


@pytest.fixture
def gw():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 16384)), hard))
    g = Gateway().start()
    yield g
    g.cleanup()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def dial(port, src):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


class Flood:
    """Idle connections (nothing sent) kept at IDLE_PER_ADDR per address,
    reopened as the gateway closes them, plus SLOW slowloris heads."""

    def __init__(self, port):
        self.port = port
        self.stop = threading.Event()
        self.opened = 0
        self.closed_by_gateway = 0
        self.slow_closed = 0
        self.threads = [threading.Thread(target=self.idle, args=(a,)) for a in FLOOD_ADDRS]
        self.threads.append(threading.Thread(target=self.slowloris))

    def idle(self, addr):
        held = []
        while not self.stop.is_set():
            try:
                held.append(dial(self.port, addr))
                self.opened += 1
            except OSError:
                time.sleep(0.01)
            if len(held) >= IDLE_PER_ADDR:
                # Reap what the gateway closed; keep the rest.
                alive = []
                for s in held:
                    s.setblocking(False)
                    try:
                        gone = s.recv(1) == b""
                    except BlockingIOError:
                        gone = False
                    except OSError:
                        gone = True
                    if gone:
                        self.closed_by_gateway += 1
                        s.close()
                    else:
                        alive.append(s)
                held = alive
                if len(held) >= IDLE_PER_ADDR:
                    time.sleep(0.05)
        for s in held:
            s.close()

    def slowloris(self):
        socks = []
        for i in range(SLOW):
            try:
                s = dial(self.port, FLOOD_ADDRS[i % len(FLOOD_ADDRS)])
                s.sendall(b"GET /v1/sandboxes HTTP/1.1\r\n")
                socks.append(s)
            except OSError:
                pass
        while socks and not self.stop.is_set():
            for s in list(socks):
                try:
                    s.sendall(b"X")  # one byte of a header that never ends
                except OSError:
                    self.slow_closed += 1
                    socks.remove(s)
            time.sleep(0.5)
        for s in socks:
            s.close()

    def __enter__(self):
        for t in self.threads:
            t.start()
        wait_for(lambda: self.opened >= 2000, 60, what="the flood to build up")
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(60)


def health(gw):
    s = dial(gw.port, HEALTH_ADDR)
    try:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        return read_head(s)[0]
    finally:
        s.close()


def test_flood_of_idle_and_slow_connections_locks_nobody_out(gw, tmp_path):
    r = gw.cli("sandbox", "create", "--name", "live", "--detach", "--", "sleep", "600", check=0)
    gw.wait_phase("live", "Ready")
    pol = tmp_path / "p2.yaml"
    pol.write_text(POLICY2)
    with Flood(gw.port) as flood:
        for _ in range(10):
            assert health(gw) == 200
            r = gw.cli("sandbox", "list", timeout=30)
            assert r.returncode == 0 and "live" in r.stdout, (r.stdout, r.stderr)
            time.sleep(0.3)
        # The supervisor's session is alive: a policy pushed on it is loaded.
        r = gw.cli("policy", "set", "live", "--policy", str(pol), "--wait", timeout=60)
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert gw.sandbox("live")["phase"] == "Ready"
        # A TCP client with a token also gets through (from its own address).
        assert health(gw) == 200
        # The slow heads were closed by the gateway, and idle ones pushed out.
        wait_for(lambda: flood.slow_closed == SLOW, 60, what="slowloris connections closed")
        assert flood.closed_by_gateway > 0
    assert "supervisor session lost" not in gw.log_text()
    assert "connection budget" in gw.log_text()
    assert gw.sandbox("live")["phase"] == "Ready"
