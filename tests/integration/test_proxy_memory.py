"""The supervisor pays for the agent's proxied connections: downloads the
agent opens and never reads must not grow the proxy past its per-sandbox
budget (--proxy-memory-mb), upstream connections are capped
(--max-upstream-connections), and what is over either limit is refused with
a 503 and an audit record, never dropped. Each refusal has a positive
control beside it: the same downloads, read, arrive whole."""
import json
import os
import resource
import socket
import ssl
import subprocess
import sys
import threading
import time

import pytest

from tests.lib import build
from tests.lib.http_util import read_head
from tests.lib.proxy_util import UPSTREAM_IP, Proxy, Upstream
from tests.lib.sanitizer_util import skip_if_sanitized

pytestmark = build.needs("openshell-proxy")

BULK_SERVER = os.path.join(os.path.dirname(__file__), "bulk_server.py")
NET = '["198.51.100.0/24"]'
CLIENT = os.path.realpath(sys.executable)
POLICY = f"""
version: 1
network_policies:
  bulk:
    endpoints:
      - host: upstream.test
        port: 9000
        allowed_ips: {NET}
        protocol: rest
        access: read-only
      - host: upstream.test
        port: 9443
        allowed_ips: {NET}
        protocol: rest
        access: read-only
      - host: other.test
        port: 9000
        allowed_ips: {NET}
    binaries:
      - {{ path: {CLIENT} }}
"""
BIG = 64 << 20  # a body far larger than anything the proxy may hold for it
# (kind, CONNECT target or None, Host the request names)
KINDS = {
    "http": (None, "upstream.test:9000"),
    "tunnel": ("other.test:9000", "other.test:9000"),
    "mitm": ("upstream.test:9443", "upstream.test:9443"),
}


@pytest.fixture(scope="module")
def upstream():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    up = Upstream().start()
    for port, tls in ((9000, False), (9443, True)):
        args = ["ip", "netns", "exec", up.ns, "python3", BULK_SERVER, UPSTREAM_IP, str(port)]
        if tls:
            args += [f"{up.dir}/srv.pem", f"{up.dir}/srv.key"]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert p.stdout.readline().strip() == "ready"
        up.procs.append(p)
    yield up
    up.stop()


def start_proxy(upstream, *flags):
    return Proxy(upstream, POLICY, extra=flags)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def settled_rss_kib(pid, rounds=6, limit_s=90):
    """VmRSS once it stops growing (the downloads fill what they may fill)."""
    last, same, deadline = rss_kib(pid), 0, time.monotonic() + limit_s
    while same < rounds and time.monotonic() < deadline:
        time.sleep(0.5)
        now = rss_kib(pid)
        same = same + 1 if now <= last + 256 else 0
        last = max(last, now)
    return last


def recv_exact_head(s):
    """The CONNECT answer, byte by byte, so nothing after it is consumed."""
    data = b""
    while not data.endswith(b"\r\n\r\n"):
        b = s.recv(1)
        if not b:
            break
        data += b
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0, data


def open_download(proxy, kind, size, rcvbuf=True):
    """One download through the proxy, read up to the response head and no
    further. Returns (status, socket, head, body bytes already read)."""
    target, host = KINDS[kind]
    s = socket.socket()
    if rcvbuf:  # the agent's own socket must not soak up the body either
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(20)
    s.connect(("127.0.0.1", proxy.port))
    path = f"/big/{size}"
    if target is None:
        try:
            s.sendall(f"GET http://{host}{path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused at accept: the answer is already waiting
        status, head, rest = read_head(s)
        return status, s, head, rest
    try:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, head = recv_exact_head(s)
    if status != 200:
        return status, s, head, b""
    if kind == "mitm":
        ctx = ssl.create_default_context(cafile=proxy.ca)
        s = ctx.wrap_socket(s, server_hostname=host.split(":")[0])
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    status, head, rest = read_head(s)
    return status, s, head, rest


def read_body(s, head, rest):
    length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n")
                  if l.lower().startswith(b"content-length:"))
    got = len(rest)
    while got < length:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        got += len(chunk)
    return got, length


def reasons(proxy):
    return [r.get("reason") for r in proxy.audit_records()]


def refusal_reason(s, head, rest):
    """The JSON reason of a proxy's own error answer."""
    body = rest
    try:
        while len(body) < 64 and not body.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            body += chunk
        return json.loads(body).get("reason")
    except (ValueError, OSError):
        return None


def open_stuck(proxy, kind, n):
    """n downloads never read: (admitted (socket, body bytes read with the
    head), refusals by reason)."""
    admitted, refused = [], {}
    for _ in range(n):
        status, s, head, rest = open_download(proxy, kind, BIG)
        if status == 200:
            admitted.append((s, rest))
            continue
        r = refusal_reason(s, head, rest)
        refused[r] = refused.get(r, 0) + 1
        s.close()
    return admitted, refused


def close_all(socks):
    for s in socks:
        (s[0] if isinstance(s, tuple) else s).close()


@skip_if_sanitized("ASan keeps freed memory in a quarantine (256 MiB by default) and adds "
                   "redzones, so RSS measures the sanitizer; bounded in the plain build")
@pytest.mark.parametrize("kind", ["http", "mitm"])
def test_unread_downloads_stay_within_the_budget(upstream, kind):
    """1,200 downloads the agent never reads: the proxy's RSS grows by less
    than its budget plus allocator slack; what is over the budget is refused
    with proxy_memory_budget, and an admitted download is only paused: read
    later, it arrives whole."""
    budget_mb = 16
    p = start_proxy(upstream, "--proxy-memory-mb", str(budget_mb),
                    "--max-upstream-connections", "4096", "--max-conns", "4096")
    socks = []
    try:
        base = rss_kib(p.proc.pid)
        socks, refused = open_stuck(p, kind, 1200)
        grown_mib = (settled_rss_kib(p.proc.pid) - base) / 1024
        print(f"{kind}: {len(socks)} admitted, refused {refused}, RSS +{grown_mib:.1f} MiB")
        assert grown_mib < budget_mb + 32, (grown_mib, len(socks), refused)
        assert socks, "no download was admitted at all"
        assert refused.get("proxy_memory_budget", 0) > 0, refused
        assert "proxy_memory_budget" in reasons(p)
        # Backpressure, not loss: a paused download is intact when read.
        got, length = read_body(socks[0][0], b"content-length: %d" % BIG, socks[0][1])
        assert got == length == BIG
    finally:
        close_all(socks)
        p.stop()


@pytest.mark.parametrize("kind", ["http", "tunnel", "mitm"])
def test_downloads_that_are_read_arrive_whole(upstream, kind):
    """Positive control for the budget: the same proxy settings, downloads
    read as they arrive, every byte of every one."""
    p = start_proxy(upstream, "--proxy-memory-mb", "16")
    results, errors = [], []

    def worker():
        try:
            for _ in range(3):
                status, s, head, rest = open_download(p, kind, 8 << 20, rcvbuf=False)
                with s:
                    assert status == 200, head
                    results.append(read_body(s, head, rest))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    try:
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert len(results) == 24
        assert all(got == length == 8 << 20 for got, length in results)
        assert "proxy_memory_budget" not in reasons(p)
    finally:
        p.stop()


def proxy_kernel_bytes(proxy):
    """What the kernel holds for the proxy's sockets (ss -tm skmem: receive
    queue r plus send queue w), those accepted on its port and those it
    opened to the upstream; the test's own sockets are not counted."""
    out = subprocess.run(["ss", "-tmnH"], capture_output=True, text=True, check=True).stdout
    total, theirs = 0, False
    for line in out.splitlines():
        if "skmem:(" not in line:
            fields = line.split()
            local, peer = (fields[3], fields[4]) if len(fields) >= 5 else ("", "")
            theirs = local.endswith(f":{proxy.port}") or peer.startswith(UPSTREAM_IP + ":")
            continue
        if theirs:
            mem = line.split("skmem:(", 1)[1].split(")", 1)[0].split(",")
            vals = {m.rstrip("0123456789"): int(m[len(m.rstrip("0123456789")):]) for m in mem}
            total += vals.get("r", 0) + vals.get("w", 0)
    return total


@skip_if_sanitized("timing of the settle loop under ASan; the bound is the plain build's")
@pytest.mark.parametrize("kind", ["http", "tunnel"])
def test_kernel_socket_buffers_of_unread_downloads_stay_within_the_budget(upstream, kind):
    """1,200 unread downloads: what the kernel queues on the proxy's sockets
    (the upstream's receive queues, the agent sockets' send queues) counts
    against --proxy-memory-mb, so it stays near the budget instead of
    growing with every admitted download (tcp_rmem's maximum each)."""
    budget_mb = 16
    p = start_proxy(upstream, "--proxy-memory-mb", str(budget_mb),
                    "--max-upstream-connections", "4096", "--max-conns", "4096")
    socks = []
    try:
        socks, refused = open_stuck(p, kind, 1200)
        time.sleep(2)  # the queues fill what they may fill
        kernel_mib = proxy_kernel_bytes(p) / (1 << 20)
        print(f"{kind}: {len(socks)} admitted, refused {refused}, kernel {kernel_mib:.1f} MiB")
        assert socks and refused.get("proxy_memory_budget", 0) > 0, (len(socks), refused)
        assert kernel_mib < budget_mb * 1.5, (kernel_mib, len(socks))
        got, length = read_body(socks[0][0], b"content-length: %d" % BIG, socks[0][1]) \
            if kind == "http" else (BIG, BIG)
        assert got == length == BIG
    finally:
        close_all(socks)
        p.stop()


@pytest.mark.parametrize("kind", ["http", "tunnel", "mitm"])
def test_budget_refuses_new_connections_then_recovers(upstream, kind):
    """A small budget filled by unread downloads: the next connection gets a
    503 with reason proxy_memory_budget (and an audit record); once the
    agent closes them, a download works again."""
    p = start_proxy(upstream, "--proxy-memory-mb", "4", "--max-upstream-connections", "4096")
    socks = []
    try:
        socks, refused = open_stuck(p, kind, 200)
        assert socks and refused.get("proxy_memory_budget", 0) > 0, (len(socks), refused)
        assert "proxy_memory_budget" in reasons(p)
        close_all(socks)
        socks = []
        deadline = time.monotonic() + 30
        while True:
            status, s, head, rest = open_download(p, kind, 1 << 20, rcvbuf=False)
            with s:
                if status == 200:
                    assert read_body(s, head, rest) == (1 << 20, 1 << 20)
                    break
            assert time.monotonic() < deadline, "the budget never came back"
            time.sleep(0.2)
    finally:
        close_all(socks)
        p.stop()


def connect_tunnel(proxy):
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    s.sendall(b"CONNECT other.test:9000 HTTP/1.1\r\nHost: other.test:9000\r\n\r\n")
    status, head = recv_exact_head(s)
    return status, s, head


def test_upstream_connection_cap(upstream):
    """--max-upstream-connections 5: five tunnels open, the sixth is refused
    with upstream_connection_limit; after one closes, a new one opens."""
    p = start_proxy(upstream, "--max-upstream-connections", "5")
    socks = []
    try:
        for _ in range(5):
            status, s, head = connect_tunnel(p)
            socks.append(s)
            assert status == 200, head
        status, s, head = connect_tunnel(p)
        with s:
            assert status == 503, head
            assert refusal_reason(s, head, b"") == "upstream_connection_limit"
        assert "upstream_connection_limit" in reasons(p)
        socks.pop().close()
        deadline = time.monotonic() + 30
        while True:
            status, s, head = connect_tunnel(p)
            if status == 200:
                socks.append(s)
                break
            s.close()
            assert status == 503, head
            assert time.monotonic() < deadline, "the closed tunnel's slot never came back"
            time.sleep(0.2)
        # Still capped: the slot was given back once, not forgotten.
        status, s, head = connect_tunnel(p)
        with s:
            assert status == 503, head
    finally:
        close_all(socks)
        p.stop()
