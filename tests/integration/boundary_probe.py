#!/usr/bin/python3
"""boundary_probe.py - runs INSIDE a sandbox (as the agent) and tries the
boundary: each check prints one JSON object on stdout. Never retries a
blocked attempt in another way; it only reports what happened."""
import errno
import json
import os
import socket
import sys
import time


def tcp(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    t0 = time.monotonic()
    try:
        s.connect((host, int(port)))
        return {"ok": True, "ms": (time.monotonic() - t0) * 1000}
    except OSError as e:
        return {"ok": False, "errno": errno.errorcode.get(e.errno, str(e)),
                "ms": (time.monotonic() - t0) * 1000}
    finally:
        s.close()


def udp(host, port, hold=0.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1)
    try:
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x01",
                 (host, int(port)))
        data, _ = s.recvfrom(512)
        return {"ok": True, "reply": len(data)}
    except OSError as e:
        return {"ok": False, "errno": errno.errorcode.get(e.errno, str(e)) if e.errno else "timeout"}
    finally:
        time.sleep(hold)  # keeps the socket alive so the owner can be resolved
        s.close()


def ping(host):
    """One ICMP echo over a raw socket (root only); ok when the reply arrives."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.settimeout(1)
    body = b"\x08\x00\x00\x00\x12\x34\x00\x01osbtping"
    csum = sum(int.from_bytes(body[i:i + 2], "big") for i in range(0, len(body), 2))
    csum = ~((csum & 0xFFFF) + (csum >> 16)) & 0xFFFF
    try:
        s.sendto(body[:2] + csum.to_bytes(2, "big") + body[4:], (host, 0))
        while True:
            data, peer = s.recvfrom(512)
            if peer[0] == host and data[20] == 0:
                return {"ok": True}
    except OSError as e:
        return {"ok": False, "errno": errno.errorcode.get(e.errno, str(e)) if e.errno else "timeout"}
    finally:
        s.close()


def main():
    results = {"pid": os.getpid(), "uid": os.getuid()}
    for arg in sys.argv[1:]:
        kind, _, rest = arg.partition("=")
        if kind == "tcp":
            host, port = rest.rsplit(":", 1)
            results[arg] = tcp(host.strip("[]"), port,
                               socket.AF_INET6 if host.startswith("[") else socket.AF_INET)
        elif kind == "udp":
            host, port = rest.rsplit(":", 1)
            results[arg] = udp(host, port, hold=0.5)
        elif kind == "proxy":
            url = os.environ.get("HTTP_PROXY", "")
            hostport = url.split("//", 1)[-1]
            host, port = hostport.rsplit(":", 1)
            results[arg] = tcp(host, port)
        elif kind == "ping":
            results[arg] = ping(rest)
        elif kind == "proxyport":
            host = os.environ.get("HTTP_PROXY", "").split("//", 1)[-1].rsplit(":", 1)[0]
            results[arg] = tcp(host, rest)
        elif kind == "waitfile":
            end = time.monotonic() + 20
            while not os.path.exists(rest) and time.monotonic() < end:
                time.sleep(0.02)
        elif kind == "sleep":
            time.sleep(float(rest))
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
