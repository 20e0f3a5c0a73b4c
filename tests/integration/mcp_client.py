"""A real MCP client (the `mcp` SDK, streamable HTTP) for the proxy tests.
The proxy comes from HTTP_PROXY / HTTPS_PROXY like any httpx client's.

usage: mcp_client.py URL STEP...   where STEP is `list` or `call:TOOL[:JSONARGS]`

Prints one JSON line per step: {"step", "ok", "result" | "error"},
{"session_error": ...} when the transport ended the session (the SDK ends
it on a non-2xx answer), and the log lines and sampling requests the
server's messages delivered to it as {"delivered": [...]}. Timeouts are short: a step that never gets its
answer reports an error."""
import asyncio
import json
import os
import sys
from datetime import timedelta

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.types import CreateMessageResult, TextContent

delivered = []


async def on_log(params):
    delivered.append({"log": str(params.data)})


async def on_sampling(context, params):
    delivered.append({"sampling": True})
    return CreateMessageResult(role="assistant", model="test",
                               content=TextContent(type="text", text="yes"))


async def session(url, steps, out):
    async with streamablehttp_client(url, timeout=10, sse_read_timeout=10) as (r, w, _):
        async with ClientSession(r, w, logging_callback=on_log, sampling_callback=on_sampling,
                                 read_timeout_seconds=timedelta(
                                     seconds=float(os.environ.get("MCP_READ_TIMEOUT", "8")))) as s:
            await s.initialize()
            for step in steps:
                try:
                    if step == "list":
                        res = await s.list_tools()
                        out.append({"step": step, "ok": True,
                                    "result": sorted(t.name for t in res.tools)})
                    else:
                        _, tool, *rest = step.split(":", 2)
                        args = json.loads(rest[0]) if rest else {}
                        res = await s.call_tool(tool, args)
                        text = [c.text for c in res.content if hasattr(c, "text")]
                        out.append({"step": step, "ok": not res.isError, "result": text})
                except Exception as e:  # the test reads what failed and how
                    out.append({"step": step, "ok": False, "error": f"{type(e).__name__}: {e}"})


def describe(e):
    """The innermost errors of an exception group, as text."""
    subs = getattr(e, "exceptions", None)
    if subs:
        return "; ".join(describe(s) for s in subs)
    return f"{type(e).__name__}: {e}"


async def main(url, steps):
    out = []
    try:
        await session(url, steps, out)
    except BaseException as e:  # the transport ended the session (e.g. a non-2xx answer)
        out.append({"session_error": describe(e)})
    for o in out:
        print(json.dumps(o), flush=True)
    print(json.dumps({"delivered": delivered}), flush=True)


asyncio.run(main(sys.argv[1], sys.argv[2:]))
