"""Denials an agent can read (issue 23): a refused request says why in its
status line and in a Proxy-Status header (RFC 9209), the sandbox's recent
denials are served at http://policy.local/v1/denials, without query strings
or detail text, and the policy in force at /v1/policy/current. Real proxy, real upstream in a test namespace, real clients."""
import json
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
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: read-only
      - host: wrongname.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: read-only
      - host: ssrf.test
        port: 80
      - host: metadata.google.internal
        port: 80
    binaries:
      - {{ path: /usr/bin/curl }}
      - {{ path: /usr/bin/python3* }}
"""


@pytest.fixture(scope="module")
def proxy():
    up = Upstream().start()
    # wrongname.test reaches the upstream, whose certificate does not name
    # it; ssrf.test names a private address no rule opens.
    with open(f"{up.dir}/hosts", "a") as f:
        f.write(f"{UPSTREAM_IP} wrongname.test\n10.1.2.3 ssrf.test\n")
    p = Proxy(up, POLICY)
    yield p
    p.stop()
    up.stop()


def head_of(out):
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return lines[0], headers, body


def denials(proxy, path="/v1/denials", method="GET"):
    out = proxy.raw(f"{method} http://policy.local{path} HTTP/1.1\r\nHost: policy.local\r\n\r\n".encode())
    return head_of(out)


def test_refused_connect_says_why_in_status_line_and_proxy_status(proxy):
    status, headers, body = head_of(
        proxy.raw(b"CONNECT unlisted.test:443 HTTP/1.1\r\nHost: unlisted.test:443\r\n\r\n"))
    assert status == "HTTP/1.1 403 Forbidden by policy: no_matching_endpoint"
    assert headers["proxy-status"] == \
        'openshell; error=http_request_denied; details="no_matching_endpoint"'
    doc = json.loads(body)
    assert doc["reason"] == "no_matching_endpoint"
    assert doc["next_steps"] == [{"action": "inspect_policy", "method": "GET",
                                  "url": "http://policy.local/v1/policy/current"},
                                 {"action": "inspect_recent_denials", "method": "GET",
                                  "url": "http://policy.local/v1/denials?last=5"}]


def test_python_client_sees_the_reason_of_a_refused_tunnel(proxy):
    """http.client keeps the CONNECT status line in its error: the reason
    reaches the agent even though the answer's body is discarded."""
    py = ("import urllib.request\n"
          f"o=urllib.request.build_opener(urllib.request.ProxyHandler({{'https':'{proxy.url}'}}))\n"
          "try:\n o.open('https://unlisted.test/x',timeout=5)\n"
          "except Exception as e: print(e)\n")
    r = subprocess.run(["/usr/bin/python3", "-c", py], capture_output=True, text=True, timeout=30)
    assert "403 Forbidden by policy: no_matching_endpoint" in r.stdout
    # positive control: an allowed tunnel is not refused
    ok = ("import urllib.request,ssl\n"
          f"c=ssl.create_default_context(cafile='{proxy.ca}')\n"
          f"o=urllib.request.build_opener(urllib.request.ProxyHandler({{'https':'{proxy.url}'}}),"
          "urllib.request.HTTPSHandler(context=c))\n"
          "print(o.open('https://upstream.test/fine',timeout=5).status)\n")
    r = subprocess.run(["/usr/bin/python3", "-c", ok], capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == "200", r.stderr


def test_l7_deny_and_upstream_certificate_failure_carry_proxy_status(proxy):
    out = subprocess.run(
        ["curl", "-s", "-D", "-", "-o", "/dev/null", "--cacert", proxy.ca, "-x", proxy.url,
         "-X", "POST", "-d", "{}", "https://upstream.test/api"],
        capture_output=True, text=True, timeout=30).stdout
    assert "HTTP/1.1 403 Forbidden by policy: " in out
    assert "Proxy-Status: openshell; error=http_request_denied" in out
    out = subprocess.run(
        ["curl", "-s", "-D", "-", "-o", "/dev/null", "--cacert", proxy.ca, "-x", proxy.url,
         "https://wrongname.test/"], capture_output=True, text=True, timeout=30).stdout
    assert "HTTP/1.1 502 Bad Gateway: upstream_tls (upstream_certificate)" in out
    assert 'Proxy-Status: openshell; error=tls_certificate_error; details="upstream_certificate"' in out


def test_ssrf_refusal_is_destination_ip_prohibited(proxy):
    status, headers, _ = head_of(
        proxy.raw(b"GET http://ssrf.test/ HTTP/1.1\r\nHost: ssrf.test\r\n\r\n"))
    assert status.startswith("HTTP/1.1 403 Forbidden: ssrf_denied")
    assert headers["proxy-status"].startswith("openshell; error=destination_ip_prohibited")


def test_named_metadata_endpoint_is_ssrf_denied_without_a_dns_query(proxy):
    """A policy naming metadata.google.internal loads (upstream's SSRF
    scenarios do) and the request is ssrf_denied, not a DNS error: nothing
    resolves that name here, so a DNS query would have failed first."""
    status, headers, body = head_of(proxy.raw(
        b"GET http://metadata.google.internal/computeMetadata/v1/ HTTP/1.1\r\n"
        b"Host: metadata.google.internal\r\n\r\n"))
    assert status == "HTTP/1.1 403 Forbidden: ssrf_denied (ssrf_always_blocked)", status
    assert json.loads(body)["error"] == "ssrf_denied"
    assert headers["proxy-status"].startswith("openshell; error=destination_ip_prohibited")


def test_policy_local_lists_recent_denials_newest_first_without_queries(proxy):
    proxy.curl("https://upstream.test/api/items?token=abc123", "-X", "DELETE")
    proxy.curl("https://upstream.test/allowed?q=1")  # allowed: not a denial
    status, headers, body = denials(proxy, "/v1/denials?last=100")
    assert status == "HTTP/1.1 200 OK" and "proxy-status" not in headers
    listed = json.loads(body)["denials"]
    newest = listed[0]
    assert newest["error"] == "policy_denied" and newest["method"] == "DELETE"
    assert newest["path"] == "/api/items" and newest["host"] == "upstream.test"
    assert newest["binary"] == "/usr/bin/curl" and newest["reason"]
    assert "abc123" not in body.decode() and "detail" not in newest
    assert not [d for d in listed if d.get("path") == "/allowed"]


def test_policy_local_answers_only_get_of_its_paths(proxy):
    status, _, body = denials(proxy, "/v1/secrets")
    assert status.startswith("HTTP/1.1 404") and json.loads(body) == {
        "error": "not_found", "detail": "policy.local route not found: GET /v1/secrets"}
    status, _, _ = denials(proxy, method="POST")
    assert status.startswith("HTTP/1.1 405")
    status, _, body = denials(proxy, "/v1/policy/current", method="PUT")
    assert status.startswith("HTTP/1.1 405") and \
        json.loads(body)["detail"] == "/v1/policy/current is read with GET"
    status, _, _ = denials(proxy, "/v1/policy/current/x")
    assert status.startswith("HTTP/1.1 404")


def policy_loads(p):
    return len([r for r in p.audit_records() if r.get("event") == "policy"])


def reload_and_wait(p, text):
    before = policy_loads(p)
    p.set_policy(text)
    p.reload()
    for _ in range(200):
        if policy_loads(p) > before:
            return
        time.sleep(0.02)
    pytest.fail("the reload was not recorded")


def test_policy_local_serves_the_policy_in_force(proxy):
    """Upstream's GET /v1/policy/current: {"format": "yaml", "policy_yaml"},
    the text of the generation in force: a reload shows the new one, a
    refused reload keeps showing the one still enforced. (A proxy of its
    own: the module's keeps its policy.)"""
    p = Proxy(proxy.up, POLICY)
    try:
        status, headers, body = denials(p, "/v1/policy/current")
        assert status == "HTTP/1.1 200 OK" and "proxy-status" not in headers
        assert json.loads(body) == {"format": "yaml", "policy_yaml": POLICY}
        narrower = POLICY.replace("      - host: ssrf.test\n        port: 80\n", "") + \
            "# comments are the operator's too: kept\n"
        reload_and_wait(p, narrower)
        assert json.loads(denials(p, "/v1/policy/current")[2])["policy_yaml"] == narrower
        reload_and_wait(p, "version: 1\nnetwork_policies: [broken\n")
        assert p.last_audit(event="policy", reason="policy_invalid")
        assert json.loads(denials(p, "/v1/policy/current")[2])["policy_yaml"] == narrower
    finally:
        p.stop()


def test_last_selects_how_many_and_the_ring_is_bounded(proxy):
    for i in range(120):
        proxy.raw(f"CONNECT flood{i}.test:443 HTTP/1.1\r\nHost: flood{i}.test:443\r\n\r\n".encode())
    doc = json.loads(denials(proxy)[2])
    assert len(doc["denials"]) == 10  # upstream's default
    assert doc["denials"][0]["host"] == "flood119.test"
    assert doc["dropped"] >= 20  # only the newest 100 are kept
    doc = json.loads(denials(proxy, "/v1/denials?last=3")[2])
    assert [d["host"] for d in doc["denials"]] == ["flood119.test", "flood118.test", "flood117.test"]
    assert len(json.loads(denials(proxy, "/v1/denials?last=99999999999999999999")[2])["denials"]) == 100
    assert len(json.loads(denials(proxy, "/v1/denials?last=0")[2])["denials"]) == 1
    assert len(json.loads(denials(proxy, "/v1/denials?x=1&last=abc")[2])["denials"]) == 10
