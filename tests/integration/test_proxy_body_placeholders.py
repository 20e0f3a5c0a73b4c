"""OpenShell's fail-closed body check (issue 19; its ADR on
allow_uninspected_credentials: the proxy "streams every POST body and
fail-closes on the first byte matching OpenShell's placeholder syntax"): on
an endpoint that binds credentials but neither rewrites them in bodies nor
sets allow_uninspected_credentials, a request body holding a placeholder is
refused, however it is split (TCP segments, chunks); the same body passes as
is where the policy says it may (allow_uninspected_credentials, or an
unbound endpoint), and bodies without one always pass."""
import json
import socket
import ssl
import time

from tests.lib import build
from tests.lib.proxy_util import credential_fixtures

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  api:
    endpoints:
      - host: creds.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: github }}
      - host: other.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: github }}
        allow_uninspected_credentials: true
      - host: api.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
    binaries:
      - {{ path: /usr/bin/curl }}
      - {{ path: /usr/bin/python3* }}
"""
SECRET = "body-scan-s3cret"
PH = "openshell:resolve:env:GITHUB_TOKEN"
BODY = json.dumps({"note": f"gh said: Token: {PH}"})

upstream, proxy = credential_fixtures(POLICY, {"github": {"GITHUB_TOKEN": SECRET}})


def post(proxy, host, path, body):
    return proxy.curl(f"https://{host}{path}", "-X", "POST", "-H",
                      "Content-Type: application/json", "--data-binary", body)


def reached(upstream, path):
    return [r for r in upstream.requests() if r["path"] == path]


def test_a_placeholder_in_a_bound_endpoints_body_is_refused(proxy, upstream):
    assert post(proxy, "creds.test", "/plain", '{"note": "nothing to see"}')[0] == 200
    code, body = post(proxy, "creds.test", "/ph", BODY)
    assert code == 403 and json.loads(body)["reason"] == "credential_in_body", body
    assert not reached(upstream, "/ph")
    rec = proxy.last_audit(reason="credential_in_body")
    assert rec and rec["decision"] == "deny"


def test_where_the_policy_allows_it_the_placeholder_passes_as_is(proxy, upstream):
    for host, path in (("other.test", "/allowed"), ("api.test", "/unbound")):
        code, _ = post(proxy, host, path, BODY)
        assert code == 200, host
        (r,) = reached(upstream, path)
        assert PH in r["body"] and SECRET not in r["body"]


def answer(t):
    data = b""
    t.settimeout(5)
    try:
        while b"\r\n\r\n" not in data:
            chunk = t.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ssl.SSLError, ConnectionError):
        pass
    return data


def send_split(proxy, host, path, pieces, chunked):
    """POSTs pieces, each in its own TLS record a little apart; chunked: one
    chunk each. Returns the proxy's answer head."""
    t = proxy.tls(host)
    try:
        frame = (b"Transfer-Encoding: chunked\r\n" if chunked else
                 b"Content-Length: %d\r\n" % sum(len(p) for p in pieces))
        t.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s\r\n"
                  % (path.encode(), host.encode(), frame))
        try:
            for p in pieces:
                t.sendall(b"%x\r\n%s\r\n" % (len(p), p) if chunked else p)
                time.sleep(0.05)
            if chunked:
                t.sendall(b"0\r\n\r\n")
        except (ssl.SSLError, ConnectionError):
            pass  # refused and closed before the rest: the answer says why
        return answer(t)
    finally:
        t.close()


def refusals(proxy):
    return len([r for r in proxy.audit_records() if r.get("reason") == "credential_in_body"])


def test_a_placeholder_split_across_segments_or_chunks_is_still_found(proxy, upstream):
    raw = BODY.encode()
    cut = raw.index(b"resolve:") + 3  # inside the placeholder's fixed start
    clean = raw.replace(b"openshell:", b"opensheLL:")
    for chunked in (False, True):
        before = refusals(proxy)
        path = f"/split-{int(chunked)}"
        head = send_split(proxy, "creds.test", path, [raw[:cut], raw[cut:]], chunked)
        assert refusals(proxy) == before + 1, (chunked, head[:200])
        assert head.startswith(b"HTTP/1.1 403"), (chunked, head[:200])
        # The head and the bytes before the placeholder may have gone (the
        # body streams); the request was cut there, the placeholder never sent.
        assert all(PH not in r["body"] for r in upstream.requests()), upstream.requests()
        # Control: the same framing without a placeholder goes through.
        ok = f"/split-ok-{int(chunked)}"
        head = send_split(proxy, "creds.test", ok, [clean[:cut], clean[cut:]], chunked)
        assert head.startswith(b"HTTP/1.1 200"), (chunked, head[:200])
        assert refusals(proxy) == before + 1
        assert reached(upstream, ok)[0]["body"] == clean.decode()
