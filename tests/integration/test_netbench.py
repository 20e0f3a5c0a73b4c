"""netbench, the load tool of the proxy benchmarks: its servers must do
exactly what the benchmark figures assume (N bytes then close; one keep-alive
answer per GET), and its clients must refuse what would leave the machine
(names are only ever handed to a proxy). Loopback only."""
import socket
import subprocess
import time

import pytest

from tests.lib import build

NETBENCH = build.binary("netbench")

pytestmark = build.needs("netbench")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(request):
    procs = []

    def start(mode):
        port = free_port()
        p = subprocess.Popen([NETBENCH, mode, "127.0.0.1", str(port)], stdout=subprocess.PIPE,
                             text=True)
        procs.append(p)
        assert p.stdout.readline().strip() == f"listening on 127.0.0.1:{port}"
        return port

    yield start
    for p in procs:
        p.kill()
        p.wait()


def read_all(s):
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return out
        out += chunk


def test_serve_bulk_sends_exactly_the_requested_bytes_then_closes(server):
    port = server("serve-bulk")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"1000000\n")
        data = read_all(s)
    assert len(data) == 1000000 and data.count(0) == 1000000


def test_serve_bulk_closes_on_a_bad_byte_count(server):
    port = server("serve-bulk")
    for bad in (b"12x\n", b"0\n", b"-5\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(bad)
            assert read_all(s) == b""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:  # control
        s.sendall(b"3\n")
        assert read_all(s) == b"\0\0\0"


def test_serve_http_answers_each_get_on_one_kept_alive_connection(server):
    port = server("serve-http")
    get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(get + get)  # pipelined: two answers, in order, connection open
        out = b""
        while out.count(b"hello, world\n") < 2:
            out += s.recv(4096)
        assert out.count(b"HTTP/1.1 200 OK\r\n") == 2 and b"Connection: close" not in out
        s.sendall(get)
        assert b"hello, world\n" in s.recv(4096)


def test_serve_http_refuses_bodies_and_other_methods_and_closes(server):
    port = server("serve-http")
    for req, status in ((b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", b"405"),
                        (b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", b"400")):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(req)
            out = read_all(s)
            assert out.startswith(b"HTTP/1.1 " + status) and b"Connection: close" in out


def test_serve_http_closes_after_answering_http10_and_connection_close(server):
    port = server("serve-http")
    for req in (b"GET / HTTP/1.0\r\n\r\n", b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(req)
            out = read_all(s)  # returns only because the server closed
            assert out.startswith(b"HTTP/1.1 200 OK") and out.endswith(b"hello, world\n")


def test_bulk_client_reports_gbits_of_a_complete_transfer(server):
    port = server("serve-bulk")
    r = subprocess.run([NETBENCH, "bulk", "--connect", f"127.0.0.1:{port}", "--bytes", "5000000"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) > 0 and "5000000 bytes" in r.stderr


def test_bulk_client_never_resolves_a_name_itself(server):
    port = server("serve-bulk")
    r = subprocess.run([NETBENCH, "bulk", "--connect", f"localhost:{port}", "--bytes", "10"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "need an IPv4 literal" in r.stderr
    r = subprocess.run([NETBENCH, "bulk", "--connect", f"127.0.0.1:{port}", "--bytes", "10"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0  # control: the literal works


def test_bulk_client_fails_when_the_proxy_refuses_connect(server):
    """A stand-in proxy that answers 403: the figure must not be produced."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    p = subprocess.Popen([NETBENCH, "bulk", "--connect", "upstream.test:9", "--proxy",
                          f"127.0.0.1:{port}", "--bytes", "10"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    conn, _ = lsock.accept()
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += conn.recv(1)
    assert head.startswith(b"CONNECT upstream.test:9 HTTP/1.1\r\n")
    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
    out, err = p.communicate(timeout=10)
    conn.close()
    lsock.close()
    assert p.returncode == 1 and out == "" and "refused" in err


def test_idle_holds_tunnels_until_stdin_closes(server):
    """Through a minimal stand-in CONNECT proxy on loopback."""
    port = server("serve-http")
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    pport = lsock.getsockname()[1]
    p = subprocess.Popen([NETBENCH, "idle", "--proxy", f"127.0.0.1:{pport}", "--target",
                          f"127.0.0.1:{port}", "--count", "3"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    conns = []
    for _ in range(3):
        c, _ = lsock.accept()
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += c.recv(1)
        c.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        conns.append(c)
    assert p.stdout.readline().strip() == "ready 3"
    time.sleep(0.2)
    assert p.poll() is None  # still holding them
    p.stdin.close()
    assert p.wait(timeout=10) == 0
    for c in conns:
        c.settimeout(5)
        assert c.recv(1) == b""  # each tunnel closed once stdin reached EOF
        c.close()
    lsock.close()


def test_http_client_counts_every_answer_and_agrees_with_littles_law(server):
    """`netbench http`: the requests asked for are all answered on kept-alive
    connections, and its mean is what Little's law allows for its rate (a
    closed loop cannot report more), unlike wrk's here."""
    port = server("serve-http")
    r = subprocess.run([NETBENCH, "http", "--target", f"127.0.0.1:{port}", "--requests", "3000",
                        "--conns", "4"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    f = dict(kv.split("=") for kv in r.stdout.split())
    assert f["requests"] == "3000" and f["conns"] == "4", f
    assert float(f["p50_ms"]) <= float(f["p99_ms"])
    mean, little = float(f["mean_ms"]), float(f["little_mean_ms"])
    assert mean <= little * 1.05, f


def test_http_client_fails_on_an_answer_that_is_not_200():
    """A stand-in server answering 403: no figure is printed."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    p = subprocess.Popen([NETBENCH, "http", "--target", f"127.0.0.1:{port}", "--requests", "5",
                          "--conns", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    conn, _ = lsock.accept()
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += conn.recv(1)
    assert head.startswith(b"GET / HTTP/1.1\r\n")
    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
    out, err = p.communicate(timeout=10)
    conn.close()
    lsock.close()
    assert p.returncode == 1 and out == "" and "not a 200" in err, (out, err)
