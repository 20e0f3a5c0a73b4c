"""A real WebSocket server (python3-websockets) for the proxy tests: echoes
every message and logs it, one JSON line each, with the upgrade's path and
the extensions it negotiated, so a test can tell what reached the upstream.

usage: ws_server.py IP PORT LOG [CERT KEY]"""
import asyncio
import json
import ssl
import sys

import websockets


async def split_frame(ws):
    """One binary frame written in two halves a second apart: a proxy that
    must end the connection meanwhile has to wait for the frame's end."""
    payload = bytes(range(256)) * 1200
    head = bytes([0x82, 127]) + len(payload).to_bytes(8, "big")
    half = len(payload) // 2
    # the library must not answer a close frame in the middle of this one
    ws.transport.pause_reading()
    ws.transport.write(head + payload[:half])
    await asyncio.sleep(1)
    ws.transport.write(payload[half:])
    ws.transport.resume_reading()


async def main():
    ip, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ctx = None
    if len(sys.argv) > 5:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[4], sys.argv[5])

    def record(**kw):
        with open(log, "a") as f:
            f.write(json.dumps(kw) + "\n")

    async def handler(ws, path=None):
        path = ws.path
        ext = [type(e).__name__ for e in ws.extensions]
        record(event="open", path=path, extensions=ext,
               offered=ws.request_headers.get("Sec-WebSocket-Extensions"))
        try:
            async for msg in ws:
                text = isinstance(msg, str)
                data = msg if text else msg.hex()
                record(event="message", path=path, type="text" if text else "binary",
                       len=len(msg), data=data[:200])
                if msg == b"split":
                    await split_frame(ws)
                else:
                    await ws.send(msg)
        except websockets.ConnectionClosed:
            pass
        record(event="close", path=path, code=ws.close_code)

    async with websockets.serve(handler, ip, port, ssl=ctx, max_size=32 * 1024 * 1024):
        print("ready", flush=True)
        await asyncio.Future()


asyncio.run(main())
