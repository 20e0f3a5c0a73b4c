# The user's flow end to end against the real kube-apiserver: `openshell sandbox
# create --runtime-class C` -> openshell-gateway (default_driver = "kubernetes")
# -> the kubernetes driver -> Pods, and `openshell sandbox get` showing each
# Pod's name, phase and runtimeClassName (KUBERNETES.md criteria 1-5 through
# the gateway and CLI). The kubelet is played by writing Pod status.
import base64, threading

from tests.lib.driver_util import KINDS, exists, make_runtime_class, mark_ready, poll, uid, warn_event
from tests.lib.gateway_kube_util import (ENDPOINT_POLICY, KubeGateway, cli_bg, create_ready,
                                         objects_of, pods_of, start_gateway)
from tests.lib.gateway_util import free_port


def classes(kube, prefix):
    return (make_runtime_class(kube, f"{prefix}-wl-{uid()}"),
            make_runtime_class(kube, f"{prefix}-sup-{uid()}"),
            make_runtime_class(kube, f"{prefix}-kata-{uid()}"))


def test_create_with_allowed_class_get_shows_pods_and_classes(kube, ns, gateways):
    wclass, sclass, kata = classes(kube, "g1")
    g = start_gateway(kube, ns, gateways, default_runtime_class_name=wclass,
                      supervisor_runtime_class_name=sclass, allowed_runtime_class_names=[kata])
    st, status = g.request("GET", "/v1/gateway/status")
    assert st == 200 and status["driver"] == "kubernetes", status
    k = status["kubernetes"]
    assert k["ok"] is True and k["missing"] == [], k
    assert {c["name"]: c["role"] for c in k["runtime_classes"]} == {
        wclass: "workload-default", kata: "workload-allowed", sclass: "supervisor"}

    row = create_ready(kube, g, "g1", "--runtime-class", kata)
    assert row["phase"] == "Ready", row
    pods = pods_of(kube, ns, row["id"])
    assert pods["workload"]["spec"]["runtimeClassName"] == kata  # the caller's choice
    assert pods["supervisor"]["spec"]["runtimeClassName"] == sclass  # the operator's
    assert not pods["workload"]["spec"].get("schedulingGates"), "ungated once Ready"

    got = g.cli_json("sandbox", "get", "g1")
    by = {p["name"]: p for p in got["pods"]}
    wl, sup = f"os-{row['id']}-workload", f"os-{row['id']}-supervisor"
    assert by[wl]["runtimeClassName"] == kata and by[wl]["component"] == "workload"
    assert by[sup]["runtimeClassName"] == sclass and by[sup]["component"] == "supervisor"
    assert by[sup]["phase"] == "Running"
    assert got["placement"]["supervisor_runtime_class"] == sclass
    human = g.cli("sandbox", "get", "g1", check=0).stdout
    lines = {l.split()[0]: l.split() for l in human.splitlines() if l.startswith("os-")}
    assert lines[wl][1:] == ["workload", "Pending", kata], human  # no kubelet runs it
    assert lines[sup][1:] == ["supervisor", "Running", sclass], human


def test_pod_without_class_shows_dash_and_null(kube, ns, gateways):
    g = start_gateway(kube, ns, gateways)  # no class configured anywhere
    row = create_ready(kube, g, "g2")
    got = g.cli_json("sandbox", "get", "g2")
    assert [p["runtimeClassName"] for p in got["pods"]] == [None, None], got["pods"]
    assert all("runtimeClassName" not in p["spec"] for p in pods_of(kube, ns, row["id"]).values())
    human = g.cli("sandbox", "get", "g2", check=0).stdout
    rows = [l.split() for l in human.splitlines() if l.startswith("os-")]
    assert len(rows) == 2 and all(r[-1] == "-" for r in rows), human


def test_class_outside_allowlist_is_a_cli_error_from_400(kube, ns, gateways):
    wclass, sclass, kata = classes(kube, "g3")
    g = start_gateway(kube, ns, gateways, default_runtime_class_name=wclass,
                      supervisor_runtime_class_name=sclass, allowed_runtime_class_names=[kata])
    r = g.cli("sandbox", "create", "--name", "g3", "--detach", "--runtime-class", sclass)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "not allowed" in r.stderr and "HTTP 400" in r.stderr, r.stderr
    assert g.sandbox("g3") is None, "nothing recorded"
    assert kube.client.list(KINDS["Pod"].format(ns=ns))["items"] == []
    # Control: an allowed class is accepted by the same gateway.
    st, body = g.request("POST", "/v1/sandboxes", {"name": "g3-ok", "runtime_class_name": kata})
    assert st == 201, body


def test_api_rejects_supervisor_class_and_unknown_fields(kube, ns, gateways):
    wclass, sclass, kata = classes(kube, "g4")
    g = start_gateway(kube, ns, gateways, default_runtime_class_name=wclass,
                      supervisor_runtime_class_name=sclass, allowed_runtime_class_names=[kata])
    attempts = {
        "supervisor_runtime_class_name": kata,
        "supervisor": {"runtime_class_name": kata},
        "driver_config": {"supervisor_runtime_class_name": kata},
        "runtimeClassName": kata,
        "spec": {"runtime_class_name": kata},
    }
    for i, (field, value) in enumerate(attempts.items()):
        st, body = g.request("POST", "/v1/sandboxes", {"name": f"g4-bad{i}", field: value})
        assert st == 400, (field, st, body)
        assert f'"{field}"' in body["message"], (field, body)
        assert g.sandbox(f"g4-bad{i}") is None
    assert kube.client.list(KINDS["Pod"].format(ns=ns))["items"] == []
    # Control: the workload class field is honoured, the supervisor's stays the operator's.
    st, body = g.request("POST", "/v1/sandboxes", {"name": "g4-ok", "runtime_class_name": kata})
    assert st == 201, body
    pods = poll(lambda: (p := pods_of(kube, ns, body["id"])) and len(p) == 2 and p, 30, "Pods")
    assert pods["workload"]["spec"]["runtimeClassName"] == kata
    assert pods["supervisor"]["spec"]["runtimeClassName"] == sclass


def watch_pod_additions(kube, ns, seconds):
    start = kube.client.list(f"/api/v1/namespaces/{ns}/pods")["metadata"]["resourceVersion"]
    added = []

    def go():
        for ev in kube.client.watch(f"/api/v1/namespaces/{ns}/pods", resource_version=start,
                                    timeout_seconds=seconds):
            if ev["type"] == "ADDED":
                added.append(ev["object"])
    t = threading.Thread(target=go)
    t.start()
    return t, added


def test_missing_supervisor_class_reported_and_creation_fails(kube, ns, gateways):
    wclass = make_runtime_class(kube, f"g5-wl-{uid()}")
    missing = f"g5-missing-{uid()}"  # no RuntimeClass object
    g = start_gateway(kube, ns, gateways, default_runtime_class_name=wclass,
                      supervisor_runtime_class_name=missing)
    k = g.request("GET", "/v1/gateway/status")[1]["kubernetes"]
    assert k["ok"] is False and k["missing"] == [missing], k
    avail = {c["name"]: c["available"] for c in k["runtime_classes"]}
    assert avail == {wclass: True, missing: False}, k  # the control in the same check
    assert f"supervisor RuntimeClass '{missing}' not found" in g.log_text()

    t, added = watch_pod_additions(kube, ns, 6)
    r = g.cli("sandbox", "create", "--name", "g5", "--detach", timeout=60)
    t.join()
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f'RuntimeClass "{missing}" not found' in r.stderr, r.stderr
    assert added == [], [p["metadata"]["name"] for p in added]  # never without the class
    got = g.cli_json("sandbox", "get", "g5")
    assert got["phase"] == "Error" and missing in got["message"], got
    assert "supervisor" in got["message"], got
    assert got["pods"] == [], got
    assert all(not v for v in objects_of(kube, ns, got["id"]).values()), "rolled back"
    human = g.cli("sandbox", "get", "g5", check=0).stdout
    assert "Error" in human and missing in human and "no pods" in human, human

    # Control: once the class exists, the same gateway creates the sandbox with it.
    make_runtime_class(kube, missing)
    row = create_ready(kube, g, "g5-ok")
    assert pods_of(kube, ns, row["id"])["supervisor"]["spec"]["runtimeClassName"] == missing


def test_stop_start_keeps_classes_and_delete_removes_everything(kube, ns, gateways):
    wclass, sclass, kata = classes(kube, "g6")
    g = start_gateway(kube, ns, gateways, default_runtime_class_name=wclass,
                      supervisor_runtime_class_name=sclass, allowed_runtime_class_names=[kata])
    row = create_ready(kube, g, "g6", "--runtime-class", kata)
    sid = row["id"]
    old = {c: p["metadata"]["uid"] for c, p in pods_of(kube, ns, sid).items()}

    r = g.cli("sandbox", "stop", "g6", timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr, g.log_text()[-2000:])
    assert g.sandbox("g6")["phase"] == "Stopped"
    poll(lambda: not pods_of(kube, ns, sid), 30, "Pods deleted by stop")
    kept = objects_of(kube, ns, sid)
    assert kept["NetworkPolicy"] and kept["Service"] and kept["Secret"], "stop keeps the rest"

    # The operator changes every class and restarts the gateway: the sandbox
    # keeps the classes recorded at creation.
    other_w, other_s, other_k = classes(kube, "g6-other")
    g.stop()
    g2 = KubeGateway(kube, ns, state_dir=g.state_dir, port=g.port,
                     default_runtime_class_name=other_w, supervisor_runtime_class_name=other_s,
                     allowed_runtime_class_names=[other_k])
    g.owns_dir, g2.owns_dir = False, True  # g2 removes the shared state dir last
    gateways.append(g2)
    g2.start()

    h = cli_bg(g2, "sandbox", "start", "g6")
    sup = poll(lambda: pods_of(kube, ns, sid).get("supervisor"), 30, "supervisor recreated")
    mark_ready(kube, ns, sup["metadata"]["name"])
    r = h.result()
    assert r.returncode == 0, (r.stdout, r.stderr, g2.log_text()[-3000:])
    new = pods_of(kube, ns, sid)
    assert set(new) == {"workload", "supervisor"}
    assert all(new[c]["metadata"]["uid"] != old[c] for c in new), "replacement Pods"
    assert new["workload"]["spec"]["runtimeClassName"] == kata
    assert new["supervisor"]["spec"]["runtimeClassName"] == sclass
    got = g2.cli_json("sandbox", "get", "g6")
    assert sorted(p["runtimeClassName"] for p in got["pods"]) == sorted([kata, sclass])

    r = g2.cli("sandbox", "delete", "g6", timeout=90)
    assert r.returncode == 0, (r.stdout, r.stderr, g2.log_text()[-2000:])
    assert g2.sandbox("g6") is None
    assert all(not v for v in objects_of(kube, ns, sid).values()), objects_of(kube, ns, sid)
    assert not exists(kube.client, f"/api/v1/namespaces/{ns}/secrets/os-{sid}"), "anchor gone"


def test_kubelet_cannot_run_supervisor_class_get_shows_why(kube, ns, gateways):
    wclass, sclass, _ = classes(kube, "g7")
    g = start_gateway(kube, ns, gateways, default_runtime_class_name=wclass,
                      supervisor_runtime_class_name=sclass)
    st, body = g.request("POST", "/v1/sandboxes", {"name": "g7"})
    assert st == 201, body
    sup = poll(lambda: pods_of(kube, ns, body["id"]).get("supervisor"), 30, "supervisor Pod")
    got = g.cli_json("sandbox", "get", "g7")
    cond = {c["type"]: c for c in got["conditions"]}
    assert cond["SupervisorReady"]["message"] == "", cond  # control: no warning yet
    msg = f'failed to get sandbox runtime: no runtime for "{sclass}" is configured'
    wl = pods_of(kube, ns, body["id"])["workload"]
    assert wl["spec"]["schedulingGates"], "the workload never runs without its supervisor"
    warn_event(kube, ns, sup["metadata"]["name"], "FailedCreatePodSandBox", msg)
    # The kubelet would retry forever; the sandbox fails (bounded) with its
    # words, both Pods go, and the gated workload never ran.
    got = poll(lambda: (j := g.cli_json("sandbox", "get", "g7")) and j["phase"] == "Error" and j,
               40, "the sandbox failed with the kubelet's reason")
    assert msg in got["message"] and "workload never ran" in got["message"], got
    poll(lambda: pods_of(kube, ns, body["id"]) == {}, 30, "both Pods deleted")
    human = g.cli("sandbox", "get", "g7", check=0).stdout
    assert "FailedCreatePodSandBox" in human and msg in human, human


def test_helm_rendered_config_serves_the_kubernetes_driver(kube, ns, gateways):
    """The chart's gateway.toml (default_driver = "kubernetes") as the gateway
    reads it; --state-dir/--listen on the command line win over the file."""
    from tests.lib import helm_util as hu
    wclass = make_runtime_class(kube, f"g8-wl-{uid()}")
    sclass = f"g8-sup-{uid()}"  # created below: missing at startup
    helm = hu.Helm(kube)
    port = free_port()  # the supervisor (played here) dials the gateway on it
    try:
        text = hu.gateway_toml(helm.template({
            "server": {"sandboxNamespace": ns, "defaultImage": "registry.invalid/agent:1",
                       "defaultRuntimeClassName": wclass, "allowedRuntimeClassNames": [wclass],
                       "gatewayEndpoint": f"http://localhost:{port}"},
            "supervisor": {"runtimeClassName": sclass}}, [hu.SEED_VALUES]))
    finally:
        helm.close()
    assert 'default_driver = "kubernetes"' in text
    assert f'gateway_endpoint = "http://localhost:{port}"' in text
    # The chart mounts its admin-token Secret there (a Pod test covers it:
    # tests/node); this gateway runs on the host and keeps its own token.
    line = 'admin_token_file = "/etc/openshell-admin/token"\n'
    assert line in text
    text = text.replace(line, "")
    g = KubeGateway(kube, ns, config_text=text, port=port)
    gateways.append(g)
    g.start()
    k = g.request("GET", "/v1/gateway/status")[1]["kubernetes"]
    assert k["namespace"] == ns and k["topology"] == "dedicated-supervisor", k
    assert k["missing"] == [sclass] and k["supervisor_runtime_class"] == sclass, k
    make_runtime_class(kube, sclass)
    row = create_ready(kube, g, "g8")
    pods = pods_of(kube, ns, row["id"])
    assert pods["workload"]["spec"]["runtimeClassName"] == wclass
    assert pods["supervisor"]["spec"]["runtimeClassName"] == sclass


BINARIES_POLICY = """version: 1
network_policies:
  github:
    endpoints:
      - host: api.github.com
        port: 443
    binaries:
      - path: /usr/bin/curl
"""
def test_image_and_policy_reach_the_cluster(kube, ns, gateways, tmp_path):
    g = start_gateway(kube, ns, gateways)
    pol = tmp_path / "binaries.yaml"
    pol.write_text(BINARIES_POLICY)
    # Per-binary identity cannot cross Pods: refused with the operator's way out.
    r = g.cli("sandbox", "create", "--name", "g9-bin", "--detach", "--policy", str(pol))
    assert r.returncode == 1 and "HTTP 400" in r.stderr, r.stderr
    assert "split_binary_identity" in r.stderr, r.stderr
    # Control: an endpoint-only policy and the caller's image are honoured.
    pol.write_text(ENDPOINT_POLICY)
    row = create_ready(kube, g, "g9", "--policy", str(pol), "--image", "registry.invalid/mine:2")
    wl = pods_of(kube, ns, row["id"])["workload"]
    assert [c["image"] for c in wl["spec"]["containers"]] == ["registry.invalid/mine:2"]
    sec = kube.client.get(f"/api/v1/namespaces/{ns}/secrets/os-{row['id']}-supervisor")
    assert base64.b64decode(sec["data"]["policy.yaml"]).decode() == ENDPOINT_POLICY
    # The supervisor starts with that policy, so once Ready the revision is loaded.
    rev = g.cli_json("policy", "get", "g9")
    assert rev["status"] == "loaded" and rev["policy"] == ENDPOINT_POLICY, rev


def test_combined_topology_becomes_ready_with_its_pod(kube, ns, gateways):
    kata = make_runtime_class(kube, f"g10-kata-{uid()}")
    g = start_gateway(kube, ns, gateways, topology="combined", allowed_runtime_class_names=[kata])
    h = cli_bg(g, "sandbox", "create", "--name", "g10", "--detach", "--runtime-class", kata)
    row = poll(lambda: g.sandbox("g10"), 30, "sandbox recorded")
    pod = poll(lambda: pods_of(kube, ns, row["id"]).get("sandbox"), 30, "sandbox Pod")
    assert g.sandbox("g10")["phase"] == "Provisioning"  # control: not Ready before the Pod
    mark_ready(kube, ns, pod["metadata"]["name"])
    r = h.result()
    assert r.returncode == 0, (r.stdout, r.stderr, g.log_text()[-2000:])
    got = g.cli_json("sandbox", "get", "g10")
    assert got["phase"] == "Ready", got
    assert [(p["component"], p["runtimeClassName"]) for p in got["pods"]] == [("sandbox", kata)]
