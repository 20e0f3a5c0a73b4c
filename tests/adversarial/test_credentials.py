"""Credential leakage from inside a real sandbox: the agent holds only a
placeholder; the proxy swaps in the secret only in a header of a request to
the endpoint bound to that provider. Every other route for the placeholder
(unbound host, plain HTTP, query, body, Host or SNI mismatch, unknown key)
is refused or forwarded unsubstituted, and the secret never reaches the
audit log. An upstream echoing the secret back gets it masked before the
agent sees it."""
import pytest

from tests.lib.adv_util import NET, last

SECRET = "ghp-adversarial-s3cr3t-value"
PH = "openshell:resolve:env:GITHUB_TOKEN"
POLICY = f"""  creds:
    endpoints:
      - host: creds.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: github }}
      - {{ host: api.test, port: 443, allowed_ips: {NET}, protocol: rest, access: full }}
      - {{ host: upstream.test, port: 80, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""
PROBES = ["cr_environment", "cr_bound_endpoint", "cr_unbound_endpoint",
          "cr_smuggled_in_query_and_body", "cr_unknown_key", "cr_host_and_sni_mismatch",
          "cr_echoed_back"]


@pytest.fixture(scope="module")
def sb(run_sandbox):
    return run_sandbox("cred", POLICY, PROBES,
                       credentials={"providers": {"github": {"GITHUB_TOKEN": SECRET}}})


def reached(upstream, prefix):
    return [q for q in upstream.requests() if q["path"].startswith(prefix)]


def test_agent_sees_only_the_placeholder(sb):
    r = sb.result("cr_environment")
    assert r["env"] == PH and r["leaks"] == []


def test_secret_injected_at_bound_endpoint_positive_control(sb, upstream):
    r = sb.result("cr_bound_endpoint")
    assert r["status"] == 200
    assert reached(upstream, "/cred-bound")[0]["headers"]["authorization"] == f"Bearer {SECRET}"


def test_placeholder_to_unbound_host_refused(sb, upstream):
    r = sb.result("cr_unbound_endpoint")
    for k in ("tls", "plain", "custom_header"):
        assert r[k]["status"] == 403 and r[k]["json"]["error"] == "credential_endpoint_mismatch"
    assert len(sb.find(decision="deny", reason="credential_endpoint_mismatch")) >= 3
    assert not reached(upstream, "/cred-unbound") and not reached(upstream, "/cred-plain")
    assert not reached(upstream, "/cred-x")


def test_placeholder_in_query_or_body_is_never_substituted(sb, upstream):
    r = sb.result("cr_smuggled_in_query_and_body")
    assert r["query"]["status"] == 200
    (q,) = reached(upstream, "/cred-query")
    assert SECRET not in q["path"] and PH in q["path"]
    # The bound endpoint neither rewrites bodies nor lets placeholders pass
    # uninspected: OpenShell's fail-closed body check refuses it, unsent.
    assert r["body"]["status"] == 403, r["body"]
    assert r["body"]["json"]["reason"] == "credential_in_body"
    assert not reached(upstream, "/cred-body")


def test_unknown_placeholder_key_refused(sb, upstream):
    r = sb.result("cr_unknown_key")
    assert r["status"] == 403 and r["json"]["error"] == "credential_unknown"
    assert not reached(upstream, "/cred-unknown")


def test_host_header_mismatch_in_tunnel_refused(sb, upstream):
    r = sb.result("cr_host_and_sni_mismatch")["host"]
    assert r["status"] == 403 and r["json"]["reason"] == "host_mismatch"
    assert not reached(upstream, "/cred-host")


def test_sni_mismatch_refused(sb, upstream):
    r = sb.result("cr_host_and_sni_mismatch")["sni"]
    assert r.get("status") == 403 or "tls_error" in r, r
    assert sb.find(reason="sni_mismatch")
    assert not reached(upstream, "/cred-sni")


def test_secret_never_in_audit_log(sb):
    with open(sb.audit) as f:
        text = f.read()
    assert SECRET not in text
    assert last(sb.records(), event="http", decision="allow", path="/cred-bound"), "control"


def test_secret_echoed_back_by_upstream_is_masked(sb):
    # The proxy scrubs every secret from answers to exchanges it injected
    # one into (and asks for uncompressed answers so it can).
    r = sb.result("cr_echoed_back")
    assert r["status"] == 200
    assert SECRET not in r["echoed"]
    assert "*" * len(SECRET) in r["echoed"]
    assert last(sb.records(), reason="credential_echo_masked")
