"""The combined topology running on the node, deployed as an operator would
(`helm install` with our images, the host's CLI through the gateway's
Service): one Pod per sandbox, the supervisor and the agent in it. The
container runtime mounts /proc/sys read-only in every Pod, so the supervisor
makes only /proc/sys/net writable in a private mount namespace of its own
(src/supervisor/net/procsys.c) to build the agent's network namespace, veth
and nftables fence inside the Pod. The agent reaches an allowed endpoint
through the proxy, gets the proxy's 403 for a denied one, and a direct
connection that ignores the proxy is refused by the fence inside the Pod (a
canary on the host sees nothing); the supervisor's log holds the audit
records, and the agent cannot write the network sysctls the supervisor
could."""
import json, subprocess

import pytest

from tests.lib import build, nodelib
from tests.lib.helm_release import (HostServers, Release, assert_audited,
                                     assert_canary_reachable_unfenced)


@pytest.fixture(scope="module")
def servers(node):
    s = HostServers(node.host_ip)
    yield s
    s.close()


@pytest.fixture(scope="module")
def release(node):
    r = Release(node, {"server": {"topology": "combined"}})
    yield r
    r.close()


def policy_file(tmp_path, host_ip, port):
    """In one Pod the supervisor sees the caller: the policy names the
    binary (the test agent's wget is busybox)."""
    p = tmp_path / "policy.yaml"
    p.write_text("version: 1\nnetwork_policies:\n  host_server:\n    endpoints:\n"
                 f"      - host: {host_ip}\n        port: {port}\n"
                 f"        allowed_ips: [\"{host_ip}/32\"]\n"
                 "    binaries:\n      - path: /bin/busybox\n")
    return str(p)


def test_combined_sandbox_egress_only_through_its_supervisor(release, servers, tmp_path, node):
    c, ns = release.c, release.sandbox_ns
    script = (f"wget -q -O - http://{node.host_ip}:{servers.allowed_port}/ok; echo allowed_rc=$?; "
              f"wget -q -O - http://{node.host_ip}:{servers.canary_port}/no 2>&1; "
              f"echo denied_rc=$?; "
              f"nc -w 5 {node.host_ip} {servers.canary_port} </dev/null; echo direct_rc=$?; "
              "echo 0 > /proc/sys/net/ipv4/ip_forward 2>/dev/null; echo sysctl_rc=$?; "
              "echo agent-done; sleep 3600")
    r = release.cli("sandbox", "create", "--name", "comb1", "--detach", "--policy",
                    policy_file(tmp_path, node.host_ip, servers.allowed_port),
                    "--", "/bin/sh", "-c", script)
    sb = release.cli_json("sandbox", "get", "comb1")
    sid = sb["id"]
    if r.returncode != 0 or sb["phase"] != "Ready":
        print(json.dumps(sb, indent=1), release.diagnose(sid))  # shown whole on failure
    assert r.returncode == 0, r.stdout + r.stderr
    assert sb["phase"] == "Ready", sb
    pods = release.sandbox_pods(sid)
    assert list(pods) == ["sandbox"], pods
    pod = pods["sandbox"]
    name = pod["metadata"]["name"]

    # The agent's output is the Pod's log (the supervisor passes it on).
    out = nodelib.wait_for(
        lambda: (lambda t: t if "agent-done" in t else None)(nodelib.logs(c, ns, name)), 120,
        "the agent's checks")
    assert "allowed-upstream-answer" in out and "allowed_rc=0" in out, out
    assert "403" in out and "denied_rc=1" in out, out
    assert "direct_rc=0" not in out, out
    assert "sysctl_rc=0" not in out, out
    # `sandbox logs --follow` streams the Pod's log through the API until
    # the sandbox is deleted (below); what it has shown so far is the agent's.
    follower = subprocess.Popen([build.binary("openshell"), "sandbox", "logs", "comb1",
                                 "--follow"], stdout=subprocess.PIPE, text=True,
                                env=release.cli_env())
    # The agent prints a line shaped like an allow record: the Pod's log
    # mixes its output with the supervisor's, so --audit is refused here
    # rather than offering it as a decision (dedicated serves it: its test).
    r = release.cli("sandbox", "logs", "comb1", "--audit")
    assert r.returncode != 0 and "422" in r.stderr, r
    # The allowed request left from the Pod itself (its proxy); nothing
    # reached the canary, neither through the proxy nor directly.
    assert [h[0] for h in servers.allowed_hits] == [pod["status"]["podIP"]], servers.allowed_hits
    assert servers.canary_hits == [], servers.canary_hits

    assert_audited(c, ns, name, servers)
    assert_canary_reachable_unfenced(release, servers, "canary-control-c")
    # exec and files go through the supervisor's session, as locally: the
    # command runs confined like the agent (its uid, no way out but the
    # proxy), and the workspace volume is the agent's /sandbox.
    hits = len(servers.canary_hits)  # the control's, above
    r = release.cli("sandbox", "exec", "comb1", "--", "/bin/sh", "-c",
                    f"id -u; nc -w 3 {node.host_ip} {servers.canary_port} </dev/null; "
                    "echo direct_rc=$?")
    assert r.returncode == 0 and "direct_rc=0" not in r.stdout, r
    assert r.stdout.split()[0] != "0", r.stdout  # not root
    local = tmp_path / "up.txt"
    local.write_text("uploaded through the session\n")
    r = release.cli("sandbox", "upload", "comb1", str(local), "up.txt")
    assert r.returncode == 0, r
    back = tmp_path / "down.txt"
    r = release.cli("sandbox", "download", "comb1", "up.txt", str(back))
    assert r.returncode == 0 and back.read_text() == local.read_text(), r
    assert len(servers.canary_hits) == hits, servers.canary_hits
    assert release.cli("sandbox", "delete", "comb1").returncode == 0
    # The follower ends by itself once the Pod (and so its log) is gone.
    out, _ = follower.communicate(timeout=90)
    assert follower.returncode == 0 and "agent-done" in out and "allowed_rc=0" in out, out
