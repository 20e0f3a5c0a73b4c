"""adv_util.py - harness of the adversarial suite: a canary namespace that
logs every packet payload it receives, and AdvSandbox, one real
openshell-supervisor run (inpod backend, real proxy, real launcher) whose
agent is tests/adversarial/agents/agent.py. The agent prints one RESULT line
per probe and stops at BARRIER lines until the harness releases it, so a
test can change the world (reload the policy, poke the supervisor) mid-run.
Nothing here ever sends traffic outside this machine."""
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from tests.lib import build, proxy_util
from tests.lib.boundary_util import (LAUNCHER, SUPERVISOR, RoutedNamespace, sandbox_child_pid,
                                     sandbox_links, set_forwarding)

ADV_DIR = os.path.join(build.TESTS, "adversarial")  # the agent; readable in every sandbox

# A /25 of TEST-NET-2 of our own: longest-prefix routing keeps our traffic on
# our namespace even while the integration suite's /24 upstream is up.
UPSTREAM_IP = "198.51.100.200"
UPSTREAM_HOST_IP = "198.51.100.129"

PROBE_BIN = build.binary("sandbox-probe")
AGENT = os.path.join(ADV_DIR, "agents", "agent.py")
AGENT_UID = 65534
PYTHON = "/usr/bin/python3"
CANARY_TCP_PORTS = (8080, 443, 22)
CANARY_UDP_PORTS = (53, 443, 123)


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


class Upstream(proxy_util.Upstream):
    """proxy_util's echo servers (HTTP :80 :8000, HTTPS :443 :8443) on our /25."""

    def __init__(self):
        super().__init__()
        self.ns = f"osadvup{os.getpid() % 100000}"
        self.veth = f"oadu{os.getpid() % 100000}"

    def start(self):
        proxy_util.make_ca(self.dir)
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.veth, "type", "veth", "peer", "name", self.veth + "p")
        sh("ip", "link", "set", self.veth + "p", "netns", self.ns)
        sh("ip", "addr", "add", UPSTREAM_HOST_IP + "/25", "dev", self.veth)
        sh("ip", "link", "set", self.veth, "up")
        sh("ip", "-n", self.ns, "addr", "add", UPSTREAM_IP + "/25", "dev", self.veth + "p")
        sh("ip", "-n", self.ns, "link", "set", self.veth + "p", "up")
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")
        server = proxy_util.UPSTREAM_SERVER
        for port, tls in ((80, False), (443, True), (8443, True), (8000, False)):
            args = ["ip", "netns", "exec", self.ns, PYTHON, server, UPSTREAM_IP, str(port),
                    self.log]
            if tls:
                args += [f"{self.dir}/srv.pem", f"{self.dir}/srv.key"]
            p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True)
            assert p.stdout.readline().strip() == "ready"
            self.procs.append(p)
        return self

    def stop(self):
        super().stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Canary(RoutedNamespace):
    """A namespace holding 203.0.113.x, routed from the host; its listener
    prints one JSON line per TCP connection or UDP datagram (peer, port and
    the first bytes), so a test can prove that nothing, or exactly what,
    reached it."""

    def __init__(self):
        tag = os.getpid() % 200
        super().__init__(f"osadv-can-{os.getpid() % 100000}", f"osadc{tag}h", f"osadc{tag}n",
                         f"203.0.113.{20 + tag % 60}", (f"10.233.{tag}.1", f"10.233.{tag}.2"))

    def up(self):
        return super().up([PYTHON, "-m", __name__, "canary", self.addr])

    def poll(self, wait=0.3):
        return self.read_lines(wait, parse=json.loads)

    def hits_from(self, addr, wait=0.3):
        return [h for h in self.poll(wait) if h["peer"] == addr]


def run_canary(addr):
    tcp = []
    for port in CANARY_TCP_PORTS:
        t = socket.socket()
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t.bind((addr, port))
        t.listen(64)
        tcp.append(t)
    udp = []
    for port in CANARY_UDP_PORTS:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind((addr, port))
        udp.append(u)
    print("ready", flush=True)
    while True:
        r, _, _ = select.select(tcp + udp, [], [])
        for s in r:
            if s in tcp:
                c, peer = s.accept()
                c.settimeout(0.2)
                try:
                    data = c.recv(200)
                except OSError:
                    data = b""
                c.close()
                proto = "tcp"
            else:
                data, peer = s.recvfrom(2048)
                proto = "udp"
                if s.getsockname()[1] == 53 and len(data) > 12:  # an empty DNS answer
                    s.sendto(data[:2] + b"\x81\x80" + data[4:], peer)
            print(json.dumps({"proto": proto, "peer": peer[0], "port": s.getsockname()[1],
                              "data": data[:200].decode("latin-1")}), flush=True)


class AdvSandbox:
    """One supervisor run whose agent executes the named probes.

    on_barrier maps a barrier name to a callable(sandbox) run before the
    agent is released; "start" always exists (forwarding on the sandbox's
    veth is switched on there, so only the fence stands between the agent
    and the canary, and the agent's config file is written)."""

    def __init__(self, name, policy, probes, upstream, canary, credentials=None,
                 extra_config=None, on_barrier=None, env=None, dns=True, extra_ro=(),
                 sup_args=()):
        self.name = name
        self.extra_ro = list(extra_ro)
        self.dir = tempfile.mkdtemp(prefix=f"osadv-{name}-", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        self.private = tempfile.mkdtemp(prefix="osadv-priv-")  # 0700: never the agent's
        self.policy = os.path.join(self.private, "policy.yaml")
        self.audit = os.path.join(self.private, "audit.log")
        self.hosts = os.path.join(self.private, "hosts")
        self.upstream, self.canary = upstream, canary
        self.extra_config = dict(extra_config or {})
        self.on_barrier = dict(on_barrier or {})
        self.barriers = []
        self.results = {}
        self.out_lines, self.err = [], ""
        with open(self.hosts, "w") as f:
            f.write(f"{UPSTREAM_IP} upstream.test other.test creds.test api.test binonly.test "
                    f"slow.test\n127.0.0.1 loop.test\n{canary.addr} canary.test\n")
        self.write_policy(policy)
        sid = f"adv{os.getpid() % 1000}{name[:6]}"
        self.sandbox_id = sid
        self.cmd = [SUPERVISOR, "--backend", "inpod", "--sandbox-id", sid,
                    "--proxy-port", "3128", "--launcher", LAUNCHER, "--policy", self.policy,
                    "--audit-log", self.audit, "--hosts", self.hosts,
                    "--upstream-ca", os.path.join(upstream.dir, "ca.pem")]
        if dns:
            self.cmd += ["--dns", f"{canary.addr}:53"]
        self.cmd += list(sup_args)
        if credentials is not None:
            path = os.path.join(self.private, "credentials.json")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            os.write(fd, json.dumps(credentials).encode())
            os.close(fd)
            self.cmd += ["--credentials", path]
        if "barrier:start" not in probes:
            probes = ["barrier:start", *probes]
        self.cmd += ["--", PYTHON, AGENT, self.dir, *probes]
        self.env = dict(os.environ, **(env or {}))
        self.proc = None
        self.write_config()

    def write_policy(self, network_yaml):
        ro = ["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "/dev/urandom", ADV_DIR,
              os.path.dirname(PROBE_BIN), self.dir, *self.extra_ro]
        text = ("version: 1\nfilesystem_policy:\n  include_workdir: false\n"
                f"  read_only: {json.dumps(ro)}\n"
                '  read_write: ["/tmp", "/dev/null"]\n'
                'process: {run_as_user: "65534", run_as_group: "65534"}\n'
                f"network_policies:\n{network_yaml}")
        tmp = self.policy + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.policy)

    def reload(self, network_yaml, wait_for=1):
        """New network policy + SIGHUP; waits for the policy_loaded record."""
        before = len([r for r in self.records() if r.get("reason") == "policy_loaded"])
        self.write_policy(network_yaml)
        self.proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + 5
        while time.monotonic() < end:
            if len([r for r in self.records() if r.get("reason") == "policy_loaded"]) > before:
                return
            time.sleep(0.02)
        raise AssertionError("policy reload not recorded")

    # -- running ---------------------------------------------------------
    def netns(self):
        return f"/proc/{sandbox_child_pid(self.proc.pid)}/ns/net"

    def _start_barrier(self):
        netns = self.netns()
        agent, host, veth = sandbox_links(netns)
        self.agent_addr, self.host_addr, self.veth = agent, host, veth
        set_forwarding(veth, 1)
        self.write_config(supervisor_pid=self.proc.pid, host_addr=host,
                          launcher_pid=sandbox_child_pid(self.proc.pid))

    def write_config(self, **dynamic):
        """What the agent knows: static facts before start, the rest at "start"."""
        cfg = {"canary": self.canary.addr, "upstream_ip": UPSTREAM_IP, "probe_bin": PROBE_BIN,
               "audit": self.audit, "policy": self.policy,
               "ca_file": f"/run/openshell/{self.sandbox_id}/ca.pem", **self.extra_config,
               **dynamic}
        tmp = os.path.join(self.dir, "config.json.new")
        with open(tmp, "w") as f:
            json.dump(cfg, f)
        os.rename(tmp, os.path.join(self.dir, "config.json"))

    def _release(self, name):
        if name == "start":
            self._start_barrier()
        if name in self.on_barrier:
            self.on_barrier[name](self)
        open(os.path.join(self.dir, f"gate-{name}"), "w").close()

    def run(self, timeout=120):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=self.env)
        errs = []
        t = threading.Thread(target=lambda: errs.append(self.proc.stderr.read()), daemon=True)
        t.start()
        end = time.monotonic() + timeout
        try:
            for line in self.proc.stdout:
                line = line.rstrip("\n")
                self.out_lines.append(line)
                if line.startswith("BARRIER "):
                    name = line.split(" ", 1)[1]
                    self.barriers.append(name)
                    self._release(name)
                elif line.startswith("RESULT "):
                    r = json.loads(line[7:])
                    self.results[r["probe"]] = r
                if time.monotonic() > end:
                    raise AssertionError(f"sandbox {self.name} ran past {timeout}s")
            self.rc = self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            t.join(5)
        self.err = "".join(errs)
        return self

    def result(self, probe):
        assert probe in self.results, (
            f"probe {probe} produced no result\nstdout tail: {self.out_lines[-20:]}\n"
            f"stderr: {self.err[-3000:]}")
        r = self.results[probe]
        assert "exception" not in r, r
        return r

    def records(self):
        try:
            with open(self.audit) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def find(self, **match):
        """Audit records whose fields equal all of match."""
        return [r for r in self.records() if all(r.get(k) == v for k, v in match.items())]

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.private, ignore_errors=True)


# The test network every case's policy allows (the upstream's /25 is in it).
NET = '["198.51.100.0/24"]'


class Bait:
    """Host-side things outside every sandbox."""

    def __init__(self):
        tag = os.getpid()
        self.dir = tempfile.mkdtemp(prefix="osadv-bait-", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        self.secret_file = os.path.join(self.dir, "secret.txt")
        with open(self.secret_file, "w") as f:
            f.write("SECRET host file\n")
        os.chmod(self.secret_file, 0o644)  # DAC would let uid 65534 read it
        self.suid_dir = tempfile.mkdtemp(prefix="osadv-suid-", dir="/var/tmp")
        os.chmod(self.suid_dir, 0o755)
        self.suid_binary = os.path.join(self.suid_dir, "suid-id")
        shutil.copy("/usr/bin/id", self.suid_binary)
        os.chown(self.suid_binary, 0, 0)
        os.chmod(self.suid_binary, 0o4755)
        self.abstract = f"osadv-host-{tag}"
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind("\0" + self.abstract)
        self.unix.listen()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.listen_port = self.listener.getsockname()[1]
        self.victim = subprocess.Popen(["sleep", "600"])

    def config(self):
        return {"secret_file": self.secret_file, "suid_binary": self.suid_binary,
                "host_abstract": self.abstract, "host_listen_port": self.listen_port,
                "victim_pid": self.victim.pid}

    def close(self):
        self.victim.kill()
        self.victim.wait()
        self.unix.close()
        self.listener.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.suid_dir, ignore_errors=True)


def last(records, **match):
    for r in reversed(records):
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


if __name__ == "__main__" and sys.argv[1:2] == ["canary"]:
    run_canary(sys.argv[2])
