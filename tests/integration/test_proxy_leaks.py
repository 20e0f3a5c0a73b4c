"""The proxy under AddressSanitizer + LeakSanitizer through a mixed load
(plain HTTP allowed and denied, a TLS-terminated exchange with a credential,
an L4 tunnel, smuggling attempts, abandoned connections): zero leak or
memory-error reports when it exits. Uses the sanitizer build (build-san)
that `make check` builds beside the normal one."""
import os
import signal
import socket
import subprocess

import pytest

from tests.lib import build, proxy_util
from tests.lib.proxy_util import Proxy, Upstream
from test_proxy import POLICY, SECRET

pytestmark = build.needs("openshell-proxy")

SAN_BIN = build.binary("openshell-proxy",
                       os.path.join(os.path.dirname(build.BUILD.rstrip("/")), "build-san"))


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
        p.proc.send_signal(signal.SIGTERM)
        _, err = p.proc.communicate(timeout=30)
        for s in locals().get("socks", []):
            s.close()
    assert "ERROR: LeakSanitizer" not in err, err[-4000:]
    assert "ERROR: AddressSanitizer" not in err, err[-4000:]
    assert "runtime error" not in err, err[-4000:]
    # Every state change the load made is one proxy_state.c allows.
    assert "unexpected state change" not in err, err[-4000:]
    assert p.proc.returncode == 0, err[-2000:]
