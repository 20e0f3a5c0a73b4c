"""JSON-RPC 2.0 endpoints (`protocol: json-rpc`) through the proxy, against
the echo upstream in the proxy test namespace: each call is judged by its
method, a batch as a whole, and the upstream's log proves that a refused
payload never reached it while its allowed control did. Refusals are HTTP
403 (as upstream OpenShell answers) with a JSON-RPC error per request id,
and each decision has its audit record."""
import json
import socket
import time

import pytest

from tests.lib import build
from tests.lib.proxy_util import Proxy, Upstream

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  reports:
    endpoints:
      - host: upstream.test
        port: 80
        allowed_ips: {NET}
        protocol: json-rpc
        path: /rpc
        json_rpc: {{ max_body_bytes: 2048 }}
        rules:
          - allow: {{ method: reports.list }}
          - allow: {{ method: reports.search }}
          - allow: {{ method: notify.seen }}
        deny_rules:
          - method: reports.search.all
      - host: api.test
        port: 80
        allowed_ips: {NET}
        protocol: json-rpc
        enforcement: audit
        rules:
          - allow: {{ method: reports.list }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


@pytest.fixture(scope="module")
def upstream():
    up = Upstream().start()
    yield up
    up.stop()


@pytest.fixture(scope="module")
def proxy(upstream):
    p = Proxy(upstream, POLICY)
    yield p
    p.stop()


@pytest.fixture(autouse=True)
def clean_log(upstream):
    upstream.clear()


def call(method, id_=1, params=None):
    m = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        m["id"] = id_
    if params is not None:
        m["params"] = params
    return m


def head(body, path="/rpc", host="upstream.test", method="POST", extra=""):
    return (f"{method} http://{host}{path} HTTP/1.1\r\nHost: {host}\r\n"
            f"Content-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()


def send(proxy, body, **kw):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    out = proxy.raw(head(body, **kw) + body)
    status = int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else 0
    hdrs, _, payload = out.partition(b"\r\n\r\n")
    return status, hdrs.decode("latin-1"), payload


def reached(upstream):
    return [q for q in upstream.requests() if q["path"].startswith("/rpc")]


def test_allowed_call_reaches_upstream_byte_for_byte(proxy, upstream):
    body = json.dumps(call("reports.list", 7, {"scope": "workspace/main"})).encode()
    status, _, _ = send(proxy, body)
    assert status == 200
    [q] = reached(upstream)
    assert q["method"] == "POST" and q["body"].encode() == body
    rec = proxy.last_audit(event="jsonrpc", method="reports.list")
    assert rec and rec["decision"] == "allow" and rec["policy"] == "reports"


def test_denied_call_answered_with_jsonrpc_error_and_audited(proxy, upstream):
    status, hdrs, payload = send(proxy, call("reports.delete", "req-9"))
    assert status == 403
    assert "X-OpenShell-Policy: reports" in hdrs
    err = json.loads(payload)
    assert err["jsonrpc"] == "2.0" and err["id"] == "req-9"
    assert err["error"]["code"] == -32001
    assert err["error"]["data"]["error"] == "policy_denied"
    assert err["error"]["data"]["method"] == "reports.delete"
    assert reached(upstream) == []
    rec = proxy.last_audit(event="jsonrpc", method="reports.delete")
    assert rec and rec["decision"] == "deny" and rec["reason"] == "no_matching_rule"


def test_deny_rule_wins_over_nothing_and_names_itself(proxy, upstream):
    status, _, payload = send(proxy, call("reports.search.all", 3))
    assert status == 403
    assert json.loads(payload)["error"]["data"]["rule"] == "deny_rules[0]"
    assert reached(upstream) == []


def test_batch_with_one_denied_call_sends_nothing(proxy, upstream):
    batch = [call("reports.list", 1), call("reports.delete", 2), call("notify.seen", None)]
    status, _, payload = send(proxy, batch)
    assert status == 403
    errs = json.loads(payload)
    assert [e["id"] for e in errs] == [1, 2]  # one error per request id; none for notifications
    assert errs[1]["error"]["code"] == -32001 and errs[0]["error"]["code"] == -32002
    assert reached(upstream) == []
    # positive control: the same batch without the denied call goes through whole
    status, _, _ = send(proxy, [call("reports.list", 1), call("notify.seen", None)])
    assert status == 200
    [q] = reached(upstream)
    assert len(json.loads(q["body"])) == 2


@pytest.mark.parametrize("body,code,needle", [
    (b'{"jsonrpc":"2.0","id":1,"method":"reports.list","method":"reports.delete"}', -32700,
     "duplicate"),
    (b'{"jsonrpc":"2.0","id":1,"method":"reports.list","params":{"a":1,"a":2}}', -32700,
     "duplicate"),
    (b'[{"jsonrpc":"2.0","id":1,"method":"reports.list"},{"id":2,"method":"reports.list"}]',
     -32600, "batch item 1"),
    (b'{"jsonrpc":"2.0","id":1,"result":{}}', -32600, "response frames"),
    (b'{"jsonrpc":"2.0","id":1,"method":"reports.list"}{"jsonrpc":"2.0","id":2,'
     b'"method":"reports.delete"}', -32700, "invalid JSON"),
    (b'[]', -32600, "empty batch"),
])
def test_malformed_payloads_refused_before_the_rules(proxy, upstream, body, code, needle):
    status, _, payload = send(proxy, body)
    assert status == 403
    err = json.loads(payload)
    if isinstance(err, list):
        err = err[0]
    assert err["error"]["code"] == code and needle in err["error"]["message"], err
    assert reached(upstream) == []


@pytest.mark.parametrize("method,allowed", [
    ("reports.list", True),
    ("Reports.list", False),  # case matters
    ("reports.list ", False),
    ("reports\u2024list", False),  # ONE DOT LEADER, not "."
    ("reports\uff0elist", False),  # FULLWIDTH FULL STOP
])
def test_method_names_match_exactly(proxy, upstream, method, allowed):
    status, _, _ = send(proxy, json.dumps(call(method)).encode())
    assert (status == 200) == allowed
    assert bool(reached(upstream)) == allowed


def test_escaped_method_means_what_it_decodes_to(proxy, upstream):
    # "\u002e" is "." for the proxy and for the upstream alike
    status, _, _ = send(proxy, b'{"jsonrpc":"2.0","id":1,"method":"reports\\u002elist"}')
    assert status == 200
    status, _, _ = send(proxy, b'{"jsonrpc":"2.0","id":1,"method":"reports\\u002edelete"}')
    assert status == 403


def test_body_over_the_cap_refused(proxy, upstream):
    big = call("reports.list", 1, {"pad": "x" * 3000})
    status, _, payload = send(proxy, big)
    assert status == 413 and b"max_body_bytes" in payload
    assert reached(upstream) == []
    status, _, _ = send(proxy, call("reports.list", 1, {"pad": "x" * 1500}))
    assert status == 200


def test_body_arriving_in_pieces_is_judged_whole(proxy, upstream):
    for method, want in (("reports.delete", 403), ("reports.list", 200)):
        body = json.dumps(call(method, 5)).encode()
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        s.sendall(head(body))
        for i in range(0, len(body), 7):
            time.sleep(0.02)
            s.sendall(body[i:i + 7])
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        s.close()
        assert out.startswith(b"HTTP/1.1 %d" % want), out[:80]
    assert len(reached(upstream)) == 1


def test_non_post_and_chunked_refused(proxy, upstream):
    status, _, _ = send(proxy, b"", method="GET")
    assert status == 403
    body = json.dumps(call("reports.list")).encode()
    chunked = (b"POST http://upstream.test/rpc HTTP/1.1\r\nHost: upstream.test\r\n"
               b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
               + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    out = proxy.raw(chunked)
    assert out.startswith(b"HTTP/1.1 411")
    assert reached(upstream) == []


def test_outside_the_endpoint_path_refused(proxy, upstream):
    status, _, _ = send(proxy, call("reports.list"), path="/admin")
    assert status == 403
    assert upstream.requests() == []


def test_audit_enforcement_forwards_and_records(proxy, upstream):
    status, _, _ = send(proxy, call("reports.delete", 1), host="api.test", path="/")
    assert status == 200
    rec = proxy.last_audit(event="jsonrpc", method="reports.delete")
    assert rec and rec["decision"] == "audit"
    # a malformed body is refused even under audit
    status, _, _ = send(proxy, b'{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}', host="api.test",
                        path="/")
    assert status == 403
