"""WebSocket messages beyond the WEBSOCKET_TEXT rule, through openshell-proxy
against real WebSocket servers (python3-websockets): network_middlewares on
client text messages (openshell/regex redacts `sk-` keys after the policy's
judgement and before the message leaves, whole messages only: reassembled
from fragments, decompressed and re-compressed), and GraphQL over WebSocket
(graphql-transport-ws / graphql-ws messages on a websocket endpoint whose
rules name GraphQL operations, judged by those rules with the HTTP GraphQL
parser). Real clients where a library sends what is tested; hand-made frames
for the attacks, each beside its positive control. What reached the server
is read from the server's own log."""
import asyncio
import json
import ssl
import zlib

import pytest

from tests.lib import build

websockets = pytest.importorskip("websockets")  # python3-websockets (install-deps)
from tests.integration import ws_agent  # noqa: E402 (needs websockets)
from tests.integration.ws_util import (BINARY, CONT, TEXT, TLS_PORT, RawWs,  # noqa: E402
                                       frame, ws_module_fixtures)
pytestmark = build.needs("openshell-proxy")

KEY = "sk-" + "A1b2_C3d4-E5f6G7h8I9"
HASH = "a" * 64  # a registered persisted query
NET = '["198.51.100.0/24"]'
WS_RULES = """
        rules:
          - allow: { method: GET, path: "/**" }
          - allow: { method: WEBSOCKET_TEXT, path: /chat }"""
GQL_RULES = """
        rules:
          - allow: { method: GET, path: "/graphql**" }
          - allow: { method: WEBSOCKET_TEXT, path: "/**" }
          - allow: { operation_type: query, fields: [viewer] }
          - allow: { operation_type: subscription, fields: [messageAdded] }
        deny_rules:
          - { operation_type: query, fields: [adminAuditLog] }
          - { method: WEBSOCKET_TEXT, path: /graphql/admin }
        persisted_queries: allow_registered
        graphql_persisted_queries:
          "%s": { operation_type: query, fields: [viewer] }""" % HASH
POLICY = f"""
version: 1
network_middlewares:
  redactor:
    middleware: openshell/regex
    order: 10
    endpoints: {{ include: [upstream.test, gql.test, creds.test] }}
  lenient:
    middleware: openshell/regex
    order: 20
    on_error: fail_open
    endpoints: {{ include: [lenient.test] }}
network_policies:
  chat:
    endpoints:
      - host: upstream.test
        ports: [9001, 9443]
        allowed_ips: {NET}
        protocol: websocket{WS_RULES}
      - host: lenient.test
        port: 9001
        allowed_ips: {NET}
        protocol: websocket{WS_RULES}
      - host: plain.test
        port: 9001
        allowed_ips: {NET}
        protocol: websocket{WS_RULES}
      - host: gql.test
        ports: [9001, 9443]
        allowed_ips: {NET}
        protocol: websocket{GQL_RULES}
      - host: creds.test
        port: 9443
        allowed_ips: {NET}
        protocol: websocket
        access: full
        credential_binding: {{ provider: chatsvc }}
        websocket_credential_rewrite: true
      - host: gql-audit.test
        port: 9001
        allowed_ips: {NET}
        protocol: websocket
        enforcement: audit{GQL_RULES}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


SECRET = "sk-" + "S3cr3t" * 4  # shaped like the pattern: only the placeholder carries it
upstream, proxy, clean_log = ws_module_fixtures(
    POLICY, credentials={"providers": {"chatsvc": {"WS_KEY": SECRET}}})


def arrived(upstream, path=None):
    return [m["data"] for m in upstream.ws.messages(path)]


def deflated(data):
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)
    return out[:-4]


def inflated(data, d=None):
    """One message; d: the server's decoder (it may keep its context)."""
    return (d or zlib.decompressobj(-15)).decompress(data + b"\0\0\xff\xff")


def talk(proxy, host, path, sends, subprotocols=None):
    """A real client over wss:// through the proxy's CONNECT and TLS."""
    sock = ws_agent.tunnel("127.0.0.1", proxy.port, host, TLS_PORT)
    ctx = ssl.create_default_context(cafile=proxy.ca)
    return ws_agent.talk(sock, ctx, f"wss://{host}:{TLS_PORT}{path}", sends, host=host,
                         subprotocols=subprotocols)


# --- network_middlewares on client text messages ---


def test_real_client_key_redacted_before_it_leaves(proxy, upstream):
    msg = json.dumps({"note": f"use {KEY} twice {KEY}"})
    got, code = asyncio.run(talk(proxy, "upstream.test", "/chat", [msg, "no key"]))
    want = msg.replace(KEY, "[REDACTED]")
    assert code is None and got == [want, "no key"]  # the echo of what arrived
    assert arrived(upstream) == [want, "no key"]
    rec = proxy.last_audit(event="middleware", reason="middleware_redacted")
    assert rec and "2 matches replaced in a WebSocket" in rec["detail"]
    assert KEY not in json.dumps(proxy.audit_records())


def test_hosts_the_selector_does_not_take_are_untouched(proxy, upstream):
    ws = RawWs(proxy, "/chat", host="plain.test")
    ws.send(frame(TEXT, f"k={KEY}".encode()))
    assert ws.recv() == (True, TEXT, f"k={KEY}".encode())
    assert arrived(upstream) == [f"k={KEY}"]


def test_key_split_across_fragments_still_redacted(proxy, upstream):
    text = f"k={KEY}".encode()
    for host, want in (("plain.test", text), ("upstream.test", b"k=[REDACTED]")):
        ws = RawWs(proxy, "/chat", host=host)  # plain.test: the positive control
        ws.send(frame(TEXT, text[:6], fin=False), frame(CONT, text[6:14], fin=False),
                frame(CONT, text[14:]))
        assert ws.recv() == (True, TEXT, want)
    assert arrived(upstream) == [text.decode(), "k=[REDACTED]"]


def test_compressed_message_redacted_and_compressed_again(proxy, upstream):
    offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n"
    ws = RawWs(proxy, "/chat", extra=offer)
    assert ws.status == 101 and "permessage-deflate" in ws.head
    ws.send(frame(TEXT, deflated(b"nothing here"), rsv=0x40))  # positive control
    server = zlib.decompressobj(-15)
    fin, op, payload = ws.recv()
    assert inflated(payload, server) == b"nothing here"
    z = deflated(f"{KEY} {'padding ' * 500}{KEY}".encode())
    ws.send(frame(TEXT, z[:7], fin=False, rsv=0x40), frame(CONT, z[7:]))
    fin, op, payload = ws.recv()  # the server's echo of what it received
    want = f"[REDACTED] {'padding ' * 500}[REDACTED]"
    assert op == TEXT and inflated(payload, server).decode() == want
    assert arrived(upstream) == ["nothing here", want[:200]]
    assert [m["len"] for m in upstream.ws.messages()][1] == len(want)


def test_message_over_the_middleware_limit_fails_closed(proxy, upstream):
    big = ("x" * (300 * 1024) + KEY).encode()  # under the 1 MiB text cap
    ws = RawWs(proxy, "/chat", host="plain.test")  # positive control: no middleware
    ws.send(frame(TEXT, big))
    assert ws.recv() == (True, TEXT, big)
    ws = RawWs(proxy, "/chat")
    ws.send(frame(TEXT, b"small"))
    assert ws.recv() == (True, TEXT, b"small")
    ws.send(frame(TEXT, big))
    assert ws.close_code() == ([], 1008)
    assert [m["len"] for m in upstream.ws.messages()] == [len(big), 5]
    rec = proxy.last_audit(event="middleware", decision="deny")
    assert rec and rec["reason"] == "middleware_failed" and "262144" in rec["detail"]


def test_fail_open_stage_disabled_for_the_rest_of_the_connection(proxy, upstream):
    ws = RawWs(proxy, "/chat", host="lenient.test")
    ws.send(frame(TEXT, f"before {KEY}".encode()))
    assert ws.recv() == (True, TEXT, b"before [REDACTED]")  # positive control
    big = ("x" * (300 * 1024) + KEY).encode()
    ws.send(frame(TEXT, big))
    assert ws.recv() == (True, TEXT, big)  # forwarded as it came
    ws.send(frame(TEXT, f"after {KEY}".encode()))
    assert ws.recv() == (True, TEXT, f"after {KEY}".encode())  # upstream: stage disabled
    rec = proxy.last_audit(event="middleware", reason="middleware_failed_open")
    assert rec and "disabled for the rest" in rec["detail"]
    ws = RawWs(proxy, "/chat", host="lenient.test")  # a new connection redacts again
    ws.send(frame(TEXT, f"new {KEY}".encode()))
    assert ws.recv() == (True, TEXT, b"new [REDACTED]")


def test_middleware_runs_before_credentials_are_resolved(proxy, upstream):
    # upstream's order: the middleware never sees the secret a placeholder
    # stands for, so it cannot redact it; a key the agent wrote itself it does
    msg = json.dumps({"auth": "openshell:resolve:env:WS_KEY", "leak": KEY})
    got, code = asyncio.run(talk(proxy, "creds.test", "/chat", [msg]))
    assert code is None and len(got) == 1
    [m] = upstream.ws.messages()
    assert m["data"] == json.dumps({"auth": SECRET, "leak": "[REDACTED]"})
    assert SECRET not in got[0]  # the echo is scrubbed of the secret


def test_binary_messages_are_not_inspected(proxy, upstream):
    # upstream: binary messages pass under both on_error modes, recorded
    ws = RawWs(proxy, "/chat")
    ws.send(frame(BINARY, KEY.encode()))
    assert ws.recv() == (True, BINARY, KEY.encode())
    rec = proxy.last_audit(event="middleware", reason="unsupported_message_type")
    assert rec and rec["method"] == "WEBSOCKET_BINARY" and "redactor" in rec["detail"]


# --- GraphQL over WebSocket ---


def sub(query, typ="subscribe", mid="1", **extra):
    return json.dumps({"type": typ, "id": mid, "payload": {"query": query, **extra}})


def test_real_graphql_transport_ws_client(proxy, upstream):
    init = json.dumps({"type": "connection_init", "payload": {}})
    ok = sub("subscription OnMsg { messageAdded }")
    got, code = asyncio.run(talk(proxy, "gql.test", "/graphql", [init, ok],
                                 subprotocols=["graphql-transport-ws"]))
    assert code is None and got == [init, ok]
    denied = sub("query Admin { adminAuditLog }", mid="2")
    got, code = asyncio.run(talk(proxy, "gql.test", "/graphql", [init, denied],
                                 subprotocols=["graphql-transport-ws"]))
    assert got == [init] and code == 1008
    assert arrived(upstream) == [init, ok, init]
    rec = proxy.last_audit(event="websocket", decision="deny")
    assert rec and rec["reason"] == "deny_rule" and "graphql_ws_type=subscribe" in rec["detail"]
    assert proxy.last_audit(event="graphql", decision="allow")["method"] == \
        "subscribe subscription OnMsg"


@pytest.mark.parametrize("good,bad", [
    # an alias does not hide the root field it selects
    ("query { me: viewer }", "query { viewer: adminAuditLog }"),
    # nor does a fragment, named or inline
    ("query { ...F } fragment F on Query { viewer }",
     "query { ...F } fragment F on Query { adminAuditLog }"),
    ("query { viewer }", "query { ... on Query { adminAuditLog } }"),
    # a field no rule allows, and an operation type no rule allows
    ("query { viewer }", "query { viewer billing }"),
    ("subscription { messageAdded }", "mutation { messageAdded }"),
])
def test_hidden_or_unlisted_fields_closed(proxy, upstream, good, bad):
    ws = RawWs(proxy, "/graphql", host="gql.test")
    ws.send(frame(TEXT, sub(good).encode()))
    assert ws.recv() == (True, TEXT, sub(good).encode())
    ws.send(frame(TEXT, sub(bad, mid="2").encode()))
    assert ws.close_code() == ([], 1008)
    assert arrived(upstream) == [sub(good)]


def test_denied_operation_split_across_fragments_and_compressed(proxy, upstream):
    offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n"
    good, bad = sub("{ viewer }").encode(), sub("{ adminAuditLog }").encode()
    ws = RawWs(proxy, "/graphql", host="gql.test", extra=offer)
    z = deflated(good)
    ws.send(frame(TEXT, z[:4], fin=False, rsv=0x40), frame(CONT, z[4:]))
    assert inflated(ws.recv()[2]) == good  # positive control
    ws.send(frame(TEXT, bad[:30], fin=False), frame(CONT, bad[30:]))
    assert ws.close_code() == ([], 1008)
    ws = RawWs(proxy, "/graphql", host="gql.test", extra=offer)
    z = deflated(bad)
    ws.send(frame(TEXT, z[:4], fin=False, rsv=0x40), frame(CONT, z[4:]))
    assert ws.close_code() == ([], 1008)
    assert arrived(upstream) == [good.decode()]


@pytest.mark.parametrize("bad", [
    '{"type":"ping","type":"subscribe","id":"1","payload":{"query":"{ adminAuditLog }"}}',
    '{"type":"subscribe","id":"1","payload":{"query":"{ viewer }"},'
    '"payload":{"query":"{ adminAuditLog }"}}',
    '{"type":"next","id":"1","payload":{}}',  # a server's message type
    '{"type":"subscribe","payload":{"query":"{ viewer }"}}',  # no id
    '{"type":"subscribe","id":"1","payload":"{ viewer }"}',  # payload not an object
    '{"type":"subscribe","id":"1","payload":{"query":"{ viewer }","extra":1}}',
    '["subscribe"]',
    'not json',
])
def test_messages_the_rules_cannot_judge_are_refused(proxy, upstream, bad):
    ws = RawWs(proxy, "/graphql", host="gql.test")
    ws.send(frame(TEXT, b'{"type":"ping"}'))  # positive control: a control message
    assert ws.recv() == (True, TEXT, b'{"type":"ping"}')
    ws.send(frame(TEXT, bad.encode()))
    assert ws.close_code() == ([], 1008)
    assert arrived(upstream) == ['{"type":"ping"}']
    rec = proxy.last_audit(event="websocket", decision="deny")
    assert rec and rec["reason"] == "graphql_invalid"


def test_binary_message_cannot_carry_an_operation_past_the_rules(proxy, upstream):
    # graphql-ws servers read a binary message as its text: refused here
    ws = RawWs(proxy, "/graphql", host="gql.test")
    ws.send(frame(TEXT, sub("{ viewer }").encode()))
    assert ws.recv()[1] == TEXT  # positive control: the same operation as text
    ws.send(frame(BINARY, sub("{ adminAuditLog }").encode()))
    assert ws.close_code() == ([], 1008)
    assert arrived(upstream) == [sub("{ viewer }")]
    assert proxy.last_audit(event="websocket", decision="deny")["reason"] == "graphql_ws_binary"


def test_legacy_graphql_ws_start_judged_too(proxy, upstream):
    ws = RawWs(proxy, "/graphql", host="gql.test")
    good = sub("{ viewer }", typ="start")
    ws.send(frame(TEXT, good.encode()))
    assert ws.recv() == (True, TEXT, good.encode())
    ws.send(frame(TEXT, sub("{ adminAuditLog }", typ="start", mid="2").encode()))
    assert ws.close_code() == ([], 1008)


def test_persisted_queries_by_registry(proxy, upstream):
    def pq(h):
        return json.dumps({"type": "subscribe", "id": "1", "payload": {
            "extensions": {"persistedQuery": {"version": 1, "sha256Hash": h}}}})
    ws = RawWs(proxy, "/graphql", host="gql.test")
    ws.send(frame(TEXT, pq(HASH).encode()))
    assert ws.recv() == (True, TEXT, pq(HASH).encode())
    ws.send(frame(TEXT, pq("b" * 64).encode()))
    assert ws.close_code() == ([], 1008)
    rec = proxy.last_audit(event="websocket", decision="deny")
    assert rec["reason"] == "graphql_persisted_query_unregistered"


def test_generic_rule_cannot_allow_and_rest_deny_rule_still_refuses(proxy, upstream):
    # `WEBSOCKET_TEXT /**` is allowed, yet a GraphQL message needs its own rule
    ws = RawWs(proxy, "/graphql/other", host="gql.test")
    ws.send(frame(TEXT, sub("{ viewer }").encode()))
    assert ws.recv()[1] == TEXT  # positive control
    ws.send(frame(TEXT, sub("{ billing }").encode()))
    assert ws.close_code() == ([], 1008)
    # a deny rule on the path refuses even an allowed operation
    ws = RawWs(proxy, "/graphql/admin", host="gql.test")
    ws.send(frame(TEXT, sub("{ viewer }").encode()))
    assert ws.close_code() == ([], 1008)
    assert proxy.last_audit(event="websocket", decision="deny")["reason"] == "deny_rule"
    assert arrived(upstream) == [sub("{ viewer }")]


def test_redaction_inside_an_operation_is_judged_again_and_sent(proxy, upstream):
    msg = sub(f'{{ viewer(token: "{KEY}") }}')
    ws = RawWs(proxy, "/graphql", host="gql.test")
    ws.send(frame(TEXT, msg.encode()))
    want = msg.replace(KEY, "[REDACTED]")
    assert ws.recv() == (True, TEXT, want.encode())
    assert arrived(upstream) == [want]


def test_audit_mode_forwards_denied_operations_not_unjudgeable_ones(proxy, upstream):
    ws = RawWs(proxy, "/graphql", host="gql-audit.test")
    bad = sub("{ adminAuditLog }")
    ws.send(frame(TEXT, bad.encode()))
    assert ws.recv() == (True, TEXT, bad.encode())
    rec = proxy.last_audit(event="graphql", host="gql-audit.test")
    assert rec and rec["decision"] == "audit"
    ws.send(frame(TEXT, b'{"type":"subscribe","id":"1"}'))
    assert ws.close_code() == ([], 1008)
    assert arrived(upstream) == [bad]
