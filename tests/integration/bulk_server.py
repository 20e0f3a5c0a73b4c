"""A local upstream for the proxy's memory tests: serves `GET /big/N` as N
bytes (Content-Length framed, written only as fast as the peer takes them,
so the server itself buffers little), for thousands of connections at once.
A connection that sends nothing and hangs up is closed quietly, so a tunnel
the agent closes goes away on both sides.

usage: bulk_server.py ADDR PORT [CERT KEY]
"""
import asyncio
import resource
import ssl
import sys

CHUNK = b"x" * 65536


async def serve(reader, writer):
    try:
        line = await reader.readline()
        if not line:
            return
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass
        parts = line.split()
        n = int(parts[1].rsplit(b"/", 1)[1]) if len(parts) > 1 and parts[1].startswith(b"/big/") else 0
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % n)
        while n > 0:
            writer.write(CHUNK[:min(n, len(CHUNK))])
            n -= min(n, len(CHUNK))
            await writer.drain()
        await writer.drain()
    except (ConnectionError, ValueError, IndexError):
        pass
    finally:
        writer.close()


async def main():
    addr, port = sys.argv[1], int(sys.argv[2])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    ctx = None
    if len(sys.argv) > 4:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[3], sys.argv[4])
    srv = await asyncio.start_server(serve, addr, port, ssl=ctx, backlog=4096)
    print("ready", flush=True)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
