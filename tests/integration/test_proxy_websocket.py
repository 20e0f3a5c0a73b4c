"""protocol: websocket through openshell-proxy, against real WebSocket
servers (python3-websockets) in the upstream namespace. A real client
(websockets) over wss:// through the TLS termination; hand-made frames over
ws:// for the attacks, each beside its positive control. What reached the
server is read from the server's own log."""
import asyncio
import ssl
import time
import zlib

import pytest

from tests.lib import build

websockets = pytest.importorskip("websockets")  # python3-websockets (install-deps)
from tests.integration import ws_agent  # noqa: E402 (needs websockets)
from tests.integration.ws_util import (BINARY, CLOSE, CONT, PING, PONG, TEXT,  # noqa: E402
                                       TLS_PORT, RawWs, frame, ws_module_fixtures)
pytestmark = build.needs("openshell-proxy")

POLICY = """
version: 1
network_policies:
  chat:
    endpoints:
      - host: upstream.test
        ports: [9001, 9443]
        allowed_ips: ["198.51.100.0/24"]
        protocol: websocket
        rules:
          - allow: { method: GET, path: "/**" }
          - allow: { method: WEBSOCKET_TEXT, path: /chat }
          - allow: { method: WEBSOCKET_TEXT, path: /rooms, query: { room: "ok-*" } }
        deny_rules:
          - { method: GET, path: /forbidden }
      - host: api.test
        port: 9001
        allowed_ips: ["198.51.100.0/24"]
        protocol: websocket
        enforcement: audit
        rules:
          - allow: { method: GET, path: "/**" }
      - host: creds.test
        ports: [9001, 9443]
        allowed_ips: ["198.51.100.0/24"]
        protocol: websocket
        credential_binding: { provider: chatsvc }
        websocket_credential_rewrite: true
        access: full
    binaries:
      - { path: "/usr/bin/python3*" }
"""
CREDS = {"providers": {"chatsvc": {"WS_TOKEN": "s3cr3t-ws-token"},
                       "other": {"OTHER_KEY": "other-secret"}}}


upstream, proxy, clean_log = ws_module_fixtures(POLICY, credentials=CREDS)


def tunnel(proxy, host="upstream.test"):
    return ws_agent.tunnel("127.0.0.1", proxy.port, host, TLS_PORT)


async def talk(sock, ca, path, sends, direct=False, host="upstream.test"):
    """The real client over wss://, through the proxy (or direct)."""
    ctx = ssl.create_default_context(cafile=ca)
    if direct:
        ctx.check_hostname = False
    uri = f"wss://{'198.51.100.10' if direct else host}:{TLS_PORT}{path}"
    return await ws_agent.talk(sock, ctx, uri, sends, host=host)


def test_real_client_over_wss_allowed_message_echoed(proxy, upstream):
    got, code = asyncio.run(talk(tunnel(proxy), proxy.ca, "/chat", ["hello", "second"]))
    assert got == ["hello", "second"] and code is None
    assert [m["data"] for m in upstream.ws.messages("/chat")] == ["hello", "second"]
    rec = proxy.last_audit(event="websocket", method="WEBSOCKET_TEXT")
    assert rec and rec["decision"] == "allow" and rec["path"] == "/chat"


def test_real_client_denied_message_closed_with_1008(proxy, upstream):
    got, code = asyncio.run(talk(tunnel(proxy), proxy.ca, "/other", ["not allowed here"]))
    assert got == [] and code == 1008
    assert upstream.ws.messages("/other") == []
    assert upstream.ws.wait("open", "/other")  # the upgrade went
    rec = proxy.last_audit(event="websocket", decision="deny")
    assert rec and rec["method"] == "WEBSOCKET_TEXT" and rec["reason"] == "no_matching_rule"


def test_permessage_deflate_negotiated_so_each_message_can_be_judged(proxy, upstream):
    # directly, the client and server agree on deflate as they like
    got, _ = asyncio.run(talk(None, f"{upstream.dir}/ca.pem", "/chat", ["x"], direct=True))
    assert got == ["x"]
    direct = upstream.ws.wait("open", "/chat")[-1]
    assert direct["extensions"] == ["PerMessageDeflate"]
    assert "client_no_context_takeover" not in direct["offered"]
    upstream.ws.clear()
    # through the proxy: still deflate, but every client message on its own
    text = "compressible " * 2000
    got, code = asyncio.run(talk(tunnel(proxy), proxy.ca, "/chat", ["x", text]))
    assert got == ["x", text] and code is None
    proxied = upstream.ws.wait("open", "/chat")[-1]
    assert proxied["extensions"] == ["PerMessageDeflate"]
    assert "client_no_context_takeover" in proxied["offered"]
    # judged on the decompressed text
    got, code = asyncio.run(talk(tunnel(proxy), proxy.ca, "/other", [text]))
    assert got == [] and code == 1008
    assert [m["len"] for m in upstream.ws.messages()] == [1, len(text)]


def deflated(data):
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\0\0\xff\xff")
    return out[:-4]


def test_compressed_messages_inspected_and_capped(proxy, upstream):
    offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n"
    ws = RawWs(proxy, "/chat", extra=offer)
    assert ws.status == 101
    assert "client_no_context_takeover" in ws.head  # the proxy asked for it
    ws.send(frame(TEXT, deflated(b"hello"), rsv=0x40))  # positive control
    fin, op, payload = ws.recv()
    assert op == TEXT and zlib.decompressobj(-15).decompress(payload + b"\0\0\xff\xff") == b"hello"
    # a bomb: 64 MiB of zeros in a small frame, over the 1 MiB text cap once inflated
    bomb = deflated(b"\0" * (64 * 1024 * 1024))
    assert len(bomb) < 128 * 1024
    ws.send(frame(TEXT, bomb, rsv=0x40))
    assert ws.close_code() == ([], 1009)
    # data that does not inflate
    ws = RawWs(proxy, "/chat", extra=offer)
    ws.send(frame(TEXT, b"\xff\xff\xff\xff", rsv=0x40))
    assert ws.close_code() == ([], 1007)
    # a denied message, compressed and split across fragments
    ws = RawWs(proxy, "/other", extra=offer)
    z = deflated(b"denied once inflated")
    ws.send(frame(TEXT, z[:5], fin=False, rsv=0x40), frame(CONT, z[5:]))
    assert ws.close_code() == ([], 1008)
    assert [m["data"] for m in upstream.ws.messages()] == ["hello"]


def test_upgrade_judged_as_rest(proxy, upstream):
    ws = RawWs(proxy, "/forbidden")
    assert ws.status == 403
    ok = RawWs(proxy, "/chat")
    assert ok.status == 101 and "sec-websocket-accept" in ok.head.lower()
    bad = RawWs(proxy, "/chat", version="8")
    assert bad.status == 400 and "Sec-WebSocket-Version" in bad.buf.decode()
    assert [r["path"] for r in upstream.ws.wait("open", "/chat")] == ["/chat"]
    assert not [r for r in upstream.ws.records("open") if r["path"] == "/forbidden"]


def test_query_of_the_upgrade_is_matched(proxy, upstream):
    ws = RawWs(proxy, "/rooms?room=ok-1")
    ws.send(frame(TEXT, b"in the room"))
    assert ws.recv() == (True, TEXT, b"in the room")
    ws = RawWs(proxy, "/rooms?room=secret")
    ws.send(frame(TEXT, b"in the wrong room"))
    assert ws.close_code() == ([], 1008)
    assert [m["data"] for m in upstream.ws.messages()] == ["in the room"]


def test_unmasked_client_frame_is_a_protocol_error(proxy, upstream):
    RawWs(proxy, "/chat").echoed_then_closed((TEXT, b"masked"),
                                             (TEXT, b"unmasked", {"mask": False}), 1002)
    assert [m["data"] for m in upstream.ws.messages()] == ["masked"]


def test_oversized_frames_close_with_1009(proxy, upstream):
    big = b"a" * (512 * 1024)
    ws = RawWs(proxy, "/chat")
    ws.send(frame(TEXT, big))  # under the 1 MiB cap: positive control
    assert ws.recv() == (True, TEXT, big)
    ws.send(frame(TEXT, b"x" * 1000, length=2 * 1024 * 1024))  # declared too big
    assert ws.close_code() == ([], 1009)
    # the cap holds for a message spread over fragments too
    ws = RawWs(proxy, "/chat")
    ws.send(frame(TEXT, big, fin=False), frame(CONT, big, fin=False))
    ws.send(frame(CONT, b"over", fin=True))
    assert ws.close_code() == ([], 1009)
    ws = RawWs(proxy, "/other")
    ws.send(frame(BINARY, b"", length=17 * 1024 * 1024))
    assert ws.close_code() == ([], 1009)
    assert [m["len"] for m in upstream.ws.messages()] == [len(big)]


def test_fragmented_or_large_control_frames_refused(proxy, upstream):
    RawWs(proxy, "/chat").echoed_then_closed((PING, b"p1"), (PING, b"p2", {"fin": False}),
                                             1002)
    ws = RawWs(proxy, "/chat")
    ws.send(frame(PING, b"p" * 126))
    assert ws.close_code() == ([], 1002)


def test_denied_message_split_across_fragments(proxy, upstream):
    ws = RawWs(proxy, "/chat")  # positive control: allowed, reassembled
    ws.send(frame(TEXT, b"hel", fin=False), frame(CONT, b"lo"))
    assert ws.recv() == (True, TEXT, b"hello")
    ws = RawWs(proxy, "/other")
    ws.send(frame(TEXT, b"den", fin=False))
    ws.send(frame(CONT, b"ied", fin=True))
    assert ws.close_code() == ([], 1008)
    assert [m["data"] for m in upstream.ws.messages()] == ["hello"]


def test_interleaved_control_frames(proxy, upstream):
    ws = RawWs(proxy, "/chat")
    ws.send(frame(TEXT, b"he", fin=False), frame(PING, b"mid"), frame(CONT, b"llo"))
    assert ws.recv() == (True, PONG, b"mid")
    assert ws.recv() == (True, TEXT, b"hello")
    # a new data frame inside a fragmented message is not interleaving
    ws.send(frame(TEXT, b"a", fin=False), frame(TEXT, b"b"))
    assert ws.close_code() == ([], 1002)
    assert [m["data"] for m in upstream.ws.messages()] == ["hello"]


def test_compressed_frame_without_negotiation_refused(proxy, upstream):
    bomb = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = bomb.compress(b"\0" * (64 * 1024 * 1024)) + bomb.flush(zlib.Z_SYNC_FLUSH)
    assert len(data) < 128 * 1024  # a bomb: a small frame, a huge message
    ws = RawWs(proxy, "/chat")  # no extension offered: RSV1 means nothing
    assert ws.status == 101 and "sec-websocket-extensions" not in ws.head.lower()
    ws.send(frame(TEXT, b"plain"))
    assert ws.recv() == (True, TEXT, b"plain")  # positive control
    ws.send(frame(TEXT, data[:-4], rsv=0x40))
    assert ws.close_code() == ([], 1002)
    assert [m["data"] for m in upstream.ws.messages()] == ["plain"]


def test_invalid_utf8_closes_with_1007(proxy, upstream):
    RawWs(proxy, "/chat").echoed_then_closed((TEXT, "é".encode()), (TEXT, b"\xc3"), 1007)


def test_close_frame_waits_for_the_servers_frame_boundary(proxy, upstream):
    # Binary messages pass uninspected (as upstream). "split" makes the
    # server write one large frame in two halves; the message denied while
    # its first half is out must close only after the frame, whole.
    blob = bytes(range(256)) * 1200
    ws = RawWs(proxy, "/other")
    ws.send(frame(BINARY, b"split"))
    while len(ws.buf) < 1000:  # the first half is arriving
        ws.buf += ws.s.recv(65536)
    ws.send(frame(TEXT, b"denied"))
    seen, code = ws.close_code()
    assert code == 1008 and seen == [(True, BINARY, blob)]


def test_client_close_handshake_is_relayed(proxy, upstream):
    ws = RawWs(proxy, "/chat")
    ws.send(frame(CLOSE, b"\x03\xe8bye"))
    assert ws.close_code() == ([], 1000)
    closed = upstream.ws.wait("close", "/chat")
    assert closed and closed[-1]["code"] == 1000
    ws = RawWs(proxy, "/chat")
    ws.send(frame(CLOSE, b"\x03\xed"))  # 1005 may not be sent
    assert ws.close_code() == ([], 1002)


PH = "openshell:resolve:env:"


def test_placeholders_resolved_only_where_the_endpoint_says(proxy, upstream):
    msg = f'{{"auth": "{PH}WS_TOKEN"}}'
    got, code = asyncio.run(talk(tunnel(proxy, "creds.test"), proxy.ca, "/chat", [msg],
                                 host="creds.test"))
    # the server received the secret; its echo reached the agent masked (no
    # compression toward a credential endpoint: it would hide the echo)
    assert [m["data"] for m in upstream.ws.messages()] == ['{"auth": "s3cr3t-ws-token"}']
    assert upstream.ws.wait("open", "/chat")[-1]["extensions"] == []
    assert code is None and got == ['{"auth": "' + "*" * len("s3cr3t-ws-token") + '"}']
    upstream.ws.clear()
    # positive control: an endpoint without websocket_credential_rewrite
    # forwards the placeholder as written, never the secret
    got, code = asyncio.run(talk(tunnel(proxy), proxy.ca, "/chat", [msg]))
    assert got == [msg] and [m["data"] for m in upstream.ws.messages()] == [msg]


@pytest.mark.parametrize("text,reason", [
    (f"{PH}OTHER_KEY", "credential_endpoint_mismatch"),  # another provider's secret
    (f"{PH}NO_SUCH_KEY", "credential_unknown"),
])
def test_unresolvable_placeholder_closes_without_sending(proxy, upstream, text, reason):
    got, code = asyncio.run(talk(tunnel(proxy, "creds.test"), proxy.ca, "/chat",
                                 ["fine", text], host="creds.test"))
    assert got == ["fine"] and code == 1008
    assert [m["data"] for m in upstream.ws.messages()] == ["fine"]
    assert proxy.last_audit(event="websocket", decision="deny")["reason"] == reason


def test_placeholders_never_resolved_over_plain_ws(proxy, upstream):
    ws = RawWs(proxy, "/chat", host="creds.test")
    ws.send(frame(TEXT, b"no placeholder"))
    assert ws.recv() == (True, TEXT, b"no placeholder")  # positive control
    ws.send(frame(TEXT, f"{PH}WS_TOKEN".encode()))
    assert ws.close_code() == ([], 1008)
    assert [m["data"] for m in upstream.ws.messages()] == ["no placeholder"]
    assert proxy.last_audit(event="websocket", decision="deny")["reason"] == "credential_plaintext"


def test_audit_enforcement_forwards_and_records(proxy, upstream):
    ws = RawWs(proxy, "/anything", host="api.test")
    ws.send(frame(TEXT, b"would be denied"))
    assert ws.recv() == (True, TEXT, b"would be denied")
    rec = proxy.last_audit(event="websocket", method="WEBSOCKET_TEXT", host="api.test")
    assert rec and rec["decision"] == "audit" and rec["reason"] == "no_matching_rule"
    # framing is enforced whatever the enforcement
    ws.send(frame(TEXT, b"x", mask=False))
    assert ws.close_code() == ([], 1002)


def test_open_websocket_is_judged_by_a_reloaded_policy(proxy, upstream):
    """An open WebSocket does not keep the decision of its upgrade: after a
    policy update its next message is judged by the new policy (as the next
    request of a kept-alive REST connection is), and a connection whose
    upgrade the new policy refuses ends with 1008 at its next message, binary
    ones included. A connection the new policy still allows goes on."""
    text_gone = POLICY.replace("          - allow: { method: WEBSOCKET_TEXT, path: /chat }\n", "")
    updated = text_gone.replace("          - { method: GET, path: /forbidden }\n",
                                "          - { method: GET, path: /forbidden }\n"
                                "          - { method: GET, path: /bin }\n")
    assert updated != text_gone != POLICY
    chat, binary, rooms = RawWs(proxy, "/chat"), RawWs(proxy, "/bin"), \
        RawWs(proxy, "/rooms?room=ok-1")
    chat.send(frame(TEXT, b"before"))
    assert chat.recv() == (True, TEXT, b"before")
    binary.send(frame(BINARY, b"\x00before"))
    assert binary.recv() == (True, BINARY, b"\x00before")
    loaded = len([r for r in proxy.audit_records() if r.get("reason") == "policy_loaded"])
    try:
        proxy.set_policy(updated)
        proxy.reload()
        for _ in range(100):
            if len([r for r in proxy.audit_records()
                    if r.get("reason") == "policy_loaded"]) > loaded:
                break
            time.sleep(0.02)
        else:
            pytest.fail("the policy update was not recorded")
        rooms.send(frame(TEXT, b"still-allowed"))  # positive control
        assert rooms.recv() == (True, TEXT, b"still-allowed")
        chat.send(frame(TEXT, b"after"))
        assert chat.close_code() == ([], 1008)
        rec = proxy.last_audit(event="websocket", decision="deny", path="/chat")
        assert rec and rec["reason"] == "no_matching_rule", rec
        binary.send(frame(BINARY, b"\x00after"))
        assert binary.close_code() == ([], 1008)
        rec = proxy.last_audit(event="websocket", decision="deny", path="/bin")
        assert rec and "upgrade no longer allowed" in rec.get("detail", ""), rec
    finally:
        proxy.set_policy(POLICY)
        proxy.reload()
        time.sleep(0.3)
    got = [m["data"] for m in upstream.ws.messages()]
    assert "after" not in got and "still-allowed" in got and "before" in got, got
    assert [m["data"] for m in upstream.ws.messages("/bin")] == [b"\x00before".hex()]
