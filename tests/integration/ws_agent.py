"""A WebSocket agent (python3-websockets, a real client) for the proxy and
sandbox tests: wss:// through an HTTP proxy's CONNECT, trusting the bundle
the sandbox gives (SSL_CERT_FILE) or a given CA.

As a program (inside a sandbox): ws_agent.py HOST:PORT PATH=MSG[|MSG...] ...
reads HTTPS_PROXY, and prints one JSON line per PATH: the answers received
and the close code the connection ended with (null: closed normally)."""
import asyncio
import json
import os
import socket
import ssl
import sys
from urllib.parse import urlsplit

import websockets


def tunnel(proxy_host, proxy_port, host, port):
    """A CONNECT tunnel to host:port, answered 200."""
    s = socket.create_connection((proxy_host, proxy_port), timeout=20)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(f"CONNECT refused: {head[:200]!r}")
    return s


async def talk(sock, ctx, uri, sends, host=None, subprotocols=None):
    """Sends each message and waits for its answer: (answers, close code or
    None when the connection was not closed by the other side)."""
    kw = {"sock": sock, "server_hostname": host} if sock else {}
    if subprotocols:
        kw["subprotocols"] = subprotocols
    got = []
    async with websockets.connect(uri, ssl=ctx, **kw) as ws:
        try:
            for m in sends:
                await ws.send(m)
                got.append(await asyncio.wait_for(ws.recv(), 20))
        except websockets.ConnectionClosed as e:
            return got, e.rcvd.code if e.rcvd else None
    return got, None


def main():
    target, steps = sys.argv[1], sys.argv[2:]
    host, port = target.rsplit(":", 1)
    proxy = urlsplit(os.environ["HTTPS_PROXY"])
    ctx = ssl.create_default_context()  # SSL_CERT_FILE: the sandbox's bundle
    for step in steps:
        path, _, msgs = step.partition("=")
        try:
            sock = tunnel(proxy.hostname, proxy.port, host, int(port))
            got, code = asyncio.run(talk(sock, ctx, f"wss://{target}{path}", msgs.split("|"),
                                         host=host))
            print(json.dumps({"path": path, "got": got, "code": code}), flush=True)
        except Exception as e:  # reported, so the test can say what failed
            print(json.dumps({"path": path, "error": repr(e)}), flush=True)


if __name__ == "__main__":
    main()
