"""allow_uninspected_credentials (issue 19): upstream refuses a credential
binding on an L4-only endpoint unless the policy sets it. Here such a policy
loads, but the secret still never goes where it is not inspected: the
endpoint's TLS is terminated and only header placeholders are replaced (and
the answer scrubbed); with tls: skip the tunnel is raw and nothing is
replaced, so the upstream gets the placeholder, never the secret (as
upstream, which injects nothing into a skipped tunnel)."""
import json

import pytest

from tests.lib import build
from tests.lib.proxy_util import Proxy, credential_fixtures

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  l4:
    endpoints:
      - host: creds.test
        port: 443
        allowed_ips: {NET}
        credential_binding: {{ provider: github }}
        allow_uninspected_credentials: true
      - host: other.test
        port: 443
        allowed_ips: {NET}
        tls: skip
        credential_binding: {{ provider: github }}
        allow_uninspected_credentials: true
    binaries:
      - {{ path: /usr/bin/curl }}
"""
SECRET = "uninspected-s3cret"
PH = "Bearer openshell:resolve:env:GITHUB_TOKEN"


upstream, proxy = credential_fixtures(POLICY, {"github": {"GITHUB_TOKEN": SECRET}})


def test_l4_binding_is_still_inspected(proxy, upstream):
    code, body = proxy.curl("https://creds.test/echo", "-H", f"Authorization: {PH}")
    assert code == 200
    sent = [r for r in upstream.requests() if r["path"] == "/echo"][0]
    assert sent["headers"]["authorization"] == "Bearer " + SECRET  # injected inside TLS
    assert SECRET not in body  # the echo is scrubbed before the agent sees it


def test_skipped_tls_never_carries_the_secret(proxy, upstream):
    code, body = proxy.curl("https://other.test/raw", "-H", f"Authorization: {PH}",
                            "--cacert", f"{upstream.dir}/ca.pem")
    assert code == 200, body
    sent = [r for r in upstream.requests() if r["path"] == "/raw"][0]
    assert sent["headers"]["authorization"] == PH
    assert all(SECRET not in json.dumps(r) for r in upstream.requests())


def test_without_the_flag_the_policy_is_refused(upstream, tmp_path):
    bad = POLICY.replace("        allow_uninspected_credentials: true\n", "", 1)
    with pytest.raises(AssertionError, match="allow_uninspected_credentials"):
        Proxy(upstream, bad)
