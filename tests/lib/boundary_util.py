"""Helpers for the in-pod boundary tests (tests/integration/test_boundary_*.py).

A routed canary network namespace (an RFC 5737 address that exists only
inside a namespace the test creates; nothing leaves the machine), a canary
listener that counts every TCP connection and UDP datagram, and a wrapper that
runs the real openshell-supervisor. Everything created is removed by the
fixtures' finalizers, even when a test fails."""

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time

from tests.lib import build, procfs

SUPERVISOR = build.binary("openshell-supervisor")
BENCH = build.binary("boundary-bench")
LAUNCHER = build.binary("openshell-sandbox")
PROBE = os.path.join(build.TESTS, "integration", "boundary_probe.py")
CANARY_TCP_PORT = 8080
# Not 53: DNS to any server is the transparent path's stub (docs/network.md),
# tested in tests/integration/test_transparent_path.py; NTP is fenced.
CANARY_UDP_PORT = 123


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


def our_links():
    """Names of the supervisor-side veths (osbN) in this namespace."""
    out = sh("ip", "-o", "link", "show").stdout
    return sorted(re.findall(r"^\d+: (osb\d+)[@:]", out, re.M))


def link_of_address(addr):
    out = sh("ip", "-o", "-4", "addr", "show").stdout
    for line in out.splitlines():
        if f" {addr}/" in line:
            return line.split()[1]
    return None


def set_forwarding(ifname, value):
    with open(f"/proc/sys/net/ipv4/conf/{ifname}/forwarding", "w") as f:
        f.write(str(value))


class RoutedNamespace:
    """A namespace holding `addr` (a /32 routed from the host over a veth /30
    `link`) that runs one listener process. The listener prints "ready",
    then one line per thing it saw; `read_lines` collects them without
    blocking. The canaries of the boundary and adversarial suites are this
    with their own names and listener."""

    def __init__(self, ns, host_if, ns_if, addr, link):
        self.ns, self.host_if, self.ns_if, self.addr, self.link = ns, host_if, ns_if, addr, link
        self.proc = None
        self.hits = []
        self._pending = ""

    def up(self, listener_argv):
        nsx = ("ip", "netns", "exec", self.ns)
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if,
           "netns", self.ns)
        sh("ip", "addr", "add", f"{self.link[0]}/30", "dev", self.host_if)
        sh("ip", "link", "set", self.host_if, "up")
        sh(*nsx, "ip", "addr", "add", f"{self.link[1]}/30", "dev", self.ns_if)
        sh(*nsx, "ip", "addr", "add", f"{self.addr}/32", "dev", self.ns_if)
        sh(*nsx, "ip", "link", "set", self.ns_if, "up")
        sh(*nsx, "ip", "link", "set", "lo", "up")
        sh(*nsx, "ip", "route", "add", "default", "via", self.link[0])
        sh("ip", "route", "add", f"{self.addr}/32", "via", self.link[1])
        # Replies are forwarded back to sandboxes on this link only.
        set_forwarding(self.host_if, 1)
        # cwd: listeners run as `python3 -m tests.lib.MODULE`
        self.proc = subprocess.Popen([*nsx, *listener_argv], stdout=subprocess.PIPE, cwd=build.REPO)
        ready = b""
        while not ready.endswith(b"\n"):  # byte by byte: nothing after it is buffered
            ready += os.read(self.proc.stdout.fileno(), 1)
        assert ready == b"ready\n"
        return self

    def read_lines(self, wait=0.3, parse=lambda line: line):
        """Everything seen so far (each line through parse), waiting up to
        `wait` seconds for stragglers. Reads the raw fd: a buffered readline
        would hide lines from select()."""
        fd = self.proc.stdout.fileno()
        end = time.monotonic() + wait
        while True:
            left = end - time.monotonic()
            r, _, _ = select.select([fd], [], [], max(left, 0))
            if r:
                self._pending += os.read(fd, 65536).decode()
                *done, self._pending = self._pending.split("\n")
                self.hits.extend(parse(line) for line in done if line)
            elif left <= 0:
                return list(self.hits)

    def down(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
        sh("ip", "route", "del", f"{self.addr}/32", check=False)
        sh("ip", "link", "del", self.host_if, check=False)
        sh("ip", "netns", "del", self.ns, check=False)


class Canary(RoutedNamespace):
    """The boundary tests' canary: TCP 8080 and UDP 'DNS' 53 on a
    203.0.113.x address; one "tcp|udp PEER" line per hit."""

    def __init__(self):
        tag = os.getpid() % 10000
        super().__init__(f"osbt-canary-{tag}", f"osbtc{tag}h", f"osbtc{tag}n",
                         f"203.0.113.{100 + tag % 100}",
                         (f"10.231.{tag % 250}.1", f"10.231.{tag % 250}.2"))

    def up(self):
        return super().up([sys.executable, "-m", __name__, "canary", self.addr])

    sysctl = staticmethod(set_forwarding)

    def poll_hits(self, wait=0.3):
        return self.read_lines(wait)

    def reset(self):
        self.poll_hits(0.1)
        self.hits = []


def run_canary(addr):
    """Canary process body: TCP on 8080 and UDP 'DNS' on 53; one line per hit."""
    import socket
    t = socket.socket()
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((addr, CANARY_TCP_PORT))
    t.listen(16)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((addr, CANARY_UDP_PORT))
    print("ready", flush=True)
    while True:
        r, _, _ = select.select([t, u], [], [])
        if t in r:
            c, peer = t.accept()
            print(f"tcp {peer[0]}", flush=True)
            c.close()
        if u in r:
            data, peer = u.recvfrom(2048)
            print(f"udp {peer[0]}", flush=True)
            u.sendto(data[:2] + b"\x81\x80" + data[4:], peer)


def _netns(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def sandbox_child_pid(sup_pid, timeout=10):
    """pid of the launcher (the supervisor's child in the sandbox netns). The
    supervisor forks other short-lived children too (its cgroup and guard
    self-tests), in its own namespace: those are not it."""
    end = time.monotonic() + timeout
    own = _netns(sup_pid)
    while time.monotonic() < end:
        for pid, fields in procfs.stat_all():
            if int(fields[1]) == sup_pid and (ns := _netns(pid)) and ns != own:
                return pid
        time.sleep(0.02)
    raise AssertionError("no sandbox process found under the supervisor")


BOUNDARY_POLICY = """version: 1
filesystem_policy:
  include_workdir: false
  read_only: [/]
  read_write: [/tmp, /dev/null]
network_policies: {}
"""


class Supervisor:
    """One openshell-supervisor run (inpod backend) with its audit log."""

    def __init__(self, sandbox_id, argv, port=3128, env=None, policy=BOUNDARY_POLICY, extra=()):
        self.audit = tempfile.NamedTemporaryFile(prefix="osbt-audit-", delete=False).name
        # The boundary tests need the agent to read the probe script and
        # python wherever they live, and no egress policy at all.
        with tempfile.NamedTemporaryFile("w", prefix="osbt-policy-", suffix=".yaml",
                                         delete=False) as f:
            f.write(policy)
            self.policy = f.name
        self.cmd = [SUPERVISOR, "--backend", "inpod", "--sandbox-id", sandbox_id,
                    "--proxy-port", str(port), "--launcher", LAUNCHER,
                    "--policy", self.policy, *extra,
                    "--audit-log", self.audit, "--", *argv]
        self.env = dict(os.environ, **(env or {}))
        self.proc = None

    def start(self):
        try:
            self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, env=self.env)
        except BaseException:
            self.stop()  # the audit and policy files are ours to remove
            raise
        return self

    def wait(self, timeout=60):
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def netns(self):
        return f"/proc/{sandbox_child_pid(self.proc.pid)}/ns/net"

    def records(self):
        with open(self.audit) as f:
            return [json.loads(line) for line in f if line.strip()]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        os.unlink(self.audit)
        os.unlink(self.policy)


def run_probe(sandbox_id, *checks, env=None):
    """Runs boundary_probe.py as the agent; returns (rc, results, stderr, records)."""
    sup = Supervisor(sandbox_id, [sys.executable, PROBE, *checks], env=env).start()
    try:
        rc, out, err = sup.wait()
        lines = [l for l in out.splitlines() if l.startswith("{")]
        return rc, (json.loads(lines[-1]) if lines else None), err, sup.records()
    finally:
        sup.stop()


def sandbox_links(netns_path):
    """(agent address, supervisor-side veth) of a running sandbox."""
    out = in_netns(netns_path, "ip", "-o", "-4", "addr", "show", "dev", "eth0").stdout
    agent = re.search(r"inet (10\.200\.\d+\.2)/", out).group(1)
    host = agent.rsplit(".", 1)[0] + ".1"
    return agent, host, link_of_address(host)


def in_netns(netns_path, *argv, **kw):
    return subprocess.run(["nsenter", f"--net={netns_path}", *argv], capture_output=True,
                          text=True, **kw)


def probe_in_netns(netns_path, *checks):
    """Runs the probe as root inside an existing sandbox namespace."""
    r = in_netns(netns_path, sys.executable, PROBE, *checks, timeout=30)
    return json.loads(r.stdout.strip().splitlines()[-1])


if __name__ == "__main__" and sys.argv[1:2] == ["canary"]:
    run_canary(sys.argv[2])
