"""`kube-testenv down` leaves nothing of the node behind: no process, bridge,
veth, netns, mount, cgroup, nftables/iptables/ipset state, changed sysctl or
file in the shared host paths, compared with the snapshot taken before `up`.
Runs last (it stops the session's node) after the other tests ran Pods on
both runtimes."""
import os, re

import pytest

from tests.lib import nodelib
from tests.lib.nodelib import sh, workload_pod


OUR_LINK = re.compile(r"veth[0-9a-f]{8}|osp[vd][0-9a-f]{6}")


def added(before, after):
    return sorted(set(after) - set(before))


@pytest.mark.node_teardown
def test_down_leaves_the_host_as_it_was(node, ns):
    # At least one Pod of each runtime running at `down`, as after a test
    # that failed half-way: down must not rely on Pods being deleted first.
    for name, rc in (("stay-runc", None), ("stay-gvisor", "gvisor")):
        node.client.post(f"/api/v1/namespaces/{ns}/pods",
                         workload_pod(name, sh("sleep 3600"), runtime_class=rc))
    for name in ("stay-runc", "stay-gvisor"):
        nodelib.wait_phase(node.client, ns, name, ("Running",))
    during = nodelib.host_snapshot()
    assert nodelib.BRIDGE in during["links"] and during["nft"] != node.before["nft"]  # control

    node.stop()
    after, before = nodelib.host_snapshot(), node.before

    assert nodelib.node_processes(node.dir) == []
    assert not os.path.exists(node.dir)
    # Links: ours only (the bridge, the CNI's veth<8 hex> ports, the
    # containment probes' osp[vd]<6 hex>): on a shared machine other tests
    # (sandboxes, benchmarks) add and remove their own in the host netns.
    assert [l for l in added(before["links"], after["links"])
            if l == nodelib.BRIDGE or OUR_LINK.fullmatch(l)] == []
    assert added(before["netns"], after["netns"]) == []
    assert [m for m in added(before["mounts"], after["mounts"])] == []
    assert added(before["cgroups"], after["cgroups"]) == []
    assert after["nft"] == before["nft"]
    assert after["iptables"] == before["iptables"]
    assert added(before["ipsets"], after["ipsets"]) == []
    assert after["sysctls"] == before["sysctls"]
    for p, entries in after["paths"].items():
        if before["paths"][p] is None:
            assert entries is None, f"{p} was created and left: {entries}"
        else:
            assert added(before["paths"][p], entries) == [], p
