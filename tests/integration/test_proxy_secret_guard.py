"""An upstream that received a secret is known by its address too, not only
by the name the secret was sent to (issue 16): another allowed name for the
same server gets its answers scrubbed, and an uninspected L4 tunnel to it is
refused, including one opened before the secret went out. Every name here
resolves to the one test upstream; each refusal has an allowed twin."""
import json
import socket
import ssl


from tests.lib import build
from tests.lib.proxy_util import credential_fixtures

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  bound:
    endpoints:
      - host: creds.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
        credential_binding: {{ provider: github }}
    binaries:
      - {{ path: /usr/bin/curl }}
  others:
    endpoints:
      - host: api.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: full
      - host: other.test
        port: 443
        allowed_ips: {NET}
      - host: upstream.test
        port: 8443
        allowed_ips: {NET}
    binaries:
      - {{ path: /usr/bin/curl }}
      - {{ path: /usr/bin/python3* }}
"""
SECRET = "guard-s3cret-value"
PH = "Bearer openshell:resolve:env:GITHUB_TOKEN"


# A fresh proxy per test: which upstreams hold a secret is per proxy.
upstream, proxy = credential_fixtures(POLICY, {"github": {"GITHUB_TOKEN": SECRET}})


def send_secret(proxy):
    code, _ = proxy.curl("https://creds.test/first", "-H", f"Authorization: {PH}")
    assert code == 200


def tunnel(proxy, host, port, upstream):
    return proxy.curl(f"https://{host}:{port}/t", "--cacert", f"{upstream.dir}/ca.pem")[0]


def test_another_name_for_the_same_server_is_scrubbed(proxy):
    code, body = proxy.curl("https://api.test/last-auth")
    assert code == 200  # control: nothing was sent yet, nothing to scrub
    send_secret(proxy)
    code, body = proxy.curl("https://api.test/last-auth")
    assert code == 200 and SECRET not in body
    assert json.loads(body)["last"] == "Bearer " + "*" * len(SECRET)


def test_tunnel_to_a_secret_holding_address_is_refused(proxy, upstream):
    assert tunnel(proxy, "other.test", 443, upstream) == 200  # control: before the secret
    send_secret(proxy)
    out = proxy.raw(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 403 Forbidden by policy: tunnel_to_secret_holder"), out[:200]
    rec = proxy.last_audit(host="other.test", decision="deny")
    assert rec and rec["reason"] == "tunnel_to_secret_holder"
    # The same server on a port that never received a secret stays open.
    assert tunnel(proxy, "upstream.test", 8443, upstream) == 200


def read_response(sock):
    """One whole Content-Length framed response."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
              if l.lower().startswith(b"content-length:")][0]
    while len(body) < length:
        body += sock.recv(4096)
    return head


def test_tunnel_opened_before_the_secret_is_closed_when_it_goes_out(proxy, upstream):
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    try:
        s.sendall(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        # Finish the handshake through the tunnel (the test upstream accepts
        # TLS connections one at a time), and prove the tunnel works.
        ctx = ssl.create_default_context(cafile=f"{upstream.dir}/ca.pem")
        t = ctx.wrap_socket(s, server_hostname="other.test")
        t.sendall(b"GET /before HTTP/1.1\r\nHost: other.test\r\n\r\n")
        assert read_response(t).startswith(b"HTTP/1.1 200")
        send_secret(proxy)
        t.settimeout(5)
        try:
            rest = t.recv(4096)
        except (ssl.SSLError, ConnectionError):
            rest = b""
        assert rest == b"", "the tunnel to the secret holder stayed open"
    finally:
        s.close()
    rec = proxy.last_audit(host="other.test", reason="tunnel_to_secret_holder")
    assert rec and rec["decision"] == "deny"
