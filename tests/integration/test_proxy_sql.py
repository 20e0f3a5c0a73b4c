"""protocol: sql through the proxy with a real client (issue 19). OpenShell
reserves SQL inspection: its validator accepts sql only under enforcement:
audit and its relay copies the stream both ways uninspected ("SQL L7 provider
not yet implemented, falling back to passthrough"). Here the same policy
loads (with a warning) and means the same: the connection is admitted by
host, port and binary and relayed as an L4 tunnel, so psql's own bytes
(SSLRequest, startup, simple queries) reach the server and its answers come
back; the endpoint's command rules judge nothing (a DROP the deny rule names
passes, as upstream). Fail closed where nothing can be inspected: a
fail_closed middleware selecting a sql host refuses the tunnel.

psql cannot speak HTTP CONNECT, so the test process (the caller the proxy
identifies) forwards psql's connection into a CONNECT tunnel."""
import json
import os
import shutil
import socket
import subprocess
import threading

import pytest

from tests.lib import build
from tests.lib.proxy_util import UPSTREAM_IP, module_fixtures

pytestmark = build.needs("openshell-proxy")

PG_SERVER = os.path.join(build.TESTS, "integration", "pg_wire_server.py")
PSQL = shutil.which("psql")
NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_middlewares:
  redactor:
    middleware: openshell/regex
    order: 10
    endpoints: {{ include: [other.test] }}
network_policies:
  db:
    endpoints:
      - host: plain.test
        port: 5432
        allowed_ips: {NET}
        protocol: sql
        enforcement: audit
        rules:
          - allow: {{ command: SELECT }}
        deny_rules:
          - command: DROP
      - {{ host: other.test, port: 5432, allowed_ips: {NET}, protocol: sql, access: full }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


upstream, proxy, clean_log = module_fixtures(POLICY)


@pytest.fixture(scope="module")
def pg_log(upstream):
    """The SQL server in the upstream namespace (stopped with it); its log."""
    log = os.path.join(upstream.dir, "pg.log")
    open(log, "w").close()
    p = subprocess.Popen(["ip", "netns", "exec", upstream.ns, "python3", PG_SERVER,
                          UPSTREAM_IP, "5432", log], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    assert p.stdout.readline().strip() == "ready"
    upstream.procs.append(p)
    return log


def queries(log):
    with open(log) as f:
        return [json.loads(line)["query"] for line in f if line.strip()]


class ConnectForwarder:
    """127.0.0.1:port; each connection is spliced into a CONNECT tunnel
    to host:port through the proxy (answers other than 200 are relayed to
    the client as they came, then the connection closes)."""

    def __init__(self, proxy, host, port):
        self.target = f"{host}:{port}"
        self.proxy = proxy
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(4)
        self.port = self.srv.getsockname()[1]
        self.answers = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        up, head = self.proxy.connect(self.target, timeout=10)
        self.answers.append(head)
        if not head.startswith(b"HTTP/1.1 200"):
            client.close()
            up.close()
            return
        up.settimeout(None)
        rest = head.split(b"\r\n\r\n", 1)[1]
        if rest:
            client.sendall(rest)

        def pump(a, b):
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        break
                    b.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    b.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        t = threading.Thread(target=pump, args=(up, client), daemon=True)
        t.start()
        pump(client, up)
        t.join(10)
        client.close()
        up.close()

    def close(self):
        self.srv.close()


def psql(port, sql):
    env = dict(os.environ, PGCONNECT_TIMEOUT="5", PGPASSWORD="unused")
    return subprocess.run([PSQL, f"host=127.0.0.1 port={port} user=agent dbname=app "
                           "sslmode=prefer", "-X", "-A", "-t", "-c", sql],
                          capture_output=True, text=True, timeout=20, env=env)


@pytest.mark.skipif(PSQL is None, reason="psql is not installed")
def test_psql_session_passes_as_an_l4_tunnel_as_upstream(proxy, pg_log):
    fwd = ConnectForwarder(proxy, "plain.test", 5432)
    try:
        r = psql(fwd.port, "SELECT 1")
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "ok"
        # Not inspected (upstream relays sql uninspected): the DROP its deny
        # rule names still reaches the server, byte for byte.
        r = psql(fwd.port, "DROP TABLE accounts")
        assert r.returncode == 0, r.stderr
        assert queries(pg_log)[-2:] == ["SELECT 1", "DROP TABLE accounts"]
    finally:
        fwd.close()
    assert all(a.startswith(b"HTTP/1.1 200") for a in fwd.answers)
    rec = proxy.last_audit(event="connect", host="plain.test")
    assert rec and rec["decision"] == "allow" and rec["policy"] == "db", rec


def test_fail_closed_middleware_refuses_an_uninspected_sql_tunnel(proxy, pg_log):
    out = proxy.raw(b"CONNECT other.test:5432 HTTP/1.1\r\nHost: other.test:5432\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 403") and b"middleware_uninspectable" in out
    # control: the host no middleware selects tunnels
    out = proxy.raw(b"CONNECT plain.test:5432 HTTP/1.1\r\nHost: plain.test:5432\r\n\r\n",
                    read=64, timeout=2)
    assert out.startswith(b"HTTP/1.1 200")
