"""The dedicated-supervisor topology running on the node, deployed as an
operator would: `helm install` of deploy/helm/openshell with our images, the
gateway reached from the host through its Service, the host's CLI driving it
with the token from the chart's Secret (docs/helm.md), and a sandbox created
through that CLI. Its supervisor Pod runs under gVisor (checked from inside
the Pod), dials the gateway by its Service name, and is the agent's only way
out: an allowed endpoint answers through its proxy, a denied one gets the
proxy's 403, and a direct connection that ignores the proxy is stopped by the
enforced fence (a canary on the host sees nothing, while an unfenced Pod's
connection reaches it). The supervisor's log holds the audit records."""

import json

import pytest

from tests.lib import nodelib
from tests.lib.helm_release import (HostServers, Release, assert_audited,
                                     assert_canary_reachable_unfenced)

SUPERVISOR_CLASS = "gvisor"


@pytest.fixture(scope="module")
def servers(node):
    s = HostServers(node.host_ip)
    yield s
    s.close()


@pytest.fixture(scope="module")
def release(node):
    r = Release(node, {"server": {"topology": "dedicated-supervisor"},
                       "supervisor": {"runtimeClassName": SUPERVISOR_CLASS}},
                sandbox_labels=nodelib.RESTRICTED)
    yield r
    r.close()


def policy_file(tmp_path, host_ip, port):
    p = tmp_path / "policy.yaml"
    p.write_text("version: 1\nnetwork_policies:\n  host_server:\n    endpoints:\n"
                 f"      - host: {host_ip}\n        port: {port}\n"
                 f"        allowed_ips: [\"{host_ip}/32\"]\n")
    return str(p)


def test_helm_release_serves_the_host_cli_with_the_secrets_token(release):
    r = release.cli("sandbox", "list")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:2] == ["NAME", "PHASE"], r.stdout
    # The token is what admits it: another one is refused.
    bad = release.cli("sandbox", "list", token="0" * 64)
    assert bad.returncode != 0 and "401" in bad.stderr + bad.stdout, bad
    # The gateway runs as the chart says: in-cluster, dedicated topology.
    assert "topology dedicated-supervisor" in release.gateway_log()


def test_dedicated_sandbox_egress_only_through_its_gvisor_supervisor(release, servers, tmp_path,
                                                                      node):
    c, ns = release.c, release.sandbox_ns
    script = (f"wget -q -O - http://{node.host_ip}:{servers.allowed_port}/ok; echo allowed_rc=$?; "
              f"wget -q -O - http://{node.host_ip}:{servers.canary_port}/no 2>&1; "
              f"echo denied_rc=$?; "
              f"nc -w 5 {node.host_ip} {servers.canary_port} </dev/null; echo direct_rc=$?; "
              "echo agent-done; sleep 3600")
    r = release.cli("sandbox", "create", "--name", "ded1", "--detach", "--policy",
                    policy_file(tmp_path, node.host_ip, servers.allowed_port),
                    "--", "/bin/sh", "-c", script)
    assert r.returncode == 0, r.stdout + r.stderr
    sb = release.cli_json("sandbox", "get", "ded1")
    assert sb["phase"] == "Ready", sb
    sid = sb["id"]
    pods = release.sandbox_pods(sid)
    sup, wl = pods["supervisor"], pods["workload"]
    # Placement: the operator's class on the supervisor, none on the workload.
    assert sup["spec"].get("runtimeClassName") == SUPERVISOR_CLASS
    assert "runtimeClassName" not in wl["spec"]
    assert "schedulingGates" not in wl["spec"] or not wl["spec"]["schedulingGates"]
    # The fence objects select this sandbox's Pods.
    nps = c.get(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
                labelSelector=f"openshell.ai/sandbox-id={sid}")["items"]
    assert len(nps) >= 1 and any("Egress" in n["spec"].get("policyTypes", []) for n in nps), nps
    # The supervisor dials the gateway by its Service name (the chart's default).
    cmd = sup["spec"]["containers"][0]["command"]
    env = {e["name"]: e.get("value") for e in sup["spec"]["containers"][0]["env"]}
    assert "--gateway" in cmd
    assert env["OPENSHELL_GATEWAY_ENDPOINT"] == \
        f"http://osh-openshell.{release.ns}.svc:17670", env

    out = nodelib.wait_for(
        lambda: (lambda t: t if "agent-done" in t else None)(
            nodelib.logs(c, ns, wl["metadata"]["name"])), 120, "the agent's checks")
    assert "allowed-upstream-answer" in out and "allowed_rc=0" in out, out
    assert "403" in out and "denied_rc=1" in out, out
    assert "direct_rc=0" not in out, out
    # The allowed request reached the host server from the supervisor Pod.
    assert [h[0] for h in servers.allowed_hits] == [sup["status"]["podIP"]], servers.allowed_hits
    assert servers.canary_hits == [], servers.canary_hits

    assert_audited(c, ns, sup["metadata"]["name"], servers)
    assert_canary_reachable_unfenced(release, servers, "canary-control")

    # `sandbox logs` reads the kubelet's logs through the API (pods/log, the
    # chart's RBAC): the agent's output, and the supervisor's records.
    r = release.cli("sandbox", "logs", "ded1")
    assert r.returncode == 0 and "allowed_rc=0" in r.stdout and "agent-done" in r.stdout, r
    recs = [json.loads(l) for l in release.cli("-o", "json", "sandbox", "logs", "ded1",
                                               "--audit").stdout.splitlines() if l.strip()]
    assert any(a.get("dport") == servers.canary_port and a["decision"] == "deny"
               for a in recs), recs

    # The supervisor runs on gVisor's kernel ("Linux version 4.19.0-gvisor"),
    # seen from inside its Pod; the workload (runc) on the host's.
    with open("/proc/version") as f:
        host_kernel = f.read().strip()
    inside = nodelib.kernel_inside(c, ns, sup["metadata"]["name"])
    assert "gvisor" in inside.lower() and inside.strip() != host_kernel, inside
    wl_kernel = nodelib.kernel_inside(c, ns, wl["metadata"]["name"])
    assert wl_kernel.strip() == host_kernel, wl_kernel
    assert release.cli("sandbox", "delete", "ded1").returncode == 0



def test_killed_supervisor_pod_stops_the_workload_fail_closed(release, servers, tmp_path, node):
    """The supervisor Pod is the agent's only way out and its policy
    authority: when it is killed (deleted with no grace, as a node failure
    or an attacker with delete rights would), the workload Pod is deleted
    too and the sandbox shows Error with the reason, and the agent never
    got a direct path meanwhile (the canary sees nothing)."""
    c, ns = release.c, release.sandbox_ns
    script = (f"while true; do nc -w 1 {node.host_ip} {servers.canary_port} </dev/null; "
              "sleep 0.2; done")
    r = release.cli("sandbox", "create", "--name", "ded-kill", "--detach", "--policy",
                    policy_file(tmp_path, node.host_ip, servers.allowed_port),
                    "--", "/bin/sh", "-c", script)
    assert r.returncode == 0, r.stdout + r.stderr
    sb = release.cli_json("sandbox", "get", "ded-kill")
    sid = sb["id"]
    assert sb["phase"] == "Ready", (sb, release.diagnose(sid))
    hits_before = len(servers.canary_hits)
    sup = release.sandbox_pods(sid)["supervisor"]
    c.delete(f"/api/v1/namespaces/{ns}/pods/{sup['metadata']['name']}",
             gracePeriodSeconds="0")
    nodelib.wait_for(lambda: "workload" not in release.sandbox_pods(sid), 60,
                     "the workload Pod deleted after its supervisor")
    # Not stopped by anyone who asked: an Error that says why.
    view = nodelib.wait_for(
        lambda: (lambda v: v if v["phase"] == "Error" else None)(
            release.cli_json("sandbox", "get", "ded-kill")), 60, "the sandbox in Error")
    assert "fail closed" in view.get("message", ""), view
    assert len(servers.canary_hits) == hits_before, servers.canary_hits
    assert release.cli("sandbox", "delete", "ded-kill").returncode == 0
