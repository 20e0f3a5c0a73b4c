"""The supervisor's session with an https:// gateway, end to end with the real
gateway, local driver, supervisor and CLI: `--gateway https://127.0.0.1:PORT
--gateway-ca CA` holds the session over TLS (the gateway logs it opened), a
policy pushed with `policy set --wait` is loaded, and `sandbox exec` runs
through the relay's TLS connection, with mTLS configured too (supervisors
have no client certificate: their sandbox token is enough, while the admin
API still needs one). A gateway certificate from another CA, one that does
not name the host dialled, or plain http:// to the TLS port never opens a
session, and the supervisor says why.

The local driver hands its supervisors the gateway's Unix socket; the
gateway's supervisor_binary is pointed at a small wrapper that swaps that
for the TLS URL (read at exec time from a file beside it) and execs the real
openshell-supervisor, so everything else is the normal sandbox path. Nothing
leaves 127.0.0.1."""

import hashlib
import json
import os
import subprocess
import time

import pytest

from tests.lib import build
from tests.lib.gateway_util import CLI, SUPERVISOR, Gateway, supervisors_for, wait_for
from tests.lib.tls_util import (CLIENT_EXT, SERVER_EXT, client_ctx, make_pki, remove_pki, tls_env,
                      tls_gateway_env)

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

POLICY = """version: 1
filesystem_policy:
  include_workdir: true
  read_only: [/usr, /lib, /lib64, /bin, /etc, /proc, /dev/urandom]
  read_write: [/tmp, /dev/null]
"""
POLICY_V2 = POLICY + """network_policies:
  local:
    endpoints:
      - { host: upstream.test, port: 8443 }
    binaries:
      - { path: /usr/bin/curl }
"""

# Swaps the Unix socket the local driver hands over for the URL (and CA) in
# dial.json; the capability probe (`--gateway x`) goes through unchanged.
WRAPPER = """#!/usr/bin/python3
import json, os, sys
args = sys.argv[1:]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "dial.json")) as f:
    dial = json.load(f)
if "--gateway" in args and args.index("--gateway") + 1 < len(args) and \\
        args[args.index("--gateway") + 1].startswith("unix:"):
    i = args.index("--gateway")
    args[i + 1] = dial["url"]
    if dial.get("ca"):
        args[i:i] = ["--gateway-ca", dial["ca"]]
os.execv(%r, [%r] + args)
""" % (SUPERVISOR, SUPERVISOR)


@pytest.fixture(scope="module")
def pki():
    p = make_pki({"server": ("ca", SERVER_EXT), "client": ("ca", CLIENT_EXT)})
    yield p
    remove_pki(p)


def start(pki, client_ca=False):
    g = Gateway(ssl_context=client_ctx(pki, "client" if client_ca else None))
    wrapper = os.path.join(g.state_dir, "supervisor-tls")
    with open(wrapper, "w") as f:
        f.write(WRAPPER)
    os.chmod(wrapper, 0o755)
    g.extra_env = dict(tls_gateway_env(pki, client_ca=client_ca),
                       OPENSHELL_DRIVERS_LOCAL_SUPERVISOR_BINARY=wrapper)
    g.pki = pki
    g.cli_env = tls_env(g, ca=pki["ca.pem"], cert=client_ca and pki["client.pem"],
                        key=client_ca and pki["client.key"])
    g.start()
    dial(g, f"https://127.0.0.1:{g.port}", pki["ca.pem"])
    return g


def dial(g, url, ca):
    """What the next supervisor started by g dials, and with which CA."""
    with open(os.path.join(g.state_dir, "dial.json"), "w") as f:
        json.dump({"url": url, "ca": ca}, f)


@pytest.fixture(scope="module")
def tls_gw(pki):
    g = start(pki)
    yield g
    g.cleanup()


@pytest.fixture(scope="module")
def mtls_gw(pki):
    g = start(pki, client_ca=True)
    yield g
    g.cleanup()


def create(g, name, policy_path, ready=True):
    st, body = g.request("POST", "/v1/sandboxes", {
        "name": name, "command": ["/bin/sh", "-c", "exec sleep 300"],
        "policy": open(policy_path).read()})
    assert st in (200, 201, 202), body
    if ready:
        g.wait_phase(name, "Ready", timeout=30)
    return body["id"]


def supervisor_argv(g, sid):
    pids = wait_for(lambda: supervisors_for(sid), 10, what="the supervisor")
    with open(f"/proc/{pids[0]}/cmdline", "rb") as f:
        return [a.decode() for a in f.read().split(b"\0")]


def supervisor_log(g, sid):
    try:
        with open(os.path.join(g.sandbox_dir(sid), "supervisor.log"), errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def json_lines(text, component):
    """Every line of a log is one whole JSON record (docs/supervisor.md
    "Logging"): never a plain line, never two records run together."""
    records = []
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        assert line.endswith("}\n"), f"line {n} is not a whole record: {line!r}"
        rec = json.loads(line)
        assert rec["component"] == component and rec["level"] in (
            "debug", "info", "warn", "error") and rec["ts"] and "msg" in rec, line
        records.append(rec)
    return records


def revision_status(g, name, rev):
    st, body = g.request("GET", f"/v1/sandboxes/{name}/policies")
    assert st == 200, body
    return {r["revision"]: r["status"] for r in body["revisions"]}.get(rev)


def exec_(g, name, script, stdin=b""):
    return subprocess.run([CLI, "sandbox", "exec", name, "--", "/bin/sh", "-c", script],
                          env=dict(g.env, **g.cli_env), input=stdin, capture_output=True,
                          timeout=90)


def session_policy_and_exec(g, name, tmp_path):
    pol = tmp_path / "policy.yaml"
    pol.write_text(POLICY)
    sid = create(g, name, pol)
    argv = supervisor_argv(g, sid)
    # The supervisor dials the TLS port (not the Unix socket) with the CA.
    assert argv[argv.index("--gateway") + 1] == f"https://127.0.0.1:{g.port}", argv
    assert argv[argv.index("--gateway-ca") + 1] == g.pki["ca.pem"], argv
    assert f"sandbox {sid}: supervisor session opened" in g.log_text()
    wait_for(lambda: revision_status(g, name, 1) == "loaded", 10, what="revision 1 loaded")
    # A policy pushed over the TLS session, loaded and reported back over TLS.
    pol2 = tmp_path / "v2.yaml"
    pol2.write_text(POLICY_V2)
    r = g.cli("policy", "set", name, "--policy", str(pol2), "--wait", "--timeout", "15",
              env=g.cli_env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert revision_status(g, name, 2) == "loaded"
    assert "policy revision 2 loaded" in supervisor_log(g, sid)
    # sandbox exec: the relay dials back over TLS; stdin in, both streams
    # and the exit code back.
    r = exec_(g, name, "echo out-$(cat); echo err >&2; exit 7", stdin=b"in")
    assert (r.returncode, r.stdout, r.stderr) == (7, b"out-in\n", b"err\n"), r
    # More than any TLS record, frame or relay buffer, both ways: bytes left
    # decrypted inside OpenSSL must not stall the relay.
    blob = os.urandom(2 << 20)
    r = exec_(g, name, "sha256sum | cut -d' ' -f1; yes | head -c 3000000", stdin=blob)
    assert r.returncode == 0, r.stderr
    assert r.stdout == hashlib.sha256(blob).hexdigest().encode() + b"\n" + b"y\n" * 1500000
    # The agent (sleep) writes nothing: the log is the supervisor's records
    # alone, the running announcement and the pushed policy among them
    # (positive controls for the format check).
    msgs = [r["msg"] for r in json_lines(supervisor_log(g, sid), "openshell-supervisor")]
    assert any(m.startswith(f"sandbox {sid} running (backend inpod") for m in msgs), msgs
    assert any("policy revision 2 loaded" in m for m in msgs), msgs
    assert json_lines(g.log_text(), "openshell-gateway")
    return sid


def test_supervisor_session_policy_and_exec_over_tls(tls_gw, tmp_path):
    session_policy_and_exec(tls_gw, "tlssess", tmp_path)


def test_supervisor_session_policy_and_exec_with_mtls_configured(mtls_gw, tmp_path):
    session_policy_and_exec(mtls_gw, "mtlssess", tmp_path)
    # The supervisor holds its session without a client certificate, while
    # the admin API on the same port still wants one.
    r = mtls_gw.cli("sandbox", "list", env=tls_env(mtls_gw, ca=mtls_gw.pki["ca.pem"]))
    assert r.returncode == 1 and "requires a client certificate" in r.stderr, r
    r = mtls_gw.cli("sandbox", "list", env=mtls_gw.cli_env)
    assert r.returncode == 0 and "mtlssess" in r.stdout, r


def refused(g, name, url, ca, tmp_path, words, once=True):
    """A supervisor dialling url with ca never opens a session; its log says why."""
    pol = tmp_path / "policy.yaml"
    pol.write_text(POLICY)
    dial(g, url, ca)
    try:
        sid = create(g, name, pol, ready=False)
        # The driver starts the supervisor from its own loop: wait for it.
        argv = supervisor_argv(g, sid)
    finally:
        dial(g, f"https://127.0.0.1:{g.port}", g.pki["ca.pem"])
    assert argv[argv.index("--gateway") + 1] == url, argv
    assert (argv[argv.index("--gateway-ca") + 1] if ca else "--gateway-ca" not in argv) == \
        (ca or True), argv
    try:
        try:
            wait_for(lambda: all(w in supervisor_log(g, sid) for w in words), 20)
        except AssertionError:
            raise AssertionError(f"{words} not in the supervisor log:\n{supervisor_log(g, sid)}")
        log = supervisor_log(g, sid)
        assert [r for r in json_lines(log, "openshell-supervisor") if r["level"] == "warn"]
        assert f"sandbox {sid}: supervisor session opened" not in g.log_text()
        assert g.sandbox(name)["phase"] != "Ready"
        assert "connected to the gateway" not in log
        if once:  # a TLS failure is logged once, not at every retry
            tries = g.log_text().count("TLS handshake with")
            time.sleep(4)  # several redials (backoff 0.1 s doubling to 3 s)
            assert g.log_text().count("TLS handshake with") >= tries + 2  # it did retry
            assert supervisor_log(g, sid).count(words[0]) == 1, supervisor_log(g, sid)
    finally:
        g.request("DELETE", f"/v1/sandboxes/{name}")
    return sid


def test_a_gateway_certificate_from_another_ca_never_opens_a_session(tls_gw, pki, tmp_path):
    refused(tls_gw, "wrongca", f"https://127.0.0.1:{tls_gw.port}", pki["other-ca.pem"],
            tmp_path, ["certificate verify failed", "--gateway-ca"])
    assert "TLS handshake with" in tls_gw.log_text()  # the gateway saw the alert
    # Positive control: the right CA on the same gateway.
    pol = tmp_path / "ok.yaml"
    pol.write_text(POLICY)
    create(tls_gw, "rightca", pol)


def test_a_certificate_for_another_host_name_is_refused(tls_gw, pki, tmp_path):
    # The certificate names IP 127.0.0.1; "localhost" dials the same address
    # but is a different name, so the certificate does not fit it.
    refused(tls_gw, "wrongname", f"https://localhost:{tls_gw.port}", pki["ca.pem"], tmp_path,
            ["certificate verify failed", "does not name the host"])


def test_plain_http_to_the_tls_port_is_refused(tls_gw, tmp_path):
    refused(tls_gw, "plainhttp", f"http://127.0.0.1:{tls_gw.port}", None, tmp_path,
            ["tls_required", "use https://"], once=False)
