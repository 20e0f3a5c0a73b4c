"""Endpoint `path` routing (issue 19, upstream's route selection in
crates/openshell-sandbox/src/l7/relay.rs): several endpoints on one
host:port, told apart by path; each request is judged by the most specific
endpoint whose path matches it, and only that endpoint's rules and
credential binding apply to it, also on a kept-alive connection. The
security property: a request routed to a path that does not bind the
provider never carries the secret, however its path is spelled. Also
allow_encoded_slash, per routed endpoint. Each refusal has an allowed twin."""
import json

import pytest

from tests.lib import build
from tests.lib.proxy_util import credential_fixtures

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  api:
    endpoints:
      - host: api.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        path: "/bound/**"
        access: full
        credential_binding: {{ provider: github }}
      - host: api.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: read-only
      - host: api.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        path: "/gl/**"
        access: read-only
        allow_encoded_slash: true
      - host: other.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        path: "/v1/**"
        access: full
    binaries:
      - {{ path: /usr/bin/curl }}
      - {{ path: /usr/bin/python3* }}
"""
SECRET = "route-s3cret-value"
PH = "Bearer openshell:resolve:env:GITHUB_TOKEN"


upstream, proxy = credential_fixtures(POLICY, {"github": {"GITHUB_TOKEN": SECRET}})


def seen(upstream, path):
    return [r for r in upstream.requests() if r["path"] == path]


def no_secret_anywhere(upstream, except_path):
    return all(SECRET not in json.dumps(r) for r in upstream.requests() if r["path"] != except_path)


def test_the_bound_path_gets_the_secret_the_other_never(proxy, upstream):
    code, _ = proxy.curl("https://api.test/bound/x", "-H", f"Authorization: {PH}")
    assert code == 200
    assert seen(upstream, "/bound/x")[0]["headers"]["authorization"] == "Bearer " + SECRET
    code, body = proxy.curl("https://api.test/open/x", "-H", f"Authorization: {PH}")
    assert code == 403 and "credential_endpoint_mismatch" in body, body
    assert not seen(upstream, "/open/x")
    code, _ = proxy.curl("https://api.test/open/x")  # control: without the placeholder
    assert code == 200


def test_rules_follow_the_routed_endpoint(proxy, upstream):
    assert proxy.curl("https://api.test/bound/y", "-X", "POST", "-d", "a")[0] == 200
    code, body = proxy.curl("https://api.test/open/y", "-X", "POST", "-d", "a")
    assert code == 403 and json.loads(body)["reason"] == "no_matching_rule"
    rec = proxy.last_audit(path="/open/y", decision="deny")
    assert rec and rec["policy"] == "api"
    assert not seen(upstream, "/open/y")


@pytest.mark.parametrize("path", [
    "/bound/../open/z",   # resolves to /open/z: routed there, not to /bound
    "/boundary",          # a prefix of bytes, not of components
    "/bound%2F..%2Fopen",  # an encoded slash the bound endpoint does not allow
    "/BOUND/z",           # paths are case-sensitive
])
def test_spellings_of_another_path_never_carry_the_secret(proxy, upstream, path):
    code, _ = proxy.curl(f"https://api.test{path}", "--path-as-is", "-H", f"Authorization: {PH}")
    assert code in (400, 403), (path, code)
    assert all(SECRET not in json.dumps(r) for r in upstream.requests()), path
    code, _ = proxy.curl("https://api.test/bound", "-H", f"Authorization: {PH}")
    assert code == 200  # control: the prefix itself is the bound endpoint's


def exchange(t, path, auth=None):
    head = f"GET {path} HTTP/1.1\r\nHost: api.test\r\n"
    if auth:
        head += f"Authorization: {auth}\r\n"
    t.sendall((head + "\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = t.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
              if l.lower().startswith(b"content-length:")]
    while length and len(body) < length[0]:
        body += t.recv(4096)
    return int(head.split(b" ")[1]), body


def test_a_kept_alive_connection_switches_endpoint_per_request(proxy, upstream):
    t = proxy.tls("api.test")
    try:
        assert exchange(t, "/open/a")[0] == 200
        assert exchange(t, "/bound/b", PH)[0] == 200
        assert exchange(t, "/open/c")[0] == 200  # back to the unbound endpoint
        code, body = exchange(t, "/open/d", PH)  # the bound endpoint does not follow
        assert code == 403 and b"credential_endpoint_mismatch" in body
    finally:
        t.close()
    assert seen(upstream, "/bound/b")[0]["headers"]["authorization"] == "Bearer " + SECRET
    assert "authorization" not in seen(upstream, "/open/c")[0]["headers"]
    assert not seen(upstream, "/open/d")
    assert no_secret_anywhere(upstream, "/bound/b")


def test_no_matching_path_is_denied(proxy, upstream):
    assert proxy.curl("https://other.test/v1/x")[0] == 200
    code, body = proxy.curl("https://other.test/v2/x")
    assert code == 403, body
    out = json.loads(body)
    assert out["rule"] == "path" and out["reason"] == "no_matching_rule"
    assert not seen(upstream, "/v2/x")


def test_encoded_slash_only_where_the_routed_endpoint_allows_it(proxy, upstream):
    code, _ = proxy.curl("https://api.test/gl/projects/group%2Fname", "--path-as-is")
    assert code == 200
    assert seen(upstream, "/gl/projects/group%2Fname")  # forwarded still encoded
    assert proxy.curl("https://api.test/open/group%2Fname", "--path-as-is")[0] in (400, 403)
    assert not seen(upstream, "/open/group%2Fname")
    # A dot segment between encoded slashes would resolve away upstream.
    assert proxy.curl("https://api.test/gl/a%2F..%2F..%2Fbound", "--path-as-is")[0] in (400, 403)
    assert not [r for r in upstream.requests() if "%2F..%2F" in r["path"]]
