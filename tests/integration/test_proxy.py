"""The egress proxy against real upstreams in a test namespace (TEST-NET-2,
reachable only inside this machine), with real TLS and a real policy. Each
denial has an allowed twin beside it, and the upstream's request log proves
what reached it."""
import json
import os
import resource
import socket
import subprocess
import time

import pytest

from tests.lib import build
from tests.lib.proxy_util import UPSTREAM_IP, Proxy, Upstream

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  web:
    endpoints:
      - host: upstream.test
        port: 80
        allowed_ips: {NET}
        protocol: rest
        access: read-only
        deny_rules:
          - {{ method: "*", path: "/admin/**" }}
      - host: upstream.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: read-only
      - host: other.test
        port: 8443
        allowed_ips: {NET}
      - host: loop.test
        port: 80
      - host: meta.test
        port: 80
    binaries:
      - {{ path: /usr/bin/curl }}
  creds:
    endpoints:
      - host: creds.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: github }}
      - host: api.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
    binaries:
      - {{ path: /usr/bin/curl }}
"""
SECRET = "s3cr3t-token-value"


@pytest.fixture(scope="module")
def upstream():
    up = Upstream().start()
    yield up
    up.stop()


@pytest.fixture(scope="module")
def proxy(upstream):
    p = Proxy(upstream, POLICY,
              credentials={"providers": {"github": {"GITHUB_TOKEN": SECRET}}},
              inference={"routes": [{"name": "local", "provider": "openai",
                                     "base_url": f"http://{UPSTREAM_IP}:8000",
                                     "model": "model-1", "api_key": "sk-backend-key"}]})
    yield p
    p.stop()


@pytest.fixture(autouse=True)
def clean_log(upstream):
    upstream.clear()


def last_audit(proxy, **match):
    for r in reversed(proxy.audit_records()):
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def test_l4_tunnel_allowed_and_unlisted_host_denied(proxy, upstream):
    code, body = proxy.curl("https://other.test:8443/hello", "--cacert", f"{upstream.dir}/ca.pem")
    assert code == 200 and json.loads(body)["path"] == "/hello"
    code, body = proxy.curl("https://unlisted.test/")
    assert code == 0  # curl reports the refused CONNECT as a failure
    rec = last_audit(proxy, host="unlisted.test")
    assert rec["decision"] == "deny" and rec["reason"] == "no_matching_endpoint"


def test_connect_denied_answer_is_policy_json(proxy):
    out = proxy.raw(b"CONNECT unlisted.test:443 HTTP/1.1\r\nHost: unlisted.test:443\r\n\r\n")
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403")
    j = json.loads(body)
    assert j["error"] == "policy_denied"
    assert j["detail"] == "CONNECT unlisted.test:443 not permitted by policy"
    assert j["reason"]


def test_wrong_port_denied(proxy, upstream):
    code, _ = proxy.curl("https://other.test:8443/")  # positive control (L4, agent trusts nothing)
    assert last_audit(proxy, host="other.test", decision="allow")
    proxy.curl("http://other.test:80/")
    rec = last_audit(proxy, host="other.test", dport=80)
    assert rec["decision"] == "deny" and rec["reason"] == "port_not_allowed"


def test_binary_restriction_curl_allowed_python_denied(proxy, upstream):
    code, _ = proxy.curl("http://upstream.test/ok")
    assert code == 200
    py = ("import urllib.request,sys\n"
          f"o=urllib.request.build_opener(urllib.request.ProxyHandler({{'http':'{proxy.url}'}}))\n"
          "try:\n o.open('http://upstream.test/py',timeout=5); print(200)\n"
          "except Exception as e: print(getattr(e,'code',0))\n")
    r = subprocess.run(["/usr/bin/python3", "-c", py], capture_output=True, text=True)
    assert r.stdout.strip() == "403"
    assert not [q for q in upstream.requests() if q["path"] == "/py"]
    rec = last_audit(proxy, reason="binary_not_allowed")
    assert rec and rec["binary"].startswith("/usr/bin/python3")


def test_l7_read_only_denies_post_allows_get(proxy, upstream):
    code, _ = proxy.curl("https://upstream.test/api/x")
    assert code == 200
    code, body = proxy.curl("https://upstream.test/api/x", "-X", "POST", "-d", "{}")
    assert code == 403
    j = json.loads(body)
    assert j["error"] == "policy_denied" and j["method"] == "POST" and j["path"] == "/api/x"
    assert j["host"] == "upstream.test" and j["port"] == 443 and j["binary"] == "/usr/bin/curl"
    assert [q["method"] for q in upstream.requests()] == ["GET"]


def test_l7_denied_answer_has_policy_header_and_redacted_query(proxy):
    out = subprocess.run(["curl", "-s", "-i", "-x", proxy.url, "-X", "DELETE",
                          "http://upstream.test/x?token=abc"], capture_output=True, text=True).stdout
    assert "X-OpenShell-Policy: web" in out
    assert "token=abc" not in out
    assert "token=abc" not in open(proxy.audit).read()


def test_deny_rules_win_over_access(proxy, upstream):
    assert proxy.curl("http://upstream.test/public")[0] == 200
    code, body = proxy.curl("http://upstream.test/admin/users")
    assert code == 403 and json.loads(body)["rule"].startswith("deny_rules")
    assert [q["path"] for q in upstream.requests()] == ["/public"]


@pytest.mark.parametrize("path", ["/admin/%2e%2e/admin/x", "/x/%2e%2e/%2e%2e/etc", "/admin%2fx",
                                  "/a/..;/admin/x", "/a/%00"])
def test_canonicalisation_bypass_attempts_refused(proxy, upstream, path):
    code, _ = proxy.curl("http://upstream.test" + path, "--path-as-is")
    assert code in (400, 403)
    assert not upstream.requests()


def test_canonical_path_is_forwarded(proxy, upstream):
    code, body = proxy.curl("http://upstream.test//a/./b/../c", "--path-as-is")
    assert code == 200
    assert upstream.requests()[0]["path"] == "/a/c"


@pytest.mark.parametrize("host", ["loop.test", "meta.test"])
def test_ssrf_names_resolving_to_blocked_addresses(proxy, upstream, host):
    code, body = proxy.curl(f"http://{host}/")
    assert code == 403 and json.loads(body)["error"] == "ssrf_denied"
    assert proxy.curl("http://upstream.test/control")[0] == 200


@pytest.mark.parametrize("target", ["127.0.0.1:80", "[::1]:80", "[::ffff:127.0.0.1]:80",
                                    "0.0.0.0:80", "169.254.169.254:80", "2130706433:80",
                                    "0177.0.0.1:80", "localhost:80"])
def test_connect_to_loopback_and_metadata_spellings_denied(proxy, target):
    out = proxy.raw(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 403") or out.startswith(b"HTTP/1.1 400"), out[:80]


SMUGGLING = [
    b"GET http://upstream.test/a HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: 4\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"GET http://upstream.test/a HTTP/1.1\r\nHost: upstream.test\r\nTransfer-Encoding: chunked\r\n"
    b"Content-Length: 4\r\n\r\n0\r\n\r\n",
    b"GET http://upstream.test/a HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: 1\r\n"
    b"Content-Length: 2\r\n\r\nab",
    b"GET http://upstream.test/a HTTP/1.1\r\nHost: upstream.test\r\nX-A: b\r\n c\r\n\r\n",
    b"GET http://upstream.test/a HTTP/1.1\nHost: upstream.test\n\n",
    b"GET http://upstream.test/a HTTP/1.1\r\nHost: upstream.test\r\nTransfer-Encoding: xchunked\r\n\r\n",
]


@pytest.mark.parametrize("req", SMUGGLING, ids=["cl-te", "te-cl", "dup-cl", "obs-fold", "bare-lf",
                                                 "bad-te"])
def test_smuggling_shapes_get_400_and_reach_nothing(proxy, upstream, req):
    out = proxy.raw(req)
    assert out.startswith(b"HTTP/1.1 400"), out[:100]
    assert not upstream.requests()


def test_https_absolute_form_is_refused(proxy):
    out = proxy.raw(b"GET https://upstream.test/ HTTP/1.1\r\nHost: upstream.test\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 400") and b"use CONNECT for https" in out


def test_oversize_head_gets_431(proxy):
    out = proxy.raw(b"CONNECT upstream.test:443 HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 431")


def test_host_header_must_match_connect_target(proxy, upstream):
    code, _ = proxy.curl("https://upstream.test/fine")
    assert code == 200
    code, body = proxy.curl("https://upstream.test/x", "-H", "Host: other.test")
    assert code == 403 and json.loads(body)["reason"] == "host_mismatch"


def test_sni_must_match_connect_target(proxy, upstream):
    # curl --resolve-style trick: CONNECT to upstream.test but ask TLS for other.test
    code, _ = proxy.curl("https://other.test/x", "--connect-to", "other.test:443:upstream.test:443")
    assert code in (0, 403)
    assert not [q for q in upstream.requests() if q["path"] == "/x"]


def test_credential_injected_only_at_bound_endpoint(proxy, upstream):
    ph = "Bearer openshell:resolve:env:GITHUB_TOKEN"
    code, body = proxy.curl("https://creds.test/repo", "-H", f"Authorization: {ph}",
                            "-H", "Accept-Encoding: gzip")
    assert code == 200
    req = upstream.requests()[0]
    assert req["headers"]["authorization"] == f"Bearer {SECRET}"
    # The echo server sends the header back: the agent sees it masked, and
    # compression was not offered upstream (it would hide the secret).
    assert SECRET not in body and "*" * len(SECRET) in body
    assert "accept-encoding" not in req["headers"]
    upstream.clear()
    code, body = proxy.curl("https://api.test/repo", "-H", f"Authorization: {ph}")
    assert code == 403 and json.loads(body)["error"] == "credential_endpoint_mismatch"
    assert not upstream.requests()
    assert SECRET not in open(proxy.audit).read()


def test_credential_never_sent_over_plain_http(proxy, upstream):
    """Absolute-form http:// to the bound host:port would carry the secret in
    clear text: refused before any byte goes upstream."""
    ph = "Bearer openshell:resolve:env:GITHUB_TOKEN"
    upstream.clear()
    code, body = proxy.curl("http://creds.test:443/plain", "-H", f"Authorization: {ph}")
    assert code == 403 and json.loads(body)["error"] == "credential_plaintext", body
    assert not [q for q in upstream.requests() if q["path"] == "/plain"]
    # Control: the same placeholder inside TLS to the same endpoint is injected.
    code, _ = proxy.curl("https://creds.test/tls", "-H", f"Authorization: {ph}")
    assert code == 200
    assert [q for q in upstream.requests() if q["path"] == "/tls"][0]["headers"][
        "authorization"] == f"Bearer {SECRET}"


def test_secret_split_across_chunks_is_masked(proxy, upstream):
    """The upstream echoes the request in 3-byte chunks: the secret never
    lies whole inside one chunk, so it is caught only on the decoded body."""
    ph = "Bearer openshell:resolve:env:GITHUB_TOKEN"
    code, body = proxy.curl("https://creds.test/echo-chunked", "-H", f"Authorization: {ph}")
    assert code == 200
    assert SECRET not in body
    echoed = json.loads(body)  # the agent got the decoded body, whole
    assert echoed["headers"]["authorization"] == "Bearer " + "*" * len(SECRET)
    # Control: the upstream did receive the secret.
    assert [q for q in upstream.requests() if q["path"] == "/echo-chunked"][0]["headers"][
        "authorization"] == f"Bearer {SECRET}"


def test_secret_echoed_later_without_a_placeholder_is_masked(proxy, upstream):
    """Once an upstream has received a secret, every later answer from it is
    scrubbed, on a new connection and with no placeholder in the request."""
    ph = "Bearer openshell:resolve:env:GITHUB_TOKEN"
    assert proxy.curl("https://creds.test/first", "-H", f"Authorization: {ph}")[0] == 200
    code, body = proxy.curl("https://creds.test/last-auth")
    assert code == 200 and SECRET not in body
    assert json.loads(body)["last"] == "Bearer " + "*" * len(SECRET)


def test_compressed_answer_from_a_secret_holding_upstream_is_refused(proxy, upstream):
    """A gzip body could carry the secret past the scrubber: refused."""
    ph = "Bearer openshell:resolve:env:GITHUB_TOKEN"
    code, body = proxy.curl("https://creds.test/gzip", "-H", f"Authorization: {ph}")
    assert code == 502 and SECRET not in body, body
    # Control: an upstream that never received a secret may compress (port
    # 80: every name here shares one address, whose :443 now holds one).
    code, _ = proxy.curl("http://upstream.test/gzip", "--compressed")
    assert code == 200


def test_inference_backend_key_reflected_is_masked(proxy, upstream):
    code, body = proxy.curl("https://inference.local/v1/chat/completions", "-X", "POST",
                            "-H", "Content-Type: application/json",
                            "-d", '{"model":"whatever","messages":[]}')
    assert code == 200
    assert "sk-backend-key" not in body
    # Control: the echo carried the key the backend received, masked.
    assert json.loads(body)["headers"]["authorization"] == "Bearer " + "*" * len("sk-backend-key")


def test_credential_basic_auth_and_query_not_substituted(proxy, upstream):
    import base64
    userpass = base64.b64encode(b"x-access-token:openshell:resolve:env:GITHUB_TOKEN").decode()
    code, _ = proxy.curl("https://creds.test/b?t=openshell:resolve:env:GITHUB_TOKEN",
                         "-H", f"Authorization: Basic {userpass}")
    assert code == 200
    req = upstream.requests()[0]
    assert base64.b64decode(req["headers"]["authorization"][6:]).decode() == f"x-access-token:{SECRET}"
    assert SECRET not in req["path"]  # only header values are ever substituted


def test_inference_local_routed_with_backend_key_and_model(proxy, upstream):
    code, body = proxy.curl("https://inference.local/v1/chat/completions", "-X", "POST",
                            "-H", "Authorization: Bearer caller-key", "-H",
                            "Content-Type: application/json",
                            "-d", '{"model":"whatever","messages":[]}')
    assert code == 200
    req = upstream.requests()[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-backend-key"
    assert json.loads(req["body"])["model"] == "model-1"
    code, _ = proxy.curl("https://inference.local/v1/admin", "-X", "POST", "-d", "{}")
    assert code == 403


def test_policy_update_applies_within_a_second_and_invalid_update_keeps_policy(proxy, upstream):
    assert proxy.curl("http://upstream.test/before")[0] == 200
    try:
        proxy.set_policy("version: 1\nnetwork_policies: {}\n")
        proxy.reload()
        deadline = time.time() + 1.0
        code = 200
        while time.time() < deadline and code == 200:
            code = proxy.curl("http://upstream.test/after")[0]
        assert code == 403
        proxy.set_policy("version: 1\nnetwork_policies: [broken\n")
        proxy.reload()
        time.sleep(0.3)
        assert proxy.curl("http://upstream.test/still-denied")[0] == 403
        assert last_audit(proxy, event="policy", reason="policy_invalid")
    finally:
        proxy.set_policy(POLICY)
        proxy.reload()
        time.sleep(0.3)
    assert proxy.curl("http://upstream.test/restored")[0] == 200


def test_thousand_concurrent_connections(proxy, upstream):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    socks = []
    try:
        for _ in range(1000):
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
            s.sendall(b"GET http://upstream.test/many HTTP/1.1\r\n")
            socks.append(s)
        assert proxy.curl("http://upstream.test/while-busy")[0] == 200
        # Every one of them is still judged (this test process is not an
        # allowed binary, so each gets the policy's 403, not a hang or a reset).
        for s in socks:
            s.sendall(b"Host: upstream.test\r\n\r\n")
        for s in socks:
            assert s.recv(12) == b"HTTP/1.1 403"
    finally:
        for s in socks:
            s.close()


def test_binary_replaced_after_first_use_is_denied(upstream, tmp_path):
    tool = tmp_path / "fetch"
    subprocess.run(["cp", "/usr/bin/curl", str(tool)], check=True)
    policy = POLICY.replace("{ path: /usr/bin/curl }", f"{{ path: {tool} }}")
    p = Proxy(upstream, policy)
    try:
        def fetch():
            r = subprocess.run([str(tool), "-s", "-o", "/dev/null", "-w", "%{http_code}", "-x",
                                p.url, "http://upstream.test/pinned"], capture_output=True,
                               text=True)
            return r.stdout
        assert fetch() == "200"  # first use pins its SHA-256
        # Same path, different content (an ELF with one byte appended still runs).
        swapped = tmp_path / "fetch.new"
        subprocess.run(["cp", "/usr/bin/curl", str(swapped)], check=True)
        with open(swapped, "ab") as f:
            f.write(b"\0")
        os.rename(swapped, tool)
        assert fetch() == "403"
        rec = last_audit(p, decision="deny")
        assert rec["reason"] == "binary_unknown" and "binary_hash_mismatch" in rec["detail"]
    finally:
        p.stop()


def test_slow_request_head_times_out(upstream):
    p = Proxy(upstream, POLICY, extra=("--head-timeout-ms", "500"))
    try:
        s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
        s.sendall(b"GET http://upstream.test/ HTTP/1.1\r\n")
        time.sleep(1.0)
        assert s.recv(64).startswith(b"HTTP/1.1 408")
        s.close()
        # Positive control: a complete head in time is answered (403: this
        # test process is not an allowed binary, but it was judged).
        s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
        s.sendall(b"GET http://upstream.test/ HTTP/1.1\r\nHost: upstream.test\r\n\r\n")
        assert s.recv(12) == b"HTTP/1.1 403"
        s.close()
    finally:
        p.stop()


@pytest.mark.parametrize("mode,want", [("kernel", 403), ("endpoint-only", 200)])
def test_endpoint_only_mode_for_unidentifiable_callers(upstream, mode, want):
    """Split pods: caller identity cannot cross pods. By default such callers
    are denied whatever the endpoint; the operator's `endpoint-only` choice
    judges them by endpoint alone (binaries lists are not consulted)."""
    p = Proxy(upstream, POLICY, identity=False, extra=("--binary-identity", mode))
    try:
        assert p.curl("http://upstream.test/eo")[0] == want
        p.curl("http://unlisted.test/")  # endpoint rules still apply in both modes
        rec = last_audit(p, host="unlisted.test")
        assert rec and rec["decision"] == "deny"
    finally:
        p.stop()
