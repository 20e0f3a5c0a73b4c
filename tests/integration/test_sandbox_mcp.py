"""The real MCP client (the `mcp` SDK) as the agent of a real sandbox
(openshell-supervisor, inpod backend: its own network namespace, the
launcher's Landlock and seccomp, an unprivileged uid), talking to a real MCP
server through the supervisor's proxy: allowed tools run, a refused one never
reaches the server, and a server notification the policy forbids is not
delivered, while the method profile's endpoint delivers it."""
import json
import os

import pytest

from tests.lib import agent_sandbox, build, mcp_util
from tests.lib.adv_util import UPSTREAM_IP, Upstream

pytestmark = build.needs("openshell-supervisor", "openshell-sandbox")

NETWORK = f"""
  tools:
    endpoints:
      - host: upstream.test
        port: 9000
        allowed_ips: ["{UPSTREAM_IP}/32"]
        protocol: mcp
        path: /mcp
        rules:
          - allow: {{ method: initialize }}
          - allow: {{ method: notifications/initialized }}
          - allow: {{ method: tools/list }}
          - allow: {{ method: tools/call, tool: "read_*" }}
          - allow: {{ method: tools/call, tool: chatty }}
        deny_rules:
          - {{ method: tools/call, tool: read_secrets }}
      - host: api.test
        port: 9000
        allowed_ips: ["{UPSTREAM_IP}/32"]
        protocol: mcp
        mcp: {{ allow_all_known_mcp_methods: true }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


@pytest.fixture(scope="module")
def upstream():
    up = Upstream().start()
    yield up
    up.stop()


@pytest.fixture(scope="module")
def server(upstream):
    s = mcp_util.Server(upstream, 9000, "sse", addr=UPSTREAM_IP)
    yield s
    s.stop()


def run_agent(upstream, url, *steps):
    py = mcp_util.python()
    venv = os.path.dirname(os.path.dirname(py))
    return agent_sandbox.run(NETWORK, [py, mcp_util.CLIENT, url, *steps],
                             read_only=[venv, os.path.dirname(mcp_util.CLIENT)],
                             names=("upstream.test", "api.test"), tag="mcp",
                             env={"MCP_READ_TIMEOUT": "8"})


def test_mcp_client_in_a_sandbox(upstream, server):
    server.clear()
    out, records = run_agent(upstream, "http://upstream.test:9000/mcp", "list",
                             "call:read_status", "call:chatty")
    steps = {o["step"]: o for o in out if "step" in o}
    assert steps["list"]["ok"]
    assert steps["call:read_status"]["result"] == ["status ok"]
    assert steps["call:chatty"]["result"] == ["chatty done"]
    assert out[-1] == {"delivered": []}  # the log notification is in no rule
    assert server.calls() == ["read_status", "chatty"]
    assert any(r.get("event") == "mcp_server" and r.get("decision") == "deny" and
               r.get("method") == "notifications/message" for r in records)
    assert all(r.get("binary", "").startswith("/usr/bin/python3") for r in records
               if r.get("event") == "mcp")


def test_refused_tool_in_a_sandbox_never_reaches_the_server(upstream, server):
    server.clear()
    out, records = run_agent(upstream, "http://upstream.test:9000/mcp", "call:read_status",
                             "call:write_file:{\"path\": \"/x\"}")
    assert out[0]["result"] == ["status ok"]
    assert "403" in json.dumps(out)
    assert server.calls() == ["read_status"]
    assert any(r.get("event") == "mcp" and r.get("decision") == "deny" and
               r.get("method") == "tools/call" for r in records)


def test_method_profile_in_a_sandbox_delivers_server_notifications(upstream, server):
    server.clear()
    out, _ = run_agent(upstream, "http://api.test:9000/mcp", "call:chatty")
    assert out[0]["result"] == ["chatty done"]
    assert out[-1] == {"delivered": [{"log": "a log line from the server"}]}
