"""host.openshell.internal from inside a real sandbox (issue 19): with
`--host-gateway proxy`, what the local driver passes, the alias reaches a
service on the host at the host side of the sandbox's veth, through the
proxy and only as the policy allows that address (it is internal, so
allowed_ips must name it, as upstream requires for a non-link-local
gateway). The service listens on every address of this (test) host."""
import http.server
import threading

import pytest

from tests.lib import build
from tests.lib.boundary_util import Supervisor

pytestmark = [build.needs("openshell-supervisor", "openshell-sandbox"),
              pytest.mark.skipif(__import__("os").geteuid() != 0,
                                 reason="needs root (network namespaces)")]

PORT = 18089
POLICY = f"""version: 1
filesystem_policy:
  include_workdir: false
  read_only: [/]
  read_write: [/tmp, /dev/null]
network_policies:
  host_service:
    endpoints:
      - {{ host: host.openshell.internal, port: {PORT}, allowed_ips: ["10.200.0.0/16"] }}
      - {{ host: host.docker.internal, port: {PORT} }}
    binaries: [{{ path: /usr/bin/curl }}]
"""


class Hits(http.server.BaseHTTPRequestHandler):
    seen = []

    def do_GET(self):
        Hits.seen.append((self.path, self.client_address[0], self.headers.get("Host")))
        body = b"host-service-answer"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def host_service():
    srv = http.server.ThreadingHTTPServer(("0.0.0.0", PORT), Hits)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    Hits.seen.clear()
    yield Hits.seen
    srv.shutdown()
    srv.server_close()


def run_agent(script, extra):
    sup = Supervisor("hgw", ["/bin/sh", "-c", script], policy=POLICY, extra=extra).start()
    try:
        rc, out, err = sup.wait()
        return out, err, sup.records()
    finally:
        sup.stop()


CURL = "/usr/bin/curl -s -m 10 -o - -w ' %{http_code}\\n'"


def test_the_alias_reaches_the_host_through_the_policy(host_service):
    out, err, records = run_agent(
        f"{CURL} http://host.openshell.internal:{PORT}/ok; "
        f"{CURL} http://host.docker.internal:{PORT}/no", ("--host-gateway", "proxy"))
    lines = out.splitlines()
    assert "host-service-answer 200" in lines, (out, err)
    assert [p for p, _, _ in host_service] == ["/ok"], (host_service, out, err)
    _, peer, host = host_service[0]
    assert peer.startswith("10.200.") and peer.endswith(".1") and host.startswith(
        "host.openshell.internal")
    # host.docker.internal names the same host, but its endpoint has no
    # allowed_ips for that internal address: refused, nothing sent.
    denied = out.split("host-service-answer 200", 1)[1]
    assert '"error":"ssrf_denied"' in denied and denied.strip().endswith("403"), out
    assert any(r.get("reason") == "ssrf_internal_address" and r.get("host") ==
               "host.docker.internal" for r in records), records


def test_without_the_gateway_the_alias_is_not_the_host(host_service):
    out, err, records = run_agent(f"{CURL} http://host.openshell.internal:{PORT}/ok",
                                  ("--dns", "192.0.2.53"))
    assert not host_service, (out, err)
    assert "host-service-answer" not in out
