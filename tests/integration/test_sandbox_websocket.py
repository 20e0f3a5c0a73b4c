"""A real WebSocket client (python3-websockets, tests/integration/ws_agent.py)
as the agent of a real sandbox (openshell-supervisor, inpod backend: its own
network namespace, the launcher's Landlock and seccomp, an unprivileged uid),
over wss:// through the supervisor's proxy and its TLS termination, to a real
WebSocket server: allowed messages are echoed, a denied one closes the
connection with 1008 and never reaches the server; a network_middlewares
redactor rewrites a key in a message before it leaves, and GraphQL over
WebSocket is judged by the endpoint's graphql rules."""
import json
import os
import sys

import pytest

from tests.lib import agent_sandbox, build
from tests.lib.adv_util import UPSTREAM_IP, Upstream

pytest.importorskip("websockets")
from tests.integration.ws_util import TLS_PORT, WsServers  # noqa: E402

pytestmark = build.needs("openshell-supervisor", "openshell-sandbox")
AGENT = os.path.join(build.TESTS, "integration", "ws_agent.py")

NETWORK = f"""
  chat:
    endpoints:
      - host: upstream.test
        port: {TLS_PORT}
        allowed_ips: ["{UPSTREAM_IP}/32"]
        protocol: websocket
        rules:
          - allow: {{ method: GET, path: "/**" }}
          - allow: {{ method: WEBSOCKET_TEXT, path: /chat }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


@pytest.fixture(scope="module")
def upstream():
    up = Upstream().start()
    up.ws = WsServers(up, addr=UPSTREAM_IP)
    yield up
    up.stop()


# The same sandbox with a redactor on upstream.test and a GraphQL endpoint
# (network_middlewares is a top-level key: it follows network_policies).
L7_NETWORK = NETWORK + f"""
  graphql:
    endpoints:
      - host: gql.test
        port: {TLS_PORT}
        allowed_ips: ["{UPSTREAM_IP}/32"]
        protocol: websocket
        rules:
          - allow: {{ method: GET, path: /graphql }}
          - allow: {{ operation_type: subscription, fields: [messageAdded] }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
network_middlewares:
  redactor:
    middleware: openshell/regex
    endpoints: {{ include: [upstream.test] }}
"""


def run_agent(upstream, *steps, network=NETWORK, host="upstream.test"):
    return agent_sandbox.run(network, [sys.executable, AGENT, f"{host}:{TLS_PORT}", *steps],
                             read_only=[os.path.dirname(AGENT)], tag="ws",
                             names=("upstream.test", "gql.test"),
                             extra=["--upstream-ca", f"{upstream.dir}/ca.pem"])


def test_websocket_client_in_a_sandbox(upstream):
    upstream.ws.clear()
    out, records = run_agent(upstream, "/chat=hello|again", "/other=not here")
    assert out[0] == {"path": "/chat", "got": ["hello", "again"], "code": None}, out
    assert out[1] == {"path": "/other", "got": [], "code": 1008}, out
    assert [m["data"] for m in upstream.ws.messages()] == ["hello", "again"]
    judged = [r for r in records if r.get("event") == "websocket" and
              r.get("method") == "WEBSOCKET_TEXT"]
    assert [r["decision"] for r in judged] == ["allow", "allow", "deny"]
    assert all(r.get("binary", "").startswith("/usr/bin/python3") for r in judged)


def test_middleware_and_graphql_over_websocket_in_a_sandbox(upstream):
    upstream.ws.clear()
    key = "sk-" + "Q7" * 10
    out, records = run_agent(upstream, f"/chat=use {key} now|no key", network=L7_NETWORK)
    assert out == [{"path": "/chat", "got": ["use [REDACTED] now", "no key"], "code": None}], out
    assert [m["data"] for m in upstream.ws.messages()] == ["use [REDACTED] now", "no key"]
    assert [r for r in records if r.get("reason") == "middleware_redacted"]
    assert key not in json.dumps(records)
    upstream.ws.clear()
    ok = json.dumps({"type": "subscribe", "id": "1",
                     "payload": {"query": "subscription { messageAdded }"}})
    hidden = json.dumps({"type": "subscribe", "id": "2",
                         "payload": {"query": "subscription { a: messageAdded b: adminLog }"}})
    out, records = run_agent(upstream, f"/graphql={ok}|{hidden}", network=L7_NETWORK,
                             host="gql.test")
    assert out == [{"path": "/graphql", "got": [ok], "code": 1008}], out
    assert [m["data"] for m in upstream.ws.messages()] == [ok]
    denied = [r for r in records if r.get("event") == "websocket" and r.get("decision") == "deny"]
    assert denied and denied[-1]["reason"] == "no_matching_rule"
