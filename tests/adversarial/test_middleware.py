"""network_middlewares from inside a real sandbox: a key-shaped string the
agent sends in a request body (over TLS terminated by the proxy, and plain
HTTP) arrives at the upstream as [REDACTED]; a body the middleware cannot
evaluate and an uninspected tunnel to a selected host are refused
(fail_closed) and never reach the upstream."""
import pytest

from tests.lib.adv_util import NET

KEY = "sk-" + "Adv3rsarial_Key-0123"
MIDDLEWARES = """network_middlewares:
  redactor:
    middleware: openshell/regex
    endpoints: { include: [api.test, upstream.test, creds.test] }
"""
POLICY = f"""  mw:
    endpoints:
      - {{ host: api.test, port: 443, allowed_ips: {NET}, protocol: rest, access: full }}
      - {{ host: upstream.test, port: 80, allowed_ips: {NET}, protocol: rest, access: full }}
      - {{ host: creds.test, port: 443, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""




@pytest.fixture(scope="module")
def sb(run_sandbox):
    # network_middlewares is a top-level key: it follows the policies block.
    return run_sandbox("mw", POLICY + MIDDLEWARES, ["mw_redaction"])


def reached(upstream, prefix):
    return [q for q in upstream.requests() if q["path"].startswith(prefix)]


def test_key_redacted_before_it_leaves_tls_and_plain(sb, upstream):
    r = sb.result("mw_redaction")
    for k, path in (("tls", "/mw-tls"), ("plain", "/mw-plain")):
        assert r[k]["status"] == 200, (k, r[k])
        [q] = reached(upstream, path)
        assert q["body"] == '{"prompt": "my key is [REDACTED]"}', q
    assert sb.find(event="middleware", reason="middleware_redacted")
    assert not [rec for rec in sb.records() if KEY in str(rec)]


def test_unevaluable_body_and_uninspected_tunnel_fail_closed(sb, upstream):
    r = sb.result("mw_redaction")
    assert r["binary"]["status"] == 403
    assert r["binary"]["json"]["reason"] == "middleware_failed"
    assert not reached(upstream, "/mw-binary")
    assert r["tunnel"]["status"] == 403
    assert sb.find(reason="middleware_uninspectable")
