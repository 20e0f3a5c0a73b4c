"""The proxy under AddressSanitizer + LeakSanitizer through a mixed load
(plain HTTP allowed and denied, a TLS-terminated exchange with a credential,
an L4 tunnel, smuggling attempts, abandoned connections): zero leak or
memory-error reports when it exits. Uses the sanitizer build (build-san)
that `make check` builds beside the normal one."""
import os
import socket
import subprocess

import pytest

from tests.lib import build, proxy_util
from tests.lib.proxy_util import Proxy, Upstream
from test_proxy import POLICY, SECRET

pytestmark = build.needs("openshell-proxy")

SAN_BIN = proxy_util.SAN_PROXY_BIN


@pytest.fixture(scope="module")
def upstream():
    up = Upstream().start()
    yield up
    up.stop()


def test_proxy_load_under_leak_checker(upstream, monkeypatch):
    if not os.access(SAN_BIN, os.X_OK):
        pytest.fail(f"sanitizer build missing: {SAN_BIN} (make build-san)")
    monkeypatch.setattr(proxy_util, "PROXY_BIN", SAN_BIN)
    monkeypatch.setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=23")
    p = Proxy(upstream, POLICY, credentials={"providers": {"github": {"GITHUB_TOKEN": SECRET}}})
    try:
        for i in range(40):
            assert p.curl(f"http://upstream.test/ok{i}")[0] == 200
            assert p.curl("http://upstream.test/x", "-X", "POST", "-d", "x")[0] == 403
        for i in range(10):
            assert p.curl("https://creds.test/r", "-H",
                          "Authorization: Bearer openshell:resolve:env:GITHUB_TOKEN")[0] == 200
            assert p.curl("https://other.test:8443/t", "--cacert",
                          f"{upstream.dir}/ca.pem")[0] == 200
            p.raw(b"GET http://upstream.test/a HTTP/1.1\r\nHost: upstream.test\r\n"
                  b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        socks = [socket.create_connection(("127.0.0.1", p.port)) for _ in range(50)]
        for s in socks:
            s.sendall(b"CONNECT upstream.test:443 HTTP/1.1\r\n")
    finally:
        err = proxy_util.stop_sanitized(p, timeout=30)
        for s in locals().get("socks", []):
            s.close()
    proxy_util.assert_sanitizer_clean(p, err)


RPC_POLICY = """
version: 1
network_policies:
  rpc:
    endpoints:
      - host: upstream.test
        port: 80
        allowed_ips: ["198.51.100.0/24"]
        protocol: json-rpc
        rules:
          - allow: { method: a }
      - host: other.test
        port: 9100
        allowed_ips: ["198.51.100.0/24"]
        protocol: mcp
        rules:
          - allow: { method: tools/list }
          - allow: { method: notifications/progress }
    binaries:
      - { path: "/usr/bin/python3*" }
"""


def test_jsonrpc_and_mcp_under_leak_checker(upstream, monkeypatch):
    """JSON-RPC calls allowed, denied, batched, malformed and over the cap,
    and MCP answers judged (events split across reads, dropped events, a
    forbidden JSON answer): no leak or memory error."""
    if not os.access(SAN_BIN, os.X_OK):
        pytest.fail(f"sanitizer build missing: {SAN_BIN} (make build-san)")
    fake = subprocess.Popen(["ip", "netns", "exec", upstream.ns, "/usr/bin/python3",
                             os.path.join(build.TESTS, "integration", "mcp_fake_server.py"),
                             proxy_util.UPSTREAM_IP, "9100"], stdout=subprocess.PIPE, text=True)
    assert fake.stdout.readline().strip() == "ready"
    monkeypatch.setattr(proxy_util, "PROXY_BIN", SAN_BIN)
    monkeypatch.setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=23")
    p = Proxy(upstream, RPC_POLICY)

    def post(host, path, body, extra=b""):
        return p.raw(b"POST http://%s%s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (host, path, host, extra, len(body), body))

    try:
        for _ in range(10):
            assert post(b"upstream.test", b"/", b'{"jsonrpc":"2.0","id":1,"method":"a"}'
                        ).startswith(b"HTTP/1.1 200")
            assert post(b"upstream.test", b"/", b'[{"jsonrpc":"2.0","id":1,"method":"a"},'
                        b'{"jsonrpc":"2.0","id":2,"method":"b"}]').startswith(b"HTTP/1.1 403")
            assert post(b"upstream.test", b"/", b'{"jsonrpc":"2.0","id":1,"id":1}'
                        ).startswith(b"HTTP/1.1 403")
            assert post(b"upstream.test", b"/", b"{" * 70000).startswith(b"HTTP/1.1 413")
            p.raw(b"POST http://upstream.test/ HTTP/1.1\r\nHost: upstream.test\r\n"
                  b"Content-Length: 100\r\n\r\n{\"jsonrpc\"")  # abandoned mid-body
            for path in (b"/sse-split", b"/sse-type", b"/sse-bad", b"/json-smuggle",
                         b"/json-ok"):
                post(b"other.test:9100", path, b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                     b"Accept: application/json, text/event-stream\r\n")
    finally:
        err = proxy_util.stop_sanitized(p, timeout=30)
        fake.kill()
        fake.wait()
    proxy_util.assert_sanitizer_clean(p, err)
