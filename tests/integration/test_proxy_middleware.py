"""network_middlewares through the proxy, against the echo upstream: the
in-process openshell/regex middleware replaces `sk-[A-Za-z0-9_-]{16,}` with
`[REDACTED]` in the request bodies of the hosts its selector takes, after
the L7 decision and before the request leaves (the upstream's log shows what
arrived, with a Content-Length that fits; a chunked body is decoded whole
and re-framed when changed, as upstream). A body it cannot evaluate is
refused under fail_closed (never reaching the upstream) and forwarded as is
under fail_open; an L4 tunnel a fail_closed middleware selects is refused.
Each has its control: other hosts, bodies without a match."""
import json

from tests.lib import build
from tests.lib.proxy_util import module_fixtures

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
KEY = "sk-" + "A1b2_C3d4-E5f6G7h8I9"
POLICY = f"""
version: 1
network_middlewares:
  redactor:
    middleware: openshell/regex
    order: 10
    endpoints: {{ include: [upstream.test, api.test], exclude: [other.test] }}
  lenient:
    name: Lenient redactor
    middleware: openshell/regex
    order: 20
    on_error: fail_open
    endpoints: {{ include: [creds.test] }}
network_policies:
  p:
    endpoints:
      - {{ host: upstream.test, port: 80, allowed_ips: {NET}, protocol: rest, access: full }}
      - {{ host: other.test, port: 80, allowed_ips: {NET}, protocol: rest, access: full }}
      - {{ host: creds.test, port: 80, allowed_ips: {NET}, protocol: rest, access: full }}
      - {{ host: api.test, port: 443, allowed_ips: {NET} }}
      - {{ host: creds.test, port: 443, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


upstream, proxy, clean_log = module_fixtures(POLICY)


def post(proxy, body, host="upstream.test", path="/mw", extra=""):
    if isinstance(body, str):
        body = body.encode()
    req = (f"POST http://{host}{path} HTTP/1.1\r\nHost: {host}\r\n{extra}"
           f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    out = proxy.raw(req)
    status = int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else 0
    return status, out.partition(b"\r\n\r\n")[2]


def arrived(upstream, path="/mw"):
    return [q for q in upstream.requests() if q["path"].startswith(path)]


def test_key_in_body_is_redacted_before_it_leaves(proxy, upstream):
    body = json.dumps({"note": f"use {KEY} and {KEY}x please", "short": "sk-tooShort123"})
    status, _ = post(proxy, body)
    assert status == 200
    [q] = arrived(upstream)
    want = body.replace(KEY + "x", "[REDACTED]").replace(KEY, "[REDACTED]")
    assert q["body"] == want and KEY not in q["body"]
    assert q["headers"]["content-length"] == str(len(want.encode()))
    assert "sk-tooShort123" in q["body"]  # under 16 characters: not the pattern
    rec = proxy.last_audit(event="middleware", reason="middleware_redacted")
    assert rec and "2 matches replaced" in rec["detail"] and KEY not in json.dumps(rec)


def test_bodies_without_a_match_and_other_hosts_pass_unchanged(proxy, upstream):
    status, _ = post(proxy, '{"note": "nothing secret here"}')
    assert status == 200
    assert arrived(upstream)[0]["body"] == '{"note": "nothing secret here"}'
    upstream.clear()
    status, _ = post(proxy, f"k={KEY}", host="other.test")  # excluded host
    assert status == 200 and arrived(upstream)[0]["body"] == f"k={KEY}"


def test_body_it_cannot_evaluate_fails_closed(proxy, upstream):
    status, payload = post(proxy, b"\xff\xfe" + KEY.encode())
    assert status == 403
    assert json.loads(payload)["reason"] == "middleware_failed"
    status, _ = post(proxy, KEY, extra="Content-Encoding: gzip\r\n")
    assert status == 403
    status, _ = post_chunked(proxy, [b"x" * 65536] * 3)  # over the cap once decoded
    assert status == 403
    assert arrived(upstream) == []
    rec = proxy.last_audit(event="middleware", decision="deny")
    assert rec and rec["reason"] == "middleware_failed"


def post_chunked(proxy, chunks, host="upstream.test", trailer=""):
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n" + \
        trailer.encode() + b"\r\n"
    out = proxy.raw((f"POST http://{host}/mw HTTP/1.1\r\nHost: {host}\r\n"
                     f"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode() + body)
    status = int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else 0
    return status, out


def test_chunked_body_decoded_whole_and_key_split_across_chunks_redacted(proxy, upstream):
    # positive control: no match, the chunked body goes on as it came
    status, _ = post_chunked(proxy, [b"nothing ", b"secret"])
    assert status == 200
    [q] = arrived(upstream)
    assert q["body"] == "nothing secret" and q["headers"].get("transfer-encoding") == "chunked"
    upstream.clear()
    # the key cut in three chunks (and a trailer): redacted, re-framed
    text = f"k={KEY}&n=1".encode()
    status, _ = post_chunked(proxy, [text[:5], text[5:12], text[12:]], trailer="X-T: 1\r\n")
    assert status == 200
    [q] = arrived(upstream)
    assert q["body"] == "k=[REDACTED]&n=1"
    assert q["headers"]["content-length"] == str(len("k=[REDACTED]&n=1"))
    assert "transfer-encoding" not in q["headers"]


def test_fail_open_forwards_what_it_cannot_evaluate(proxy, upstream):
    status, _ = post(proxy, b"\xff" + KEY.encode(), host="creds.test")
    assert status == 200
    [q] = arrived(upstream)
    assert KEY in q["body"]  # unchanged: the middleware failed open
    assert proxy.last_audit(event="middleware", reason="middleware_failed_open")
    upstream.clear()
    status, _ = post(proxy, f"k={KEY}", host="creds.test")  # and still redacts text
    assert status == 200 and arrived(upstream)[0]["body"] == "k=[REDACTED]"
    upstream.clear()
    big = [b"x" * 65536] * 3 + [KEY.encode()]  # over the cap: streamed on unchanged
    status, _ = post_chunked(proxy, big, host="creds.test")
    assert status == 200
    [q] = arrived(upstream)
    assert q["body"].endswith(KEY) and len(q["body"]) == 3 * 65536 + len(KEY)


def test_uninspected_tunnel_selected_by_fail_closed_middleware_refused(proxy, upstream):
    out = proxy.raw(b"CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 403") and b"middleware_uninspectable" in out
    # control: the fail_open middleware's host still tunnels
    out = proxy.raw(b"CONNECT creds.test:443 HTTP/1.1\r\nHost: creds.test:443\r\n\r\n",
                    timeout=2)
    assert out.startswith(b"HTTP/1.1 200")
