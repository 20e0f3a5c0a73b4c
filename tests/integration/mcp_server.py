"""A real MCP server (the `mcp` SDK's FastMCP, streamable HTTP) for the proxy
tests, run with the venv of scripts/install-py-test-deps.

usage: mcp_server.py ADDR PORT LOGFILE [json|sse]

Every tool call it executes is appended to LOGFILE as a JSON line, so a test
can prove what reached it. `sse` (default) answers POSTs with event streams,
`json` with JSON bodies. Tools: read_status, read_secrets, write_file, search;
chatty (sends a log notification before its result) and ask_model (asks the
client to sample, a server-to-client request)."""
import json
import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent

addr, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
mode = sys.argv[4] if len(sys.argv) > 4 else "sse"
server = FastMCP("proxy-test", host=addr, port=port, json_response=mode == "json", log_level="ERROR")


def record(tool, **args):
    with open(log, "a") as f:
        f.write(json.dumps({"tool": tool, "args": args}) + "\n")


@server.tool()
def read_status() -> str:
    record("read_status")
    return "status ok"


@server.tool()
def read_secrets() -> str:
    record("read_secrets")
    return "the secrets"


@server.tool()
def write_file(path: str) -> str:
    record("write_file", path=path)
    return f"wrote {path}"


@server.tool()
def search(query: str) -> str:
    record("search", query=query)
    return f"found {query}"


@server.tool()
async def chatty(ctx: Context) -> str:
    record("chatty")
    await ctx.info("a log line from the server")
    return "chatty done"


@server.tool()
async def ask_model(ctx: Context) -> str:
    record("ask_model")
    r = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
        max_tokens=5)
    return f"model said {r.content.text}"


print("ready", flush=True)
server.run(transport="streamable-http")
