"""test_boundary_inpod.py - the inpod isolation boundary, from inside real
sandboxes (openshell-supervisor + openshell-sandbox, as root). A canary in a
routed test namespace must see zero connections from a fenced sandbox; each
negative has a positive control proving the path would otherwise work."""
import os
import subprocess
import sys
import tempfile
import time

import pytest

from tests.lib import build
from tests.lib.boundary_util import (CANARY_TCP_PORT, CANARY_UDP_PORT, PROBE, Canary, Supervisor,
                                     in_netns, our_links, probe_in_netns, sandbox_links)

pytestmark = [build.needs("openshell-supervisor", "openshell-sandbox"),
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]

AGENT_UID = 65534


@pytest.fixture
def canary():
    c = Canary()
    try:
        yield c.up()
    finally:
        c.down()


@pytest.fixture
def supervisors():
    started = []

    def start(sandbox_id, argv, **kw):
        s = Supervisor(sandbox_id, argv, **kw).start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def gofile():
    d = tempfile.mkdtemp(prefix="osbt-go-", dir="/var/tmp")
    os.chmod(d, 0o755)
    path = os.path.join(d, "go")
    yield path
    if os.path.exists(path):
        os.unlink(path)
    os.rmdir(d)


def open_path(sup, gofile, flush_fence=False):
    """Makes the canary routable from this sandbox (forwarding on its veth,
    which the supervisor turns off), optionally removes the fence, then lets
    the agent's probe go."""
    netns = sup.netns()
    agent, host, veth = sandbox_links(netns)
    Canary.sysctl(veth, 1)
    if flush_fence:
        assert in_netns(netns, "nft", "flush", "ruleset").returncode == 0
    open(gofile, "w").close()
    return agent, host


def probe_argv(gofile, canary, *extra):
    return [sys.executable, PROBE, f"waitfile={gofile}", f"tcp={canary.addr}:{CANARY_TCP_PORT}",
            f"udp={canary.addr}:{CANARY_UDP_PORT}", "tcp=[2001:db8::1]:80", "proxy=",
            "proxyport=3999", *extra]


def finish(sup):
    rc, out, err = sup.wait()
    lines = [l for l in out.splitlines() if l.startswith("{")]
    assert rc == 0 and lines, f"supervisor rc={rc}\nstdout={out}\nstderr={err}"
    import json
    return json.loads(lines[-1])


def test_direct_egress_blocked_canary_untouched(canary, supervisors, gofile):
    sup = supervisors("bt-direct", probe_argv(gofile, canary))
    open_path(sup, gofile)
    r = finish(sup)
    assert r["uid"] == AGENT_UID
    tcp = r[f"tcp={canary.addr}:{CANARY_TCP_PORT}"]
    assert tcp["ok"] is False and tcp["errno"] == "ECONNREFUSED", tcp
    assert tcp["ms"] < 500, "the reject must be immediate, not a timeout"
    assert r[f"udp={canary.addr}:{CANARY_UDP_PORT}"]["ok"] is False
    assert r["tcp=[2001:db8::1]:80"]["ok"] is False
    assert r["proxy="]["ok"] is True, "the proxy address must accept"
    assert r["proxyport=3999"] == {**r["proxyport=3999"], "ok": False, "errno": "ECONNREFUSED"}
    assert canary.poll_hits(0.5) == [], "the canary saw traffic from a fenced sandbox"


def test_positive_control_same_path_reaches_canary_without_fence(canary, supervisors, gofile):
    """The same sandbox path with the fence flushed does reach the canary:
    the blocked results above are the fence's doing, not a broken route."""
    sup = supervisors("bt-control", probe_argv(gofile, canary))
    agent, _ = open_path(sup, gofile, flush_fence=True)
    r = finish(sup)
    assert r[f"tcp={canary.addr}:{CANARY_TCP_PORT}"]["ok"] is True
    assert r[f"udp={canary.addr}:{CANARY_UDP_PORT}"]["ok"] is True
    hits = canary.poll_hits(0.5)
    assert f"tcp {agent}" in hits and f"udp {agent}" in hits, hits


def test_bypass_records_name_sandbox_proto_dst_port_uid_pid_binary(canary, supervisors, gofile):
    sup = supervisors("bt-audit", probe_argv(gofile, canary))
    open_path(sup, gofile)
    finish(sup)
    recs = [r for r in sup.records() if r.get("event") == "bypass"]
    tcp = [r for r in recs if r["proto"] == "tcp" and r["dst"] == canary.addr]
    udp = [r for r in recs if r["proto"] == "udp" and r["dst"] == canary.addr]
    assert tcp and udp, recs
    for rec in tcp + udp:
        assert rec["sandbox"] == "bt-audit" and rec["uid"] == AGENT_UID
        # The proxy's schema: a number ts, a decision and its reason.
        assert rec["decision"] == "deny" and rec["reason"] == "direct_connection", rec
        assert isinstance(rec["ts"], float) and abs(rec["ts"] - time.time()) < 3600, rec
        assert "time" not in rec and None not in rec.values(), rec
    # Every record of the log, proxy's and monitor's, starts the same way.
    for rec in sup.records():
        assert {"ts", "sandbox", "event", "decision", "reason"} <= rec.keys(), rec
    assert tcp[0]["dport"] == CANARY_TCP_PORT and udp[0]["dport"] == CANARY_UDP_PORT
    # The UDP socket is still open when the record is written: owner resolved.
    assert isinstance(udp[0]["pid"], int) and udp[0]["pid"] > 1
    assert os.path.basename(udp[0]["binary"]).startswith("python3"), udp[0]
    # Control: the allowed proxy connection produced no bypass record.
    assert not [r for r in recs if r.get("dport") == 3128], recs


def test_ping_fails_inside_and_works_outside(canary, supervisors):
    sup = supervisors("bt-ping", [sys.executable, PROBE, "sleep=20"])
    netns = sup.netns()
    _, _, veth = sandbox_links(netns)
    Canary.sysctl(veth, 1)
    check = f"ping={canary.addr}"
    outside = subprocess.run([sys.executable, PROBE, check], capture_output=True, text=True)
    assert '"ok": true' in outside.stdout, "control: the host can ping the canary"
    assert probe_in_netns(netns, check)[check]["ok"] is False


def test_ipv6_loopback_works_but_routes_do_not(supervisors):
    sup = supervisors("bt-v6", [sys.executable, PROBE, "sleep=20"])
    netns = sup.netns()
    script = ("import socket;s=socket.socket(socket.AF_INET6);s.bind(('::1',0));s.listen();"
              "c=socket.socket(socket.AF_INET6);c.connect(s.getsockname()[:2]);print('ok')")
    assert in_netns(netns, sys.executable, "-c", script).stdout.strip() == "ok"
    r = probe_in_netns(netns, "tcp=[2001:db8::1]:80", "tcp=[fd00::1]:80")
    assert r["tcp=[2001:db8::1]:80"]["ok"] is False and r["tcp=[fd00::1]:80"]["ok"] is False
    assert "default" not in in_netns(netns, "ip", "-6", "route").stdout


def test_two_sandboxes_cannot_reach_each_other(supervisors):
    a = supervisors("bt-a", [sys.executable, PROBE, "sleep=20"])
    b = supervisors("bt-b", [sys.executable, PROBE, "sleep=20"])
    na, nb = a.netns(), b.netns()
    a_agent, a_host, _ = sandbox_links(na)
    b_agent, b_host, _ = sandbox_links(nb)
    assert a_host != b_host, "each sandbox gets its own subnet"
    r = probe_in_netns(na, f"tcp={a_host}:3128", f"tcp={b_host}:3128", f"tcp={b_agent}:22")
    assert r[f"tcp={a_host}:3128"]["ok"] is True, "control: own proxy reachable"
    assert r[f"tcp={b_host}:3128"]["ok"] is False
    assert r[f"tcp={b_agent}:22"]["ok"] is False
    r = probe_in_netns(nb, f"tcp={b_host}:3128", f"tcp={a_host}:3128")
    assert r[f"tcp={b_host}:3128"]["ok"] is True and r[f"tcp={a_host}:3128"]["ok"] is False


def test_killing_the_proxy_leaves_no_egress(canary, supervisors):
    sup = supervisors("bt-kill", [sys.executable, PROBE, "sleep=30"])
    netns = sup.netns()
    _, host, veth = sandbox_links(netns)
    Canary.sysctl(veth, 1)
    # A process that survives the supervisor (not its child) holds the namespace.
    holder = subprocess.Popen(["nsenter", f"--net={netns}", "sleep", "60"])
    try:
        time.sleep(0.2)
        hold_ns = f"/proc/{holder.pid}/ns/net"
        before = probe_in_netns(hold_ns, f"tcp={host}:3128")
        assert before[f"tcp={host}:3128"]["ok"] is True, "control: proxy up"
        sup.proc.kill()
        sup.proc.wait()
        r = probe_in_netns(hold_ns, f"tcp={host}:3128", f"tcp={canary.addr}:{CANARY_TCP_PORT}",
                           f"udp={canary.addr}:{CANARY_UDP_PORT}")
        assert r[f"tcp={host}:3128"]["ok"] is False
        assert r[f"tcp={canary.addr}:{CANARY_TCP_PORT}"]["errno"] == "ECONNREFUSED"
        assert r[f"udp={canary.addr}:{CANARY_UDP_PORT}"]["ok"] is False
        assert canary.poll_hits(0.5) == []
    finally:
        holder.kill()
        holder.wait()
        subprocess.run(["ip", "link", "del", veth], capture_output=True)


@pytest.mark.parametrize("step,expect", [
    ("veth", "step veth"), ("address", "step veth"), ("nftables", "step nftables"),
    ("route", "step agent network"), ("proxy", "probe proxy")])
def test_injected_failure_stops_start_and_names_step(step, expect):
    links = our_links()
    # Test-only hook: the named step's kernel request is made invalid so it
    # really fails ("proxy": the proxy is left unstarted, so confirm fails).
    env = {"OPENSHELL_TEST_FAIL_STEP": step}
    argv = ["/bin/echo", "AGENT-RAN"]
    sup = Supervisor(f"bt-fail-{step}", argv, env=env).start()
    try:
        rc, out, err = sup.wait()
    finally:
        sup.stop()
    assert rc != 0 and "AGENT-RAN" not in out
    assert expect in err, err
    time.sleep(0.2)
    assert our_links() == links or set(our_links()) <= set(links), "teardown left a veth"


def test_control_without_injection_agent_runs():
    sup = Supervisor("bt-fail-none", ["/bin/echo", "AGENT-RAN"]).start()
    try:
        rc, out, err = sup.wait()
    finally:
        sup.stop()
    assert rc == 0 and "AGENT-RAN" in out, err


def test_agent_reads_its_denials_from_policy_local(supervisors):
    """From inside a real sandbox, with nothing set up by the agent: a refused
    HTTPS request, then `curl http://policy.local/v1/denials` through the
    proxy variables the sandbox sets, which names the refusal (no query)."""
    script = ("curl -s -o /dev/null -w 'connect=%{http_connect}\\n' "
              "'https://denied.test/x?key=hidden'; curl -s http://policy.local/v1/denials")
    sup = supervisors("bt-denials", ["/bin/sh", "-c", script])
    rc, out, err = sup.wait()
    assert rc == 0, err
    assert "connect=403" in out
    import json
    doc = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    d = doc["denials"][0]
    assert d["host"] == "denied.test" and d["port"] == 443 and d["error"] == "policy_denied"
    assert d["binary"].endswith("/curl") and "hidden" not in out


TRUST_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
              "NPM_CONFIG_CAFILE", "PIP_CERT", "AWS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")


def test_every_runtime_is_told_to_trust_the_sandbox_ca(supervisors):
    """Each variable names a file the agent can read inside its view; the
    bundles hold the system roots and the sandbox CA, Node's the CA alone."""
    script = "; ".join(
        f'echo "{v}=${v} $(grep -c BEGIN.CERTIFICATE "${v}")"' for v in TRUST_VARS)
    script += '; echo "NODE_USE_ENV_PROXY=$NODE_USE_ENV_PROXY"'
    sup = supervisors("bt-trust", ["/bin/sh", "-c", script])
    rc, out, err = sup.wait()
    assert rc == 0, err
    seen = dict(l.split("=", 1) for l in out.splitlines() if "=" in l and l.split("=")[0] in
                (*TRUST_VARS, "NODE_USE_ENV_PROXY"))
    assert seen["NODE_USE_ENV_PROXY"] == "1"
    counts = {v: int(seen[v].rsplit(" ", 1)[1]) for v in TRUST_VARS}
    assert counts["NODE_EXTRA_CA_CERTS"] == 1, seen
    bundle = seen["SSL_CERT_FILE"].rsplit(" ", 1)[0]
    for v in TRUST_VARS[:-1]:
        assert seen[v].rsplit(" ", 1)[0] == bundle and counts[v] > 1, seen
