"""credential_signing (issue 19; upstream docs providers/aws-sigv4.mdx): the
agent signs with placeholder AWS keys, the proxy drops its signing headers
and signs again with the bound provider's keys, which the agent never sees.
The upstream here checks every signature itself, with an independent SigV4
verifier (hmac/hashlib, below) over exactly the bytes it received."""
import hashlib
import hmac
import json
import os
import urllib.parse

import pytest

from tests.lib import build, proxy_util
from tests.lib.proxy_util import Proxy, assert_sanitizer_clean, module_fixtures, stop_sanitized

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  aws:
    endpoints:
      - host: creds.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: aws }}
        credential_signing: sigv4
        signing_service: bedrock
        signing_region: us-east-1
      - host: api.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: aws }}
        credential_signing: "sigv4:no_body"
        signing_service: s3
        signing_region: eu-west-1
      - host: upstream.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: aws }}
        credential_signing: sigv4
        signing_service: sts
    binaries:
      - {{ path: /usr/bin/curl }}
"""
KEY_ID = "AKIDPROXYEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYproxySECRET"
TOKEN = "FwoGZXIvYXdzEBYaDH+session+token"
CREDS = {"providers": {"aws": {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET,
                               "AWS_SESSION_TOKEN": TOKEN}}}

upstream, proxy, clean_log = module_fixtures(POLICY, credentials=CREDS)

# What the agent's SDK sends, signed with the placeholders it holds.
AGENT = ["-H", "Authorization: AWS4-HMAC-SHA256 Credential=openshell:resolve:env:"
         "AWS_ACCESS_KEY_ID/20200101/us-east-1/bedrock/aws4_request, "
         "SignedHeaders=host;x-amz-date, Signature=0000agent", "-H", "X-Amz-Date: 20200101T000000Z",
         "-H", "X-Amz-Security-Token: openshell:resolve:env:AWS_SESSION_TOKEN"]


def sigv4_valid(req, secret, body=None):
    """Checks req (as the upstream recorded it) against its Authorization
    header, as AWS does: True, or the reason it fails."""
    h = req["headers"]
    auth = h.get("authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "no SigV4 authorization"
    fields = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    key_id, day, region, service, term = fields["Credential"].split("/")
    names = fields["SignedHeaders"].split(";")
    if term != "aws4_request" or h.get("x-amz-date", "")[:8] != day:
        return "bad credential scope"
    path, _, query = req["path"].partition("?")
    uri = path if service == "s3" else urllib.parse.quote(path, safe="/~")
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    cq = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                  for k, v in sorted(pairs))
    ch = "".join(f"{n}:{' '.join(h[n].split())}\n" for n in names)
    payload = h["x-amz-content-sha256"]
    if body is not None and payload != "UNSIGNED-PAYLOAD" and \
            payload != hashlib.sha256(body).hexdigest():
        return "payload hash does not match the body"
    creq = "\n".join([req["method"], uri, cq, ch, ";".join(names), payload])
    scope = f"{day}/{region}/{service}/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", h["x-amz-date"], scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (day, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return True if hmac.compare_digest(want, fields["Signature"]) else "signature mismatch"


def seen(upstream, path):
    got = [q for q in upstream.requests() if q["path"].startswith(path)]
    return got[0] if got else None


def test_the_verifier_can_fail():
    """Sanity of the checker itself on a request signed by the suite's own
    example (aws-sig-v4-test-suite get-vanilla, AKIDEXAMPLE)."""
    req = {"method": "GET", "path": "/", "headers": {
        "host": "example.amazonaws.com", "x-amz-date": "20150830T123600Z",
        "x-amz-content-sha256": hashlib.sha256(b"").hexdigest(),
        "authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                         "aws4_request, SignedHeaders=host;x-amz-date, Signature="
                         "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"}}
    # The suite's canonical request carries no x-amz-content-sha256 line: signed
    # headers host;x-amz-date, payload the empty hash, so the vector verifies.
    assert sigv4_valid(req, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY") is True
    req["path"] = "/x"
    assert sigv4_valid(req, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY") == "signature mismatch"


def test_body_signed_with_the_providers_keys(proxy, upstream):
    body = '{"prompt": "hi"}'
    code, echo = proxy.curl("https://creds.test/model/a%3Ab/invoke?x=1&a=", "-X", "POST",
                            "-H", "Content-Type: application/json", "-H",
                            "x-amz-content-sha256: " + hashlib.sha256(body.encode()).hexdigest(),
                            "--data-binary", body, *AGENT)
    assert code == 200, echo
    got = seen(upstream, "/model/")
    assert got["headers"]["authorization"].startswith(
        f"AWS4-HMAC-SHA256 Credential={KEY_ID}/"), got["headers"]
    assert "/us-east-1/bedrock/aws4_request" in got["headers"]["authorization"]
    assert got["headers"]["x-amz-security-token"] == TOKEN
    assert got["headers"]["x-amz-content-sha256"] == hashlib.sha256(body.encode()).hexdigest()
    assert sigv4_valid(got, SECRET, body.encode()) is True
    # Nothing of the agent's signing is forwarded, and each signing header
    # comes once; the secret key never leaves.
    names = [k for k, _ in got["header_lines"]]
    for n in ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"):
        assert names.count(n) == 1, got["header_lines"]
    assert "0000agent" not in json.dumps(got) and "20200101T000000Z" not in json.dumps(got)
    assert SECRET not in json.dumps(upstream.requests())
    # The echo carries the key id and the session token: scrubbed for the agent.
    assert KEY_ID not in echo and TOKEN not in echo


def test_expect_100_continue_while_the_body_is_hashed(proxy, upstream):
    """As upstream handles it for boto3: curl waits 20 s for a 100, past its
    10 s limit, so only the proxy's own 100 lets it send the body."""
    code, _ = proxy.curl("https://creds.test/expect", "-X", "PUT", "--data-binary", "abc",
                         "-H", "Expect: 100-continue", "--expect100-timeout", "20")
    assert code == 200
    got = seen(upstream, "/expect")
    assert sigv4_valid(got, SECRET, b"abc") is True and "expect" not in got["headers"]


def test_the_agents_payload_hash_is_not_trusted(proxy, upstream):
    """A hex digest of another body: the proxy signs the hash of what it sends."""
    code, _ = proxy.curl("https://creds.test/lie", "-X", "PUT", "--data-binary", "real",
                         "-H", "x-amz-content-sha256: " + hashlib.sha256(b"fake").hexdigest())
    assert code == 200
    got = seen(upstream, "/lie")
    assert got["headers"]["x-amz-content-sha256"] == hashlib.sha256(b"real").hexdigest()
    assert sigv4_valid(got, SECRET, b"real") is True


def test_absent_content_hash_signs_the_body(proxy, upstream):
    code, _ = proxy.curl("https://creds.test/nohash", "-X", "PUT", "--data-binary", "abc")
    assert code == 200
    got = seen(upstream, "/nohash")
    assert got["headers"]["x-amz-content-sha256"] == hashlib.sha256(b"abc").hexdigest()
    assert sigv4_valid(got, SECRET, b"abc") is True


def test_no_body_mode_signs_unsigned_payload_with_s3_encoding(proxy, upstream):
    code, _ = proxy.curl("https://api.test/bucket/my%20key?list-type=2&prefix=a%2Fb", "-X", "PUT",
                         "-H", "x-amz-acl: private", "--data-binary", "large upload", *AGENT)
    assert code == 200
    got = seen(upstream, "/bucket/")
    assert got["headers"]["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD"
    # S3 refuses x-amz-* headers left unsigned: the agent's are signed too.
    assert "x-amz-acl;" in got["headers"]["authorization"]
    assert "/eu-west-1/s3/aws4_request" in got["headers"]["authorization"]
    assert sigv4_valid(got, SECRET) is True
    assert got["body"] == "large upload"


def test_chunk_signed_streaming_is_refused(proxy, upstream):
    code, body = proxy.curl("https://creds.test/stream", "-X", "PUT", "-H",
                            "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                            "--data-binary", "x")
    assert code == 400 and json.loads(body)["reason"] == "signing_payload_unsupported", body
    assert seen(upstream, "/stream") is None
    # Control: the unsigned streaming mode is signed and sent.
    code, _ = proxy.curl("https://creds.test/stream2", "-X", "PUT", "-H",
                         "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                         "--data-binary", "x")
    assert code == 200 and sigv4_valid(seen(upstream, "/stream2"), SECRET) is True


def test_plain_http_is_never_signed(proxy, upstream):
    code, body = proxy.curl("http://creds.test:443/clear", *AGENT)
    assert code == 403 and json.loads(body)["reason"] == "credential_plaintext", body
    assert seen(upstream, "/clear") is None


def test_region_must_be_known(proxy, upstream):
    """upstream.test names no AWS region and the endpoint sets none."""
    code, body = proxy.curl("https://upstream.test/sts", *AGENT)
    assert code == 403 and json.loads(body)["reason"] == "signing_region_unknown", body
    assert seen(upstream, "/sts") is None


def test_signing_keys_are_never_substituted_raw(proxy, upstream):
    """A placeholder of the signing keys in another header would send the
    secret key itself: on a signing endpoint no placeholder is replaced."""
    code, body = proxy.curl("https://creds.test/raw", "-H",
                            "X-Leak: openshell:resolve:env:AWS_SECRET_ACCESS_KEY")
    assert code == 403 and json.loads(body)["reason"] == "credential_signing_only", body
    assert seen(upstream, "/raw") is None
    # Control: the same request without it is signed and sent.
    code, _ = proxy.curl("https://creds.test/raw2", "-H", "X-Fine: 1")
    assert code == 200 and sigv4_valid(seen(upstream, "/raw2"), SECRET, b"") is True


LEAK_POLICY = POLICY + f"""
  slack:
    endpoints:
      - host: other.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: slack }}
        request_body_credential_rewrite: true
    binaries:
      - {{ path: /usr/bin/curl }}
"""


def test_signing_and_body_rewrite_under_leak_checker(upstream, monkeypatch, tmp_path):
    """Signed requests (body hashed, unsigned, refused) and body placeholders
    (resolved, chunked, refused, oversized): no leak, no memory error."""
    san = proxy_util.SAN_PROXY_BIN
    if not os.access(san, os.X_OK):
        pytest.fail(f"sanitizer build missing: {san} (make build-san)")
    monkeypatch.setattr(proxy_util, "PROXY_BIN", san)
    monkeypatch.setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=23")
    creds = {"providers": dict(CREDS["providers"], slack={"SLACK_TOKEN": "xoxb-leak-s3cret"})}
    p = Proxy(upstream, LEAK_POLICY, credentials=creds)
    ph = "openshell:resolve:env:SLACK_TOKEN"
    big = tmp_path / "big"
    big.write_text(f"t={ph}&" + "a" * (130 * 1024))
    try:
        for _ in range(3):
            assert p.curl("https://creds.test/m", "-X", "POST", "--data-binary", "{}",
                          *AGENT)[0] == 200
            assert p.curl("https://api.test/b/k", "-X", "PUT", "--data-binary", "x")[0] == 200
            assert p.curl("https://creds.test/s", "-X", "PUT", "-H",
                          "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD")[0] == 400
            assert p.curl("https://creds.test/r", "-H", "X-Leak: openshell:resolve:env:"
                          "AWS_SECRET_ACCESS_KEY")[0] == 403
            assert p.curl("https://other.test/f", "--data-binary", f"t={ph}")[0] == 200
            assert p.curl("https://other.test/c", "-H", "Transfer-Encoding: chunked",
                          "--data-binary", f"t={ph}")[0] == 200
            assert p.curl("https://other.test/u", "--data-binary",
                          "t=openshell:resolve:env:NOPE")[0] == 403
            assert p.curl("https://other.test/big", "--data-binary", f"@{big}")[0] == 413
    finally:
        err = stop_sanitized(p)
    assert_sanitizer_clean(p, err)
