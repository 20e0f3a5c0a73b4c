"""A refusal the agent can read while it is still sending. Closing a socket
with unread input makes the kernel send a RST, and a RST that arrives
before the agent reads the answer destroys it: the client sees "connection
reset" instead of a 403 that says why. The proxy half-closes after its
final answer and discards what the agent still sends, bounded in bytes and
time, before closing for good (proxy_linger.c). Real proxy, raw sockets."""
import json
import socket
import threading
import time

from tests.lib import build
from tests.lib.proxy_util import module_fixtures

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  p:
    endpoints:
      - {{ host: upstream.test, port: 80, allowed_ips: {NET}, protocol: rest,
          rules: [ {{ allow: {{ method: GET, path: "/**" }} }} ] }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""

upstream, proxy, clean_log = module_fixtures(POLICY)


def refused_while_sending(proxy, head, body_len, forever=False):
    """Sends head then a body of body_len bytes (or without end) from a
    thread, reads the answer at once. Returns (answer, how the sending
    ended, seconds until the connection ended)."""
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=15)
    s.sendall(head)
    ended = {}

    def send():
        chunk, sent = b"x" * 65536, 0
        try:
            while forever or sent < body_len:
                s.sendall(chunk[:body_len - sent] if not forever else chunk)
                sent += len(chunk)
            ended["how"] = "sent all"
        except OSError as e:
            ended["how"] = type(e).__name__

    t = threading.Thread(target=send, daemon=True)
    start = time.monotonic()
    t.start()
    out = b""
    while True:
        d = s.recv(65536)  # a reset here is the bug
        if not d:
            break
        out += d
    t.join(20)
    took = time.monotonic() - start
    s.close()
    return out, ended.get("how"), took


def test_a_policy_deny_before_the_body_is_read_reaches_the_agent(proxy, upstream):
    head = (b"POST http://upstream.test/upload HTTP/1.1\r\nHost: upstream.test\r\n"
            b"Content-Length: 8388608\r\n\r\n")
    for _ in range(5):  # it was a race: a few rounds
        out, _, _ = refused_while_sending(proxy, head, 8 << 20)
        assert out.startswith(b"HTTP/1.1 403 "), out[:200]
        assert json.loads(out.partition(b"\r\n\r\n")[2])["error"] == "policy_denied"
    assert upstream.requests() == []


def test_an_unknown_host_refused_mid_body_reaches_the_agent(proxy, upstream):
    head = (b"POST http://elsewhere.test/ HTTP/1.1\r\nHost: elsewhere.test\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    out, _, _ = refused_while_sending(proxy, head, 4 << 20)
    assert out.startswith(b"HTTP/1.1 403 "), out[:200]


def test_an_agent_that_never_stops_sending_is_cut_off(proxy, upstream):
    """The discard is bounded: an agent that sends without end gets its
    answer, then its connection closed within seconds."""
    head = (b"POST http://upstream.test/upload HTTP/1.1\r\nHost: upstream.test\r\n"
            b"Content-Length: 999999999999\r\n\r\n")
    out, how, took = refused_while_sending(proxy, head, 0, forever=True)
    assert out.startswith(b"HTTP/1.1 403 "), out[:200]
    assert how in ("BrokenPipeError", "ConnectionResetError"), how
    assert took < 12, took


def test_a_denied_request_without_a_body_closes_at_once(proxy, upstream):
    """Control: nothing left to read, no linger (the close follows the answer)."""
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    s.sendall(b"DELETE http://upstream.test/x HTTP/1.1\r\nHost: upstream.test\r\n\r\n")
    start, out = time.monotonic(), b""
    while (d := s.recv(65536)):
        out += d
    assert out.startswith(b"HTTP/1.1 403 ") and time.monotonic() - start < 1.5
    s.close()
