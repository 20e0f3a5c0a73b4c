"""Pods can never send a packet off this machine: they get routes for the
bridge subnet and the Service range only (no default route), nothing
masquerades their traffic, global forwarding stays off (the bridge alone
forwards), and a guard rule drops anything from the bridge routed to another
interface -- shown at work with a probe on the bridge and a dummy interface
standing in for the outside (never a real outside address)."""
import json, os, socket, subprocess, uuid

import pytest

from tests.lib import nodelib
from tests.lib.nodelib import sh, workload_pod

POD_CIDR, SERVICE_CIDR = "10.244.0.0/24", "10.97.0.0/16"  # tools/kube-testenv/testenv_host.py
PROBE_IP = "10.244.0.250"  # outside the CNI range (.2-.199)
# Stands in for "another interface": a veth into a sink netns that owns this
# network, so a packet routed there stays on the machine (RFC 2544
# benchmarking range, unused elsewhere in the tests; the kernel has no dummy).
ELSEWHERE_NET, ELSEWHERE_HOST, ELSEWHERE_DST = "198.18.250.0/24", "198.18.250.254", "198.18.250.1"


def ipv4_routes(log):
    """Route lines of `ip route`, without the loopback ones gVisor lists."""
    return sorted(l.split()[0] + (" via " + l.split()[l.split().index("via") + 1] if " via " in l else "")
                  for l in log.splitlines() if l.strip() and " lo " not in l + " " and ":" not in l.split()[0])


@pytest.mark.parametrize("runtime_class", [None, "gvisor"])
def test_pod_routes_are_bridge_subnet_and_service_range_only(node, ns, runtime_class):
    name = f"routes-{runtime_class or 'runc'}"
    log = nodelib.run_to_completion(node.client, ns, workload_pod(
        name, sh("ip route; echo ---; nc -w 2 198.18.250.1 80 </dev/null 2>&1; echo rc=$?"),
        runtime_class=runtime_class))
    routes, probe = log.split("---")
    assert ipv4_routes(routes) == sorted([POD_CIDR, f"{SERVICE_CIDR} via {node.host_ip}"]), log
    assert "default" not in routes, log
    # No route: the connect fails in the Pod itself, nothing is sent.
    assert "rc=1" in probe and "unreachable" in probe.lower(), log


def test_forwarding_is_on_for_the_bridge_only(node):
    assert nodelib._read("/proc/sys/net/ipv4/ip_forward") == "0"
    on = sorted(i for i in os.listdir("/proc/sys/net/ipv4/conf")
                if nodelib._read(f"/proc/sys/net/ipv4/conf/{i}/forwarding") == "1")
    assert on == [nodelib.BRIDGE]


def test_nothing_masquerades_pod_traffic(node):
    with open(f"{node.dir}/cni/net.d/10-osnode.conflist") as f:
        bridge = json.load(f)["plugins"][0]
    assert bridge["ipMasq"] is False and bridge["isDefaultGateway"] is False
    assert " MASQUERADE" not in subprocess.run(["iptables-save", "-t", "nat"], stdout=subprocess.PIPE,
                                               text=True).stdout
    # kube-proxy's masquerade rule is the only one: it rewrites Service traffic
    # that it DNATs to an endpoint on the bridge (hairpin), which stays local.
    ruleset = json.loads(subprocess.run(["nft", "-j", "list", "ruleset"], stdout=subprocess.PIPE,
                                        text=True, check=True).stdout)["nftables"]
    masq = {(r["rule"]["family"], r["rule"]["table"]) for r in ruleset
            if "rule" in r and any("masquerade" in e for e in r["rule"]["expr"])}
    assert masq <= {("ip", "kube-proxy"), ("ip6", "kube-proxy")}, masq


def guard_drops():
    t = json.loads(subprocess.run(["nft", "-j", "list", "table", "inet", "openshell_node_guard"],
                                  stdout=subprocess.PIPE, text=True, check=True).stdout)["nftables"]
    rules = [r["rule"] for r in t if "rule" in r]
    assert len(rules) == 1, rules
    counter = next(e["counter"] for e in rules[0]["expr"] if "counter" in e)
    assert any("drop" in e for e in rules[0]["expr"]), rules
    return counter["packets"]


def tx_packets(ifname):
    with open(f"/sys/class/net/{ifname}/statistics/tx_packets") as f:
        return int(f.read())


def run(*argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def send_udp(dst, count, netns=None, port=9):
    code = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"for _ in range({count}): s.sendto(b'probe', ('{dst}', {port}))\n")
    prefix = ["ip", "netns", "exec", netns] if netns else []
    subprocess.run([*prefix, "/usr/bin/python3", "-c", code], check=True)


def test_guard_drops_bridge_traffic_routed_to_another_interface(node):
    tag = uuid.uuid4().hex[:6]
    netns, veth = f"osprobe-{tag}", f"ospv{tag}"
    sink, dummy = f"ossink-{tag}", f"ospd{tag}"  # dummy: the host end of the sink's veth
    try:
        run("ip", "netns", "add", sink)
        run("ip", "link", "add", dummy, "type", "veth", "peer", "name", "eth0", "netns", sink)
        # No IPv6 there: its neighbour discovery would add packets of its own.
        with open(f"/proc/sys/net/ipv6/conf/{dummy}/disable_ipv6", "w") as f:
            f.write("1")
        run("ip", "addr", "add", f"{ELSEWHERE_HOST}/24", "dev", dummy)
        run("ip", "link", "set", dummy, "up")
        run("ip", "-n", sink, "addr", "add", f"{ELSEWHERE_DST}/24", "dev", "eth0")
        run("ip", "-n", sink, "link", "set", "eth0", "up")
        run("ip", "netns", "add", netns)
        run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
        run("ip", "link", "set", veth, "master", nodelib.BRIDGE, "up")
        run("ip", "-n", netns, "addr", "add", f"{PROBE_IP}/24", "dev", "eth0")
        run("ip", "-n", netns, "link", "set", "eth0", "up")
        run("ip", "-n", netns, "route", "add", "default", "via", node.host_ip)

        # Control: the host's own packets to that network do leave by that interface.
        tx0 = tx_packets(dummy)
        send_udp(ELSEWHERE_DST, 5)
        assert tx_packets(dummy) >= tx0 + 5

        # A probe on the bridge with a default route (which no Pod gets)
        # tries the same: the guard drops each packet, that interface sends none.
        drops0, tx0 = guard_drops(), tx_packets(dummy)
        send_udp(ELSEWHERE_DST, 5, netns)
        assert guard_drops() >= drops0 + 5
        assert tx_packets(dummy) == tx0

        # And the probe reaches the host itself (not forwarded: input).
        srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            srv.bind((node.host_ip, 0))
            srv.settimeout(10)
            send_udp(node.host_ip, 1, netns, port=srv.getsockname()[1])
            assert srv.recvfrom(64)[0] == b"probe"
        finally:
            srv.close()
    finally:
        for n in (netns, sink):
            subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "link", "del", dummy], stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "link", "del", veth], stderr=subprocess.DEVNULL)
