"""request_body_credential_rewrite (issue 19; upstream docs policies/schema.mdx:
placeholders in UTF-8 JSON, form and text REST bodies). A placeholder in a
body is resolved only for the endpoint that admitted the request and binds
the provider, only inside TLS, whatever the framing (split across TCP
segments, across chunks); compressed and binary bodies are not touched; a
text body too large to read whole is refused. Each refusal has an allowed
twin."""
import gzip
import json
import socket
import ssl
import time

from tests.lib import build
from tests.lib.http_util import read_head
from tests.lib.proxy_util import module_fixtures

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  slack:
    endpoints:
      - host: creds.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: slack }}
        request_body_credential_rewrite: true
      - host: upstream.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: slack }}
    binaries:
      - {{ path: /usr/bin/curl }}
      - {{ path: /usr/bin/python3* }}
  unbound:
    endpoints:
      - host: api.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        request_body_credential_rewrite: true
    binaries:
      - {{ path: /usr/bin/curl }}
"""
SECRET = "xoxb-body-s3cret-value"
PH = "openshell:resolve:env:SLACK_TOKEN"


upstream, proxy, clean_log = module_fixtures(
    POLICY, credentials={"providers": {"slack": {"SLACK_TOKEN": SECRET}}})


def seen(upstream, path):
    got = [q for q in upstream.requests() if q["path"] == path]
    return got[0] if got else None


def post(proxy, url, body, ctype="application/x-www-form-urlencoded", *extra):
    return proxy.curl(url, "-X", "POST", "-H", f"Content-Type: {ctype}", "--data-binary", body,
                      *extra)


def test_form_body_placeholder_is_resolved_and_length_recomputed(proxy, upstream):
    code, body = post(proxy, "https://creds.test/api/auth.test", f"token={PH}&x=1")
    assert code == 200, body
    got = seen(upstream, "/api/auth.test")
    assert got["body"] == f"token={SECRET}&x=1"
    assert got["headers"]["content-length"] == str(len(got["body"]))
    assert SECRET not in body  # the echo is scrubbed on its way back
    code, _ = post(proxy, "https://creds.test/json", json.dumps({"t": PH, "n": 2}),
                   "application/json; charset=utf-8")
    assert code == 200 and json.loads(seen(upstream, "/json")["body"])["t"] == SECRET


def test_bound_endpoint_without_the_flag_refuses_a_body_placeholder(proxy, upstream):
    """OpenShell's fail-closed body check (proxy_body_scan.c): a bound
    endpoint that neither rewrites bodies nor allows uninspected credentials
    refuses a body that holds a placeholder; one without passes."""
    code, body = post(proxy, "https://upstream.test/plainflag", f"token={PH}")
    assert code == 403 and json.loads(body)["reason"] == "credential_in_body", body
    assert seen(upstream, "/plainflag") is None
    code, _ = post(proxy, "https://upstream.test/plainflag-none", "token=none")
    assert code == 200 and seen(upstream, "/plainflag-none")["body"] == "token=none"


def test_placeholder_to_an_endpoint_that_binds_no_provider_is_refused(proxy, upstream):
    code, body = post(proxy, "https://api.test/steal", f"token={PH}")
    assert code == 403 and json.loads(body)["reason"] == "credential_endpoint_mismatch", body
    assert seen(upstream, "/steal") is None
    # Control: a body without a placeholder goes there as it is.
    code, _ = post(proxy, "https://api.test/fine", "token=none")
    assert code == 200 and seen(upstream, "/fine")["body"] == "token=none"


def test_plain_http_to_the_bound_port_is_refused(proxy, upstream):
    code, body = post(proxy, "http://creds.test:443/clear", f"token={PH}")
    assert code == 403 and json.loads(body)["error"] == "credential_plaintext", body
    assert seen(upstream, "/clear") is None


def test_unknown_placeholder_is_refused(proxy, upstream):
    code, body = post(proxy, "https://creds.test/unknown", "token=openshell:resolve:env:NOPE")
    assert code == 403 and json.loads(body)["reason"] == "credential_unknown", body
    assert seen(upstream, "/unknown") is None


def tls_to(proxy, host):
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    s.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    ctx = ssl.create_default_context(cafile=proxy.ca)
    return ctx.wrap_socket(s, server_hostname=host)


def send_in_pieces(proxy, head, pieces):
    t = tls_to(proxy, "creds.test")
    try:
        t.sendall(head)
        for p in pieces:
            time.sleep(0.15)  # separate reads on the proxy's side
            t.sendall(p)
        return read_head(t)[0]
    finally:
        t.close()


def test_placeholder_split_across_tcp_segments(proxy, upstream):
    body = f"token={PH}".encode()
    cut = len("token=") + 10  # inside the placeholder
    head = (b"POST /segments HTTP/1.1\r\nHost: creds.test\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body))
    out = send_in_pieces(proxy, head, [body[:cut], body[cut:cut + 7], body[cut + 7:]])
    assert out == 200
    assert seen(upstream, "/segments")["body"] == f"token={SECRET}"


def test_placeholder_split_across_chunks(proxy, upstream):
    body = f"token={PH}&z=9".encode()
    pieces = [body[i:i + 5] for i in range(0, len(body), 5)]
    framed = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces] + [b"0\r\n\r\n"]
    head = (b"POST /chunks HTTP/1.1\r\nHost: creds.test\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    out = send_in_pieces(proxy, head, framed)
    assert out == 200
    got = seen(upstream, "/chunks")
    assert got["body"] == f"token={SECRET}&z=9"
    assert got["headers"]["content-length"] == str(len(got["body"]))
    assert "transfer-encoding" not in got["headers"]
    # Control: a chunked body without a placeholder keeps its framing.
    out = send_in_pieces(proxy, head.replace(b"/chunks", b"/chunks2"),
                         [b"5\r\nhello\r\n", b"0\r\n\r\n"])
    assert out == 200
    assert seen(upstream, "/chunks2")["headers"]["transfer-encoding"] == "chunked"


def test_compressed_and_binary_bodies_are_not_touched(proxy, upstream):
    packed = gzip.compress(f"token={PH}".encode())
    head = (b"POST /gz HTTP/1.1\r\nHost: creds.test\r\nContent-Type: application/json\r\n"
            b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(packed))
    out = send_in_pieces(proxy, head, [packed])
    assert out == 200
    got = seen(upstream, "/gz")
    assert got["headers"]["content-length"] == str(len(packed))
    assert got["headers"]["content-encoding"] == "gzip"
    code, _ = post(proxy, "https://creds.test/bin", f"token={PH}", "application/octet-stream")
    assert code == 200 and seen(upstream, "/bin")["body"] == f"token={PH}"
    # Control: the same text as text/plain is resolved.
    code, _ = post(proxy, "https://creds.test/txt", f"token={PH}", "text/plain")
    assert code == 200 and seen(upstream, "/txt")["body"] == f"token={SECRET}"


def test_oversized_text_body_is_refused_not_sent_unresolved(proxy, upstream, tmp_path):
    cap = 128 * 1024
    big = tmp_path / "big"
    big.write_text(f"token={PH}&pad=" + "a" * cap)
    code, body = post(proxy, "https://creds.test/big", f"@{big}")
    assert code == 413 and json.loads(body)["reason"] == "request_body_too_large", body
    assert seen(upstream, "/big") is None
    code, body = post(proxy, "https://creds.test/bigchunks", f"@{big}",
                      "application/x-www-form-urlencoded", "-H", "Transfer-Encoding: chunked")
    assert code == 413 and json.loads(body)["reason"] == "request_body_too_large", body
    assert seen(upstream, "/bigchunks") is None
    # Control: the same placeholder in a body just under the cap is resolved.
    fits = tmp_path / "fits"
    head = f"token={PH}&pad="
    fits.write_text(head + "a" * (cap - len(head)))
    code, body = post(proxy, "https://creds.test/fits", f"@{fits}")
    assert code == 200, body[:200]
    assert seen(upstream, "/fits")["body"].startswith(f"token={SECRET}&pad=")


def test_expect_100_continue_is_answered_while_the_body_is_read_whole(proxy, upstream):
    """curl waits 20 s for a 100 here, longer than its 10 s limit: it gets
    through only because the proxy answers 100 itself (the upstream would
    only see the request once the body is whole)."""
    code, body = post(proxy, "https://creds.test/expect", f"token={PH}",
                      "application/x-www-form-urlencoded", "-H", "Expect: 100-continue",
                      "--expect100-timeout", "20")
    assert code == 200, body
    got = seen(upstream, "/expect")
    assert got["body"] == f"token={SECRET}" and "expect" not in got["headers"]
