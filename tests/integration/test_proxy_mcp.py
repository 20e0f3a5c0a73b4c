"""MCP endpoints (`protocol: mcp`) through the proxy with a real MCP client
and server (the `mcp` SDK, streamable HTTP, answers as SSE streams or JSON),
outside a sandbox: the proxy judges initialize, tools/list and each
tools/call by tool name; a refused call never reaches the server, and an
allowed one beside it does."""
import json
import os
import subprocess

import pytest

from tests.lib import build, mcp_util
from tests.lib.proxy_util import Proxy, Upstream

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
RULES = """
        rules:
          - allow: { method: initialize }
          - allow: { method: notifications/initialized }
          - allow: { method: ping }
          - allow: { method: tools/list }
          - allow: { method: tools/call, tool: "read_*" }
          - allow: { method: tools/call, params: { name: { any: [search, chatty, ask_model] } } }
        deny_rules:
          - { method: tools/call, tool: read_secrets }"""
POLICY = f"""
version: 1
network_policies:
  tools:
    endpoints:
      - host: upstream.test
        port: 9000
        allowed_ips: {NET}
        protocol: mcp
        path: /mcp
{RULES}
      - host: upstream.test
        port: 9001
        allowed_ips: {NET}
        protocol: mcp
        path: /mcp
{RULES}
      - host: api.test
        port: 9000
        allowed_ips: {NET}
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
def servers(upstream):
    s = {9000: mcp_util.Server(upstream, 9000, "sse"), 9001: mcp_util.Server(upstream, 9001, "json")}
    yield s
    for v in s.values():
        v.stop()


@pytest.fixture(scope="module")
def proxy(upstream):
    p = Proxy(upstream, POLICY)
    yield p
    p.stop()


@pytest.fixture(autouse=True)
def clean(servers):
    for s in servers.values():
        s.clear()


def client(proxy, url, *steps):
    env = dict(os.environ, HTTP_PROXY=proxy.url, http_proxy=proxy.url, NO_PROXY="", no_proxy="")
    r = subprocess.run([mcp_util.python(), mcp_util.CLIENT, url, *steps], capture_output=True,
                       text=True, env=env, timeout=90)
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    assert lines, f"client failed: {r.stderr[-2000:]}"
    return lines


@pytest.mark.parametrize("port", [9000, 9001])  # SSE and JSON answers
def test_allowed_tools_run(proxy, servers, port):
    out = client(proxy, f"http://upstream.test:{port}/mcp", "list", "call:read_status",
                 "call:search:{\"query\": \"q\"}")
    steps = {o["step"]: o for o in out if "step" in o}
    assert steps["list"]["ok"] and "write_file" in steps["list"]["result"]
    assert steps["call:read_status"] == {"step": "call:read_status", "ok": True,
                                          "result": ["status ok"]}
    assert steps['call:search:{"query": "q"}']["result"] == ["found q"]
    assert servers[port].calls() == ["read_status", "search"]
    rec = proxy.last_audit(event="mcp", method="tools/call", decision="allow")
    assert rec and ("read_status" in rec["detail"] or "search" in rec["detail"])


# Refused calls are answered as upstream OpenShell answers them: HTTP 403 (with
# a JSON-RPC error in the body). The SDK ends its session on any non-2xx answer,
# so each refusal runs in a session of its own, after an allowed call.
@pytest.mark.parametrize("port", [9000, 9001])
@pytest.mark.parametrize("step,reason", [
    ('call:write_file:{"path": "/etc/x"}', "no_matching_rule"),
    ("call:read_secrets", "deny_rule"),  # matches read_* too: the deny rule wins
    ("call:Read_status", "no_matching_rule"),  # tool names match exactly
])
def test_refused_tool_never_reaches_the_server(proxy, servers, port, step, reason):
    out = client(proxy, f"http://upstream.test:{port}/mcp", "call:read_status", step)
    assert out[0] == {"step": "call:read_status", "ok": True, "result": ["status ok"]}
    assert not any(o.get("step") == step and o.get("ok") for o in out)
    assert "403" in json.dumps(out), out
    assert servers[port].calls() == ["read_status"]
    rec = proxy.last_audit(event="mcp", method="tools/call", decision="deny")
    assert rec and rec["reason"] == reason, rec


def test_method_profile_allows_core_methods(proxy, servers):
    out = client(proxy, "http://api.test:9000/mcp", "list", "call:write_file:{\"path\": \"p\"}")
    assert all(o["ok"] for o in out if "step" in o), out
    assert servers[9000].calls() == ["write_file"]
