"""The seed's five acceptance criteria (supervisor-runtimeclass-request.txt)
with running Pods on the node, each gateway installed by the chart and
driven by the host's CLI (tests/lib/helm_release.py). "Runs under that
handler" is read from inside each Pod: an ephemeral container shares the
Pod's sandbox, so it sees gVisor's kernel under runsc and the host's under
runc.

Classes: `gvisor` (handler runsc, made by `up --node`), and made here
`seed-runc-workload` and `seed-runc-supervisor` (handler runc: two distinct
class names on the handler the node has), `seed-kata-missing` (handler
kata, which the node lacks)."""
import json, threading

import pytest

from tests.lib import nodelib
from tests.lib.helm_release import HostServers, Release

RC = "/apis/node.k8s.io/v1/runtimeclasses"
CLASSES = {"seed-runc-workload": "runc", "seed-runc-supervisor": "runc",
           "seed-kata-missing": "kata"}


@pytest.fixture(scope="module")
def classes(node):
    for name, handler in CLASSES.items():
        node.client.post(RC, {"metadata": {"name": name}, "handler": handler})
    yield
    if not node.stopped:
        for name in CLASSES:
            node.client.delete(f"{RC}/{name}")


def host_kernel():
    with open("/proc/version") as f:
        return f.read().strip()


def assert_handler(c, ns, pod, handler, probe="kernel-probe"):
    k = nodelib.kernel_inside(c, ns, pod["metadata"]["name"], probe)
    if handler == "runsc":
        assert "gvisor" in k.lower() and k != host_kernel(), k
    else:
        assert k == host_kernel(), k


def create_ready(rel, name, *extra):
    r = rel.cli("sandbox", "create", "--name", name, "--detach", *extra)
    sb = rel.cli_json("sandbox", "get", name)
    assert r.returncode == 0 and sb["phase"] == "Ready", \
        f"{r.stderr}\n{json.dumps(sb)[:3000]}\n{rel.diagnose(sb['id'])}"
    return sb


@pytest.fixture(scope="module")
def two_classes(node, classes):
    """Workload default gvisor, supervisor seed-runc-supervisor: distinct
    classes on distinct handlers."""
    r = Release(node, {"server": {"topology": "dedicated-supervisor",
                                  "defaultRuntimeClassName": "gvisor",
                                  "allowedRuntimeClassNames": ["gvisor", "seed-runc-workload"]},
                       "supervisor": {"runtimeClassName": "seed-runc-supervisor"}},
                sandbox_labels=nodelib.RESTRICTED, name="seed2")
    yield r
    r.close()


def test_1_and_2_two_classes_run_under_their_handlers_across_stop_start(two_classes):
    rel, c = two_classes, two_classes.c
    ns = rel.sandbox_ns
    sb = create_ready(rel, "c12")
    pods = rel.sandbox_pods(sb["id"])
    assert pods["workload"]["spec"]["runtimeClassName"] == "gvisor"
    assert pods["supervisor"]["spec"]["runtimeClassName"] == "seed-runc-supervisor"
    assert_handler(c, ns, pods["workload"], "runsc")
    assert_handler(c, ns, pods["supervisor"], "runc")
    before = {k: p["metadata"]["uid"] for k, p in pods.items()}

    assert rel.cli("sandbox", "stop", "c12").returncode == 0
    nodelib.wait_for(lambda: rel.sandbox_pods(sb["id"]) == {}, 120, "both Pods gone after stop")
    r = rel.cli("sandbox", "start", "c12")
    assert r.returncode == 0, r.stderr
    nodelib.wait_for(lambda: rel.cli_json("sandbox", "get", "c12")["phase"] == "Ready", 180,
                     "c12 Ready again")
    pods = rel.sandbox_pods(sb["id"])
    assert {k: p["metadata"]["uid"] for k, p in pods.items()}.keys() == before.keys()
    assert all(pods[k]["metadata"]["uid"] != before[k] for k in before), "replacement Pods"
    assert pods["workload"]["spec"]["runtimeClassName"] == "gvisor"
    assert pods["supervisor"]["spec"]["runtimeClassName"] == "seed-runc-supervisor"
    assert_handler(c, ns, pods["workload"], "runsc", "probe-after-start")
    assert_handler(c, ns, pods["supervisor"], "runc", "probe-after-start")
    assert rel.cli("sandbox", "delete", "c12").returncode == 0


def test_4_the_caller_changes_only_the_workload_class(two_classes):
    rel, c = two_classes, two_classes.c
    sb = create_ready(rel, "c4", "--runtime-class", "seed-runc-workload")
    pods = rel.sandbox_pods(sb["id"])
    assert pods["workload"]["spec"]["runtimeClassName"] == "seed-runc-workload"
    assert pods["supervisor"]["spec"]["runtimeClassName"] == "seed-runc-supervisor"
    assert_handler(c, rel.sandbox_ns, pods["workload"], "runc")
    # Asking for the supervisor's class as the workload's is outside the
    # allowlist; there is no way to name a supervisor class at all.
    r = rel.cli("sandbox", "create", "--name", "c4-bad", "--detach",
                "--runtime-class", "seed-runc-supervisor")
    assert r.returncode == 1 and "not allowed" in r.stderr and "HTTP 400" in r.stderr, r.stderr
    assert rel.cli("sandbox", "get", "c4-bad").returncode != 0
    assert rel.cli("sandbox", "delete", "c4").returncode == 0


def test_3_supervisor_unset_runs_on_the_default_handler_beside_gvisor(node, classes):
    rel = Release(node, {"server": {"topology": "dedicated-supervisor",
                                    "defaultRuntimeClassName": "gvisor"}},
                  sandbox_labels=nodelib.RESTRICTED, name="seed3")
    try:
        sb = create_ready(rel, "c3")
        pods = rel.sandbox_pods(sb["id"])
        assert pods["workload"]["spec"]["runtimeClassName"] == "gvisor"
        assert "runtimeClassName" not in pods["supervisor"]["spec"]
        assert_handler(rel.c, rel.sandbox_ns, pods["workload"], "runsc")
        assert_handler(rel.c, rel.sandbox_ns, pods["supervisor"], "runc")
    finally:
        rel.close()


def watch_pods(c, ns, stop):
    """Every Pod version seen in ns until stop is set: [(type, pod)]."""
    seen = []
    start = c.list(f"/api/v1/namespaces/{ns}/pods")["metadata"]["resourceVersion"]

    def go():
        rv = start
        while not stop.is_set():
            for ev in c.watch(f"/api/v1/namespaces/{ns}/pods", resource_version=rv,
                              timeout_seconds=5):
                seen.append((ev["type"], ev["object"]))
                rv = ev["object"]["metadata"]["resourceVersion"]
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, seen


def test_5_handler_missing_fails_the_sandbox_and_the_workload_never_runs(node, classes, tmp_path):
    """The class object exists, the node has no `kata` handler: the
    supervisor Pod cannot start. The sandbox reports that in its status and
    `sandbox get` within the reconcile's period, and is never Ready; the
    workload is never ungated (its request never reaches the host); no
    supervisor Pod without the class is ever created."""
    servers = HostServers(node.host_ip)
    rel = Release(node, {"server": {"topology": "dedicated-supervisor"},
                         "supervisor": {"runtimeClassName": "seed-kata-missing"}},
                  sandbox_labels=nodelib.RESTRICTED, name="seed5")
    stop = threading.Event()
    try:
        t, seen = watch_pods(rel.c, rel.sandbox_ns, stop)
        policy = tmp_path / "p.yaml"
        policy.write_text("version: 1\nnetwork_policies:\n  h:\n    endpoints:\n"
                          f"      - host: {node.host_ip}\n        port: {servers.allowed_port}\n"
                          f"        allowed_ips: [\"{node.host_ip}/32\"]\n")
        r = rel.cli("sandbox", "create", "--name", "c5", "--detach", "--policy", str(policy),
                    "--", "/bin/sh", "-c",
                    f"wget -q -O - http://{node.host_ip}:{servers.allowed_port}/; sleep 3600")
        # The foreground create ends with the failure (a bounded wait).
        assert r.returncode != 0, r.stdout
        sb = nodelib.wait_for(
            lambda: (lambda s: s if s["phase"] == "Error" else None)(
                rel.cli_json("sandbox", "get", "c5")), 120, "c5 in phase Error")
        assert "FailedCreatePodSandBox" in sb["message"], sb
        assert 'no runtime for "kata" is configured' in sb["message"], sb
        assert "workload never ran" in sb["message"], sb
        text = rel.cli("sandbox", "get", "c5").stdout
        assert "Error" in text and "no runtime for" in text, text
        stop.set()
        t.join(15)
        sups = [p for _, p in seen
                if p["metadata"].get("labels", {}).get("openshell.ai/component") == "supervisor"]
        wls = [p for _, p in seen
               if p["metadata"].get("labels", {}).get("openshell.ai/component") == "workload"]
        assert sups, "the supervisor Pod was created with its class"
        assert {p["spec"].get("runtimeClassName") for p in sups} == {"seed-kata-missing"}, sups
        # Every version of the workload Pod was gated: it never ran.
        assert all(p["spec"].get("schedulingGates") for p in wls), \
            [p["spec"].get("schedulingGates") for p in wls]
        assert servers.allowed_hits == []
        assert rel.sandbox_pods(sb["id"]) == {}
    finally:
        stop.set()
        rel.close()
        servers.close()
