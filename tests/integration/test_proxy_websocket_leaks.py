"""The proxy under AddressSanitizer + LeakSanitizer through WebSocket load:
allowed and denied messages from a real client over wss:// (compressed),
credential rewriting, compression bombs, every framing attack of test_proxy_websocket, and connections
abandoned mid-frame and mid-message: zero leak or memory-error reports when
it exits. Uses the sanitizer build (build-san) beside the normal one."""
import asyncio
import os
import socket

import pytest

from tests.lib import build, proxy_util
from tests.lib.proxy_util import Proxy

pytest.importorskip("websockets")
from test_proxy_websocket import (CREDS, POLICY, deflated, talk, tunnel,  # noqa: E402
                                  upstream)  # noqa: F401 (the fixture)
from tests.integration.ws_util import BINARY, CONT, PING, TEXT, RawWs, frame  # noqa: E402

pytestmark = build.needs("openshell-proxy")

SAN_BIN = proxy_util.SAN_PROXY_BIN
BOMB = deflated(b"\0" * (16 << 20))


def attacks(p):
    for bad in (frame(TEXT, b"x", mask=False), frame(TEXT, b"", length=2 << 20),
                frame(PING, b"p", fin=False), frame(TEXT, b"\xc3"), frame(TEXT, b"z", rsv=0x40)):
        ws = RawWs(p, "/chat")
        ws.send(frame(TEXT, b"ok"), bad)
        ws.close_code()
    ws = RawWs(p, "/other")
    ws.send(frame(TEXT, b"de", fin=False), frame(CONT, b"nied"))
    ws.close_code()
    offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n"
    for bad in (BOMB, b"\xff\xff\xff\xff"):
        ws = RawWs(p, "/chat", extra=offer)
        ws.send(frame(TEXT, deflated(b"ok"), rsv=0x40), frame(TEXT, bad, rsv=0x40))
        ws.close_code()
    # abandoned: mid-text message, mid-binary frame, mid-head
    for tail in (frame(TEXT, b"a" * 5000, fin=False), frame(BINARY, b"b" * 70000)[:30000],
                 frame(TEXT, b"c" * 300)[:3]):
        ws = RawWs(p, "/chat")
        ws.send(tail)
        ws.close()


def test_websocket_load_under_leak_checker(upstream, monkeypatch):
    if not os.access(SAN_BIN, os.X_OK):
        pytest.fail(f"sanitizer build missing: {SAN_BIN} (make build-san)")
    monkeypatch.setattr(proxy_util, "PROXY_BIN", SAN_BIN)
    monkeypatch.setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=23")
    p = Proxy(upstream, POLICY, credentials=CREDS)
    try:
        for _ in range(5):
            got, _ = asyncio.run(talk(tunnel(p), p.ca, "/chat", ["hello", "x" * 200000]))
            assert got == ["hello", "x" * 200000]
            assert asyncio.run(talk(tunnel(p), p.ca, "/other", ["no"]))[1] == 1008
            got, _ = asyncio.run(talk(tunnel(p, "creds.test"), p.ca, "/chat",
                                      ["openshell:resolve:env:WS_TOKEN"], host="creds.test"))
            assert got == ["*" * len("s3cr3t-ws-token")]
            attacks(p)
        idle = [socket.create_connection(("127.0.0.1", p.port)) for _ in range(10)]
    finally:
        err = proxy_util.stop_sanitized(p)
        for s in locals().get("idle", []):
            s.close()
    proxy_util.assert_sanitizer_clean(p, err)
