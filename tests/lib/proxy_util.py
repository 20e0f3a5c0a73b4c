"""Fixtures for the egress proxy tests: a test network namespace holding
upstream servers on TEST-NET-2 (198.51.100.0/24, routed only to that
namespace, so nothing can leave the machine), a local test CA, and a running
openshell-proxy with a given policy."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from tests.lib import build

UPSTREAM_SERVER = os.path.join(build.TESTS, "integration", "upstream_server.py")
PROXY_BIN = build.binary("openshell-proxy")
UPSTREAM_IP = "198.51.100.10"
HOST_IP = "198.51.100.1"
UPSTREAM_NAMES = ("upstream.test", "other.test", "creds.test", "api.test", "plain.test",
                  "lenient.test", "gql.test", "gql-audit.test")


def run(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def make_ca(d):
    """A test CA and a server certificate for the upstream names."""
    def ossl(*a):
        run("openssl", *a)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem", "-days", "2", "-subj", "/CN=proxy test CA")
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", f"{d}/srv.key", "-out", f"{d}/srv.csr", "-subj", "/CN=upstream.test")
    with open(f"{d}/ext", "w") as f:
        # the names every test module may use for the upstream (the hosts file below)
        f.write("subjectAltName=" + ",".join("DNS:" + n for n in UPSTREAM_NAMES) + "\n")
    ossl("x509", "-req", "-in", f"{d}/srv.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
         "-CAcreateserial", "-out", f"{d}/srv.pem", "-days", "2", "-extfile", f"{d}/ext")


class Upstream:
    """A namespace with echo servers: HTTP :80, HTTPS :443 and :8443, HTTP :8000."""

    def __init__(self):
        self.ns = f"ospx{os.getpid() % 100000}"
        self.veth = f"opx{os.getpid() % 100000}"
        self.dir = tempfile.mkdtemp(prefix="proxy-test-")
        self.procs = []
        self.log = os.path.join(self.dir, "upstream.log")
        open(self.log, "w").close()

    def start(self):
        make_ca(self.dir)
        run("ip", "netns", "add", self.ns)
        run("ip", "link", "add", self.veth, "type", "veth", "peer", "name", self.veth + "p")
        run("ip", "link", "set", self.veth + "p", "netns", self.ns)
        run("ip", "addr", "add", HOST_IP + "/24", "dev", self.veth)
        run("ip", "link", "set", self.veth, "up")
        run("ip", "-n", self.ns, "addr", "add", UPSTREAM_IP + "/24", "dev", self.veth + "p")
        run("ip", "-n", self.ns, "link", "set", self.veth + "p", "up")
        run("ip", "-n", self.ns, "link", "set", "lo", "up")
        server = UPSTREAM_SERVER
        for port, tls in ((80, False), (443, True), (8443, True), (8000, False)):
            args = ["ip", "netns", "exec", self.ns, "python3", server, UPSTREAM_IP, str(port), self.log]
            if tls:
                args += [f"{self.dir}/srv.pem", f"{self.dir}/srv.key"]
            p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            assert p.stdout.readline().strip() == "ready"
            self.procs.append(p)
        with open(os.path.join(self.dir, "hosts"), "w") as f:
            f.write(f"{UPSTREAM_IP} {' '.join(UPSTREAM_NAMES)}\n")
            f.write("127.0.0.1 loop.test\n::1 loop6.test\n169.254.169.254 meta.test\n")
        return self

    def requests(self):
        with open(self.log) as f:
            return [json.loads(l) for l in f if l.strip()]

    def clear(self):
        open(self.log, "w").close()

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()
        run("ip", "link", "del", self.veth, check=False)
        run("ip", "netns", "del", self.ns, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


class Proxy:
    """openshell-proxy on 127.0.0.1 with identity rooted at this test process."""

    def __init__(self, upstream, policy_text, credentials=None, inference=None, extra=(),
                 identity=True):
        self.up = upstream
        self.dir = tempfile.mkdtemp(prefix="proxy-run-", dir=upstream.dir)
        self.policy = os.path.join(self.dir, "policy.yaml")
        self.audit = os.path.join(self.dir, "audit.log")
        self.set_policy(policy_text)
        args = [PROXY_BIN, "--listen", "127.0.0.1:0", "--policy", self.policy,
                "--hosts", os.path.join(upstream.dir, "hosts"),
                "--dns", "192.0.2.53", "--upstream-ca", f"{upstream.dir}/ca.pem",
                "--ca-dir", self.dir, "--audit-log", self.audit, "--sandbox-id", "test", *extra]
        if identity:
            args += ["--identity-pid", str(os.getpid())]
        for flag, obj in (("--credentials", credentials), ("--inference", inference)):
            if obj is not None:
                path = os.path.join(self.dir, flag[2:] + ".json")
                fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
                os.write(fd, json.dumps(obj).encode())
                os.close(fd)
                args += [flag, path]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening on "), self.proc.stderr.read()
        self.port = int(line.rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.ca = os.path.join(self.dir, "ca.pem")

    def set_policy(self, text):
        with open(self.policy, "w") as f:
            f.write(text)

    def reload(self):
        self.proc.send_signal(signal.SIGHUP)

    def audit_records(self):
        try:
            with open(self.audit) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def last_audit(self, **match):
        """The newest audit record whose fields equal match, or None."""
        for r in reversed(self.audit_records()):
            if all(r.get(k) == v for k, v in match.items()):
                return r
        return None

    def curl(self, url, *args, timeout=10):
        """curl through the proxy; returns (http_code, body)."""
        r = subprocess.run(["curl", "-s", "-m", str(timeout), "--cacert", self.ca, "-x", self.url,
                            "-o", "-", "-w", "\n%{http_code}", *args, url],
                           capture_output=True, text=True)
        body, _, code = r.stdout.rpartition("\n")
        return int(code or 0), body

    def raw(self, data, read=65536, timeout=5):
        """Sends raw bytes to the proxy; returns what it answered."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        try:
            s.sendall(data)
            out = b""
            while len(out) < read:
                try:
                    chunk = s.recv(read)
                except socket.timeout:
                    break
                if not chunk:
                    break
                out += chunk
            return out
        finally:
            s.close()

    def connect(self, target, timeout=5):
        """Sends CONNECT target; returns (socket, the answer's head and any
        bytes that came with it). The caller checks the status."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        return s, head

    def tls(self, host, port=443):
        """A CONNECT tunnel to host:port, TLS terminated by this proxy (its
        CA trusted): the agent's side of an inspected connection."""
        import ssl
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        return ssl.create_default_context(cafile=self.ca).wrap_socket(s, server_hostname=host)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def module_fixtures(policy_text, **proxy_args):
    """The usual fixtures of a module testing one policy against the echo
    upstream: `upstream`, `proxy` (module scope, started with proxy_args,
    e.g. credentials=) and the autouse `clean_log`.
    Use as `upstream, proxy, clean_log = module_fixtures(POLICY)`."""
    import pytest

    @pytest.fixture(scope="module")
    def upstream():
        up = Upstream().start()
        yield up
        up.stop()

    @pytest.fixture(scope="module")
    def proxy(upstream):
        p = Proxy(upstream, policy_text, **proxy_args)
        yield p
        p.stop()

    @pytest.fixture(autouse=True)
    def clean_log(upstream):
        upstream.clear()

    return upstream, proxy, clean_log


def credential_fixtures(policy_text, providers):
    """`upstream` (module scope) and a fresh `proxy` per test holding the
    providers' secrets ({"NAME": {"KEY": "secret"}}): which upstreams hold a
    secret is per proxy. The upstream's log is cleared for each test.
    Use as `upstream, proxy = credential_fixtures(POLICY, {...})`."""
    import pytest

    @pytest.fixture(scope="module")
    def upstream():
        up = Upstream().start()
        yield up
        up.stop()

    @pytest.fixture
    def proxy(upstream):
        p = Proxy(upstream, policy_text, credentials={"providers": providers})
        upstream.clear()
        yield p
        p.stop()

    return upstream, proxy


# The sanitizer build (build-san) beside the normal one: `make build-san`.
SAN_PROXY_BIN = build.binary("openshell-proxy",
                             os.path.join(os.path.dirname(build.BUILD.rstrip("/")), "build-san"))


def stop_sanitized(proxy, timeout=60):
    """Stops a proxy started from SAN_PROXY_BIN; returns its stderr."""
    proxy.proc.send_signal(signal.SIGTERM)
    _, err = proxy.proc.communicate(timeout=timeout)
    return err


def assert_sanitizer_clean(proxy, err):
    """It exited clean: no leak, no memory error, no undefined behaviour, no
    state change its state machine forbids (proxy_state.c)."""
    assert "ERROR: LeakSanitizer" not in err, err[-4000:]
    assert "ERROR: AddressSanitizer" not in err, err[-4000:]
    assert "runtime error" not in err, err[-4000:]
    assert "unexpected state change" not in err, err[-4000:]
    assert proxy.proc.returncode == 0, err[-2000:]
