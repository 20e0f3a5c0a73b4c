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


def client(proxy, url, *steps, read_timeout=8):
    env = dict(os.environ, HTTP_PROXY=proxy.url, http_proxy=proxy.url, NO_PROXY="", no_proxy="",
               MCP_READ_TIMEOUT=str(read_timeout))
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


# ---- what the server sends (event streams) ----

def test_server_notification_the_policy_forbids_is_not_delivered(proxy, servers):
    out = client(proxy, "http://upstream.test:9000/mcp", "call:chatty")
    assert out[0] == {"step": "call:chatty", "ok": True, "result": ["chatty done"]}
    assert out[-1] == {"delivered": []}  # notifications/message is in no rule
    rec = proxy.last_audit(event="mcp_server", method="notifications/message")
    assert rec and rec["decision"] == "deny"
    # positive control: the method profile covers the server's core notifications
    out = client(proxy, "http://api.test:9000/mcp", "call:chatty")
    assert out[0]["ok"] and out[-1] == {"delivered": [{"log": "a log line from the server"}]}


def test_server_request_the_policy_forbids_is_not_delivered(proxy, servers):
    out = client(proxy, "http://upstream.test:9000/mcp", "call:ask_model", read_timeout=3)
    assert not out[0].get("ok")  # the sampling request never came, so no answer either
    assert out[-1] == {"delivered": []}
    rec = proxy.last_audit(event="mcp_server", method="sampling/createMessage")
    assert rec and rec["decision"] == "deny"
    out = client(proxy, "http://api.test:9000/mcp", "call:ask_model")
    assert out[0] == {"step": "call:ask_model", "ok": True, "result": ["model said yes"]}
    assert out[-1] == {"delivered": [{"sampling": True}]}


# ---- a misbehaving server, byte by byte ----

FAKE_POLICY = f"""
version: 1
network_policies:
  fake:
    endpoints:
      - host: other.test
        port: 9100
        allowed_ips: {NET}
        protocol: mcp
        rules:
          - allow: {{ method: tools/list }}
          - allow: {{ method: notifications/progress }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


@pytest.fixture(scope="module")
def fake(upstream):
    p = subprocess.Popen(["ip", "netns", "exec", upstream.ns, "/usr/bin/python3",
                          os.path.join(build.TESTS, "integration", "mcp_fake_server.py"),
                          "198.51.100.10", "9100"], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    mcp_util.Server._wait_listening(upstream, 9100)
    px = Proxy(upstream, FAKE_POLICY)
    yield px
    px.stop()
    p.kill()
    p.wait()


def fake_post(proxy, path):
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    head = (f"POST http://other.test:9100{path} HTTP/1.1\r\nHost: other.test:9100\r\n"
            f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    out = proxy.raw(head + body, timeout=5)
    h, _, payload = out.partition(b"\r\n\r\n")
    return h.decode("latin-1"), payload


def test_sse_events_split_across_reads_are_judged_whole(fake):
    head, body = fake_post(fake, "/sse-split")
    assert head.startswith("HTTP/1.1 200") and "Connection: close" in head
    assert "Transfer-Encoding" not in head  # relayed unframed
    # progress (allowed) and the result arrive, byte for byte; the log line
    # and the sampling request (in no rule) do not
    assert body.count(b"notifications/progress") == 1
    assert b"notifications/message" not in body and b"sampling/createMessage" not in body
    assert body.endswith(b'{"tools": []}}\r\n\r\n') and b": keep-alive\n\n" in body
    assert fake.last_audit(event="mcp_server", method="sampling/createMessage")["decision"] == "deny"
    assert fake.last_audit(event="mcp_server", method="notifications/progress")["decision"] == "allow"


@pytest.mark.parametrize("path", ["/sse-type", "/sse-bad"])
def test_sse_events_that_are_not_plain_messages_are_dropped(fake, path):
    head, body = fake_post(fake, path)
    assert head.startswith("HTTP/1.1 200")
    assert b"sampling" not in body and b'"method":"x"' not in body
    assert b'"result"' in body  # positive control: the answer itself arrives
    assert fake.last_audit(event="mcp_server", reason="rpc_invalid")


def test_json_answer_carrying_a_forbidden_request_is_not_delivered(fake):
    head, body = fake_post(fake, "/json-smuggle")
    assert b"sampling" not in body
    assert fake.last_audit(event="mcp_server", method="sampling/createMessage")["decision"] == "deny"
    head, body = fake_post(fake, "/json-ok")  # positive control
    assert head.startswith("HTTP/1.1 200") and json.loads(body)["result"] == {"tools": []}
