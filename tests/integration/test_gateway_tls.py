"""TLS and mTLS on the gateway's TCP listener, end to end with the real
gateway, CLI and supervisors: the CLI reaches an https:// gateway only with a
CA that signed its certificate; with tls_client_ca_file a certificate from
another CA fails the handshake, and a client without one gets through it but
is refused every admin route with a 403 that says what to set (supervisors,
which hold a sandbox token and no certificate, use the same port: see
test_supervisor_session_tls.py); a good certificate still needs the bearer
token; `sandbox exec`'s upgraded connection speaks TLS too; a bad
key or certificate stops the gateway at start with the file named. A
throwaway CA is made with the openssl command line; nothing leaves 127.0.0.1."""

import hashlib
import os
import socket
import ssl
import subprocess
import tempfile
import time
import warnings

import pytest

from tests.lib import build
from tests.lib.gateway_util import CLI, GATEWAY, Gateway, forward_answers, free_port, wait_for
from tests.lib.tls_util import (CLIENT_EXT, SERVER_EXT, client_ctx, make_pki, remove_pki, tls_env,
                      tls_gateway_env)

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

EXEC_POLICY = """version: 1
filesystem_policy:
  include_workdir: true
  read_only: [/usr, /lib, /lib64, /bin, /etc, /proc, /dev/urandom]
  read_write: [/tmp, /dev/null]
"""


@pytest.fixture(scope="module")
def pki():
    p = make_pki({"server": ("ca", SERVER_EXT), "client": ("ca", CLIENT_EXT),
                  "rogue": ("other-ca", CLIENT_EXT)})
    yield p
    remove_pki(p)


def start(pki, client_ca=False):
    g = Gateway(extra_env=tls_gateway_env(pki, client_ca=client_ca),
                ssl_context=client_ctx(pki, "client" if client_ca else None))
    return g.start()


@pytest.fixture(scope="module")
def tls_gw(pki):
    g = start(pki)
    yield g
    g.cleanup()


@pytest.fixture(scope="module")
def mtls_gw(pki):
    g = start(pki, client_ca=True)
    pol = os.path.join(g.state_dir, "exec.yaml")
    with open(pol, "w") as f:
        f.write(EXEC_POLICY)
    g.exec_policy = pol
    yield g
    g.cleanup()


def test_cli_lists_sandboxes_over_https_with_the_ca(tls_gw, pki):
    r = tls_gw.cli("sandbox", "list", env=tls_env(tls_gw, ca=pki["ca.pem"]))
    assert r.returncode == 0, r
    assert r.stdout.splitlines()[0].split()[:2] == ["NAME", "PHASE"], r.stdout
    # The Unix socket stays plain (local supervisors and the CLI's default use it).
    r = tls_gw.cli("sandbox", "list")
    assert r.returncode == 0, r


def test_plain_http_to_the_tls_port_fails_and_says_to_use_https(tls_gw, pki):
    r = tls_gw.cli("sandbox", "list", env={"OPENSHELL_GATEWAY": f"http://127.0.0.1:{tls_gw.port}"})
    assert r.returncode == 1 and "use https://" in r.stderr, r
    with socket.create_connection(("127.0.0.1", tls_gw.port), timeout=10) as s:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400") and b"tls_required" in answer, answer
    assert b'"status":"ok"' not in answer


def test_a_gateway_certificate_from_another_ca_is_refused(tls_gw, pki):
    r = tls_gw.cli("sandbox", "list", env=tls_env(tls_gw, ca=pki["other-ca.pem"]))
    assert r.returncode == 1, r
    assert "not signed by OPENSHELL_TLS_CA" in r.stderr, r.stderr
    # Without OPENSHELL_TLS_CA the system roots do not know the throwaway CA either.
    r = tls_gw.cli("sandbox", "list", env=tls_env(tls_gw))
    assert r.returncode == 1 and "set OPENSHELL_TLS_CA" in r.stderr, r.stderr


def test_only_tls_1_2_and_newer_is_spoken(tls_gw, pki):
    ctx = client_ctx(pki)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection(("127.0.0.1", tls_gw.port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            assert s.version() == "TLSv1.2"
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.check_hostname = False
    old.verify_mode = ssl.CERT_NONE
    old.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():  # deprecated on purpose: the gateway must refuse it
        warnings.simplefilter("ignore", DeprecationWarning)
        old.minimum_version = ssl.TLSVersion.TLSv1
        old.maximum_version = ssl.TLSVersion.TLSv1_1
    with socket.create_connection(("127.0.0.1", tls_gw.port), timeout=10) as raw:
        with pytest.raises(ssl.SSLError) as e:
            old.wrap_socket(raw, server_hostname="127.0.0.1")
    # The server's protocol_version alert, not a client unable to offer TLS 1.1.
    assert "PROTOCOL_VERSION" in str(e.value).upper(), e.value


def test_mtls_without_a_client_certificate_is_refused_admin_routes(mtls_gw, pki):
    # The handshake succeeds without a certificate (supervisors have none)...
    noc = Gateway(state_dir=mtls_gw.state_dir, ssl_context=client_ctx(pki))
    noc.port = mtls_gw.port
    assert noc.request("GET", "/v1/health", token=None)[0] == 200
    # ...but no admin route answers, even with the admin token.
    for method, path in (("GET", "/v1/sandboxes"), ("GET", "/v1/gateway/status"),
                         ("POST", "/v1/sandboxes")):
        st, body = noc.request(method, path)
        assert st == 403, (path, st, body)
        assert body["error"] == "client_certificate_required", body
        assert "OPENSHELL_TLS_CERT" in body["message"], body
    # Positive control: the same request with the client certificate.
    assert mtls_gw.request("GET", "/v1/sandboxes")[0] == 200
    r = mtls_gw.cli("sandbox", "list", env=tls_env(mtls_gw, ca=pki["ca.pem"]))
    assert r.returncode == 1, r
    assert "requires a client certificate" in r.stderr and "OPENSHELL_TLS_CERT" in r.stderr \
        and "OPENSHELL_TLS_KEY" in r.stderr, r.stderr


def test_mtls_refuses_a_client_certificate_from_another_ca(mtls_gw, pki):
    r = mtls_gw.cli("sandbox", "list", env=tls_env(mtls_gw, ca=pki["ca.pem"],
                                                   cert=pki["rogue.pem"], key=pki["rogue.key"]))
    assert r.returncode == 1, r
    assert "refused the client certificate" in r.stderr, r.stderr
    with socket.create_connection(("127.0.0.1", mtls_gw.port), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            with client_ctx(pki, "rogue").wrap_socket(raw, server_hostname="127.0.0.1") as s:
                s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                assert s.recv(100) == b""


def test_mtls_with_a_good_certificate_still_needs_the_token(mtls_gw, pki):
    assert mtls_gw.request("GET", "/v1/sandboxes")[0] == 200
    st, body = mtls_gw.request("GET", "/v1/sandboxes", token="not-the-token")
    assert st == 401, body
    r = mtls_gw.cli("sandbox", "list", env=dict(
        tls_env(mtls_gw, ca=pki["ca.pem"], cert=pki["client.pem"], key=pki["client.key"]),
        OPENSHELL_TOKEN="not-the-token"))
    assert r.returncode == 1 and "401" in r.stderr, r


def test_mtls_cli_lists_creates_and_execs(mtls_gw, pki):
    env = tls_env(mtls_gw, ca=pki["ca.pem"], cert=pki["client.pem"], key=pki["client.key"])
    r = mtls_gw.cli("sandbox", "list", env=env)
    assert r.returncode == 0, r
    r = mtls_gw.cli("sandbox", "create", "--name", "tlsbox", "--policy", mtls_gw.exec_policy,
                    "--detach", "--", "/bin/sh", "-c", "exec sleep 300", env=env)
    assert r.returncode == 0 and "Ready" in r.stdout, r
    r = mtls_gw.cli("sandbox", "list", env=env)
    assert any(l.split()[:2] == ["tlsbox", "Ready"] for l in r.stdout.splitlines()[1:]), r.stdout
    # The upgraded exec connection: stdin in, both streams and the exit code back.
    def exec_(script, stdin=b""):
        return subprocess.run([CLI, "sandbox", "exec", "tlsbox", "--", "/bin/sh", "-c", script],
                              env=dict(mtls_gw.env, **env), input=stdin, capture_output=True,
                              timeout=90)
    r = exec_("echo out-$(cat); echo err >&2; exit 7", stdin=b"in")
    assert (r.returncode, r.stdout, r.stderr) == (7, b"out-in\n", b"err\n"), r
    # More than any TLS record, frame or relay buffer, both ways.
    blob = os.urandom(2 << 20)
    r = exec_("sha256sum | cut -d' ' -f1; yes | head -c 3000000", stdin=blob)
    assert r.returncode == 0, r.stderr
    assert r.stdout == hashlib.sha256(blob).hexdigest().encode() + b"\n" + b"y\n" * 1500000
    # A foreground create's attached stdio over TLS: stdin and stdout at once
    # (cat), so the CLI's non-blocking TLS writes meet reads all the way.
    blob = os.urandom(4 << 20)
    r = subprocess.run([CLI, "sandbox", "create", "--name", "tlsfg", "--policy",
                        mtls_gw.exec_policy, "--", "cat"], env=dict(mtls_gw.env, **env),
                       input=blob, capture_output=True, timeout=120)
    assert (r.returncode, r.stdout == blob) == (0, True), (r.returncode, len(r.stdout),
                                                           r.stderr[-500:])
    # The same exec without a client certificate never reaches the sandbox.
    r = mtls_gw.cli("sandbox", "exec", "tlsbox", "--", "/bin/true",
                    env=tls_env(mtls_gw, ca=pki["ca.pem"]))
    assert r.returncode == 1 and "requires a client certificate" in r.stderr, r
    # upload / download / port-forward ride the same TLS connection kind
    # (docs/files.md): a file larger than any record both ways, one echo.
    up = os.path.join(mtls_gw.state_dir, "up.bin")
    with open(up, "wb") as f:
        f.write(blob)
    r = mtls_gw.cli("sandbox", "upload", "tlsbox", up, env=env)
    assert r.returncode == 0, r
    down = os.path.join(mtls_gw.state_dir, "down.bin")
    r = mtls_gw.cli("sandbox", "download", "tlsbox", "up.bin", down, env=env)
    assert r.returncode == 0 and open(down, "rb").read() == blob, r
    exec_("nohup /usr/bin/python3 -c \"import socket; s = socket.socket(); "
          "s.bind(('127.0.0.1', 7000)); s.listen(); c = s.accept()[0]; "
          "c.sendall(c.recv(9).upper())\" >/dev/null 2>&1 &")
    port = free_port()
    p = subprocess.Popen([CLI, "sandbox", "port-forward", "tlsbox", f"{port}:7000"],
                         env=dict(mtls_gw.env, **env), stderr=subprocess.PIPE)
    try:
        wait_for(lambda: forward_answers(port, b"over-tls!", b"OVER-TLS!"), timeout=30,
                 what="an echo through the forward over TLS")
    finally:
        p.terminate()
        p.communicate(timeout=10)


def test_a_stalled_handshake_is_closed_by_the_head_deadline(tls_gw, pki):
    with socket.create_connection(("127.0.0.1", tls_gw.port), timeout=60) as s:
        s.sendall(b"\x16\x03\x01\x02\x00")  # a ClientHello record header, then nothing
        t0 = time.monotonic()
        assert s.recv(100) == b""
        waited = time.monotonic() - t0
    # The 5 s deadline for a request head (handshake included), not an
    # immediate refusal and not the 30 s idle timeout of a request under way.
    assert 3 < waited < 20, waited
    assert tls_gw.request("GET", "/v1/health", token=None)[0] == 200


def run_gateway(pki, *args, env=None):
    sd = tempfile.mkdtemp(prefix="osgw-", dir="/var/tmp")
    try:
        return subprocess.run([GATEWAY, "--state-dir", sd, "--listen",
                               f"127.0.0.1:{free_port()}", *args],
                              env=dict(os.environ, **(env or {})), capture_output=True,
                              text=True, timeout=20)
    finally:
        subprocess.run(["rm", "-rf", sd])


def test_bad_tls_configuration_stops_the_gateway_naming_the_file(pki):
    d = pki["dir"]
    loose = os.path.join(d, "loose.key")
    with open(pki["server.key"]) as f, open(loose, "w") as g:
        g.write(f.read())
    os.chmod(loose, 0o644)
    garbage = os.path.join(d, "garbage.key")
    with open(garbage, "w") as f:
        f.write("not a key\n")
    os.chmod(garbage, 0o600)
    missing = os.path.join(d, "missing.key")
    cases = [
        (["--tls-cert", pki["server.pem"]], ["tls_cert_file", "tls_key_file", "both"]),
        (["--tls-cert", pki["server.pem"], "--tls-key", loose], [loose, "0644"]),
        (["--tls-cert", pki["server.pem"], "--tls-key", missing], [missing, "No such file"]),
        (["--tls-cert", pki["server.pem"], "--tls-key", garbage], [garbage]),
        (["--tls-cert", pki["server.pem"], "--tls-key", pki["client.key"]],
         [pki["client.key"], "not the key of"]),
        (["--tls-cert", pki["server.pem"], "--tls-key", pki["server.key"],
          "--tls-client-ca", missing], [missing]),
        (["--tls-client-ca", pki["ca.pem"]], ["tls_client_ca_file", pki["ca.pem"]]),
    ]
    for args, words in cases:
        r = run_gateway(pki, *args)
        assert r.returncode != 0, (args, r.stderr)
        for w in words:
            assert w in r.stderr, (args, w, r.stderr)
    # The same settings through the environment are read the same way.
    r = run_gateway(pki, env={"OPENSHELL_GATEWAY_TLS_CERT_FILE": pki["server.pem"],
                              "OPENSHELL_GATEWAY_TLS_KEY_FILE": loose})
    assert r.returncode != 0 and loose in r.stderr, r.stderr
