# Both topologies against the real apiserver: the objects, their order, their
# labels and owners, restricted Pod Security, and the lifecycle (stop keeps the
# long-lived objects, start recreates the Pods, delete leaves nothing).
import base64, os

from tests.lib.driver_util import mark_ready, poll, rv


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def test_dedicated_objects_and_order(kube, drv):
    drv.configure(workspace_storage_size="2Gi")
    r = drv.create("d1", "--image", "registry.invalid/custom:2")
    assert r.rc == 0, r
    objs = drv.all_objects("d1")
    names = {k: sorted(o["metadata"]["name"] for o in v) for k, v in objs.items()}
    assert names == {
        "Pod": ["os-d1-supervisor", "os-d1-workload"],
        "Service": ["os-d1-supervisor"],
        "Secret": ["os-d1", "os-d1-supervisor", "os-d1-trust"],
        "PersistentVolumeClaim": ["os-d1-workspace"],
        "NetworkPolicy": ["os-d1-fence", "os-d1-supervisor"],
    }, names

    # The fence was accepted before the first Pod existed.
    fence = next(o for o in objs["NetworkPolicy"] if o["metadata"]["name"] == "os-d1-fence")
    first_pod = min(rv(p) for p in objs["Pod"])
    assert rv(fence) < first_pod, (rv(fence), first_pod)
    assert fence["metadata"]["creationTimestamp"] <= min(
        p["metadata"]["creationTimestamp"] for p in objs["Pod"])
    spec = fence["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["podSelector"]["matchLabels"]["openshell.ai/component"] == "workload"
    assert len(spec["egress"]) == 1, "no DNS rule unless the operator configured peers"
    assert spec["egress"][0]["to"][0]["podSelector"]["matchLabels"]["openshell.ai/component"] == "supervisor"
    assert {p["port"] for p in spec["egress"][0]["ports"]} == {3128, 7443}

    # Labels on everything, and one anchor every other object is owned by.
    anchor = next(o for o in objs["Secret"] if o["metadata"]["name"] == "os-d1")
    for kind, items in objs.items():
        for o in items:
            lab = o["metadata"]["labels"]
            assert lab["app.kubernetes.io/managed-by"] == "openshell"
            assert lab["openshell.ai/sandbox-id"] == "d1" and lab["openshell.ai/sandbox-name"] == "d1"
            assert lab["openshell.ai/component"]
            if o is not anchor:
                refs = o["metadata"]["ownerReferences"]
                assert [x["uid"] for x in refs] == [anchor["metadata"]["uid"]], (kind, refs)

    wl, sup = drv.pod("os-d1-workload"), drv.pod("os-d1-supervisor")
    ws = wl["spec"]
    assert ws["schedulingGates"] == [{"name": "openshell.ai/supervisor-ready"}]
    assert ws["automountServiceAccountToken"] is False
    assert ws["securityContext"]["runAsNonRoot"] is True and ws["securityContext"]["runAsUser"] == 1000
    assert ws["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    agent = ws["containers"][0]
    assert agent["image"] == "registry.invalid/custom:2"
    assert agent["securityContext"]["allowPrivilegeEscalation"] is False
    assert agent["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    # The launcher has no resolver and the fence allows no DNS: the Service's IP.
    svc_ip = objs["Service"][0]["spec"]["clusterIP"]
    proxy = f"http://{svc_ip}:3128"
    assert env_of(agent)["HTTPS_PROXY"] == proxy and env_of(agent)["HTTP_PROXY"] == proxy
    assert agent["command"] == ["/opt/openshell/bin/openshell-sandbox", "--supervisor",
                                f"{svc_ip}:7443", "--trust", "/etc/openshell/trust/sandbox.key"]
    assert ws["initContainers"][0]["image"] == "registry.invalid/openshell-supervisor:1"
    vols = {v["name"]: v for v in ws["volumes"]}
    assert vols["workspace"]["persistentVolumeClaim"]["claimName"] == "os-d1-workspace"
    # The workload never mounts the supervisor's credentials.
    assert all(v.get("secret", {}).get("secretName") != "os-d1-supervisor" for v in ws["volumes"])
    sc = sup["spec"]["containers"][0]
    assert sc["command"][:3] == ["openshell-supervisor", "--backend", "split"]
    assert "--split-advertise" in sc["command"] and "$(OPENSHELL_POD_IP)" in sc["command"]
    pod_ip = next(e for e in sc["env"] if e["name"] == "OPENSHELL_POD_IP")
    assert pod_ip["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    # Both sides hold the same per-sandbox key; only the supervisor's holds the policy.
    secrets = {o["metadata"]["name"]: o["data"] for o in objs["Secret"]}
    assert secrets["os-d1-supervisor"]["sandbox.key"] == secrets["os-d1-trust"]["sandbox.key"]
    assert set(secrets["os-d1-trust"]) == {"sandbox.key"}
    assert base64.b64decode(secrets["os-d1-supervisor"]["policy.yaml"]) == b"version: 1\n"
    svc = objs["Service"][0]
    assert svc["spec"]["selector"]["openshell.ai/component"] == "supervisor"


def test_dedicated_ungates_only_after_supervisor_ready(kube, drv):
    h = drv.start_bg("create", "--id", "d2", "--name", "d2", ready_timeout=60)
    sup = poll(lambda: drv.pods("d2").get("supervisor"), 30, "supervisor Pod")
    wl = poll(lambda: drv.pods("d2").get("workload"), 30, "workload Pod")
    assert wl["spec"]["schedulingGates"], "gated while the supervisor is not Ready"
    mark_ready(kube, drv.ns, sup["metadata"]["name"], ready=False)  # running, not ready yet
    assert drv.pod("os-d2-workload")["spec"]["schedulingGates"]
    mark_ready(kube, drv.ns, sup["metadata"]["name"])
    r = h.result()
    assert r.rc == 0 and r.json["phase"] == "Running", r
    assert not drv.pod("os-d2-workload")["spec"].get("schedulingGates")


def test_dns_peers_in_fence(kube, drv):
    drv.configure(dns_peers=[{"namespace_selector": {"kubernetes.io/metadata.name": "kube-system"},
                              "pod_selector": {"k8s-app": "kube-dns"}, "port": 53}])
    assert drv.create("d3").rc == 0
    fence = kube.client.get(drv.path("NetworkPolicy", "os-d3-fence"))
    dns = fence["spec"]["egress"][1]
    assert dns["to"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                          "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}]
    assert sorted((p["protocol"], p["port"]) for p in dns["ports"]) == [("TCP", 53), ("UDP", 53)]
    # The fence as stored is exactly the rendered one: the driver confirms it.
    mark_ready(kube, drv.ns, "os-d3-supervisor")
    r = drv.run("reconcile")
    assert r.rc == 0 and {"id": "d3", "action": "ungated",
                          "reason": "supervisor Ready and fence confirmed"} in r.json, r


def test_combined_objects(kube, drv):
    drv.configure(topology="combined")
    spec = drv.dir / "spec.json"
    spec.write_text('{"command": ["python3", "agent.py"]}')
    r = drv.create("k1", "--spec-json", str(spec))
    assert r.rc == 0, r
    objs = drv.all_objects("k1")
    assert [p["metadata"]["name"] for p in objs["Pod"]] == ["os-k1-sandbox"]
    assert objs["NetworkPolicy"] == [] and objs["Service"] == []
    spec = objs["Pod"][0]["spec"]
    agent = spec["containers"][0]
    cmd = agent["command"]
    assert cmd[:3] == ["/opt/openshell/bin/openshell-supervisor", "--backend", "inpod"]
    assert cmd[cmd.index("--launcher") + 1] == "/opt/openshell/bin/openshell-sandbox"
    assert cmd[cmd.index("--"):] == ["--", "python3", "agent.py"]
    assert agent["securityContext"]["runAsUser"] == 0
    assert sorted(agent["securityContext"]["capabilities"]["add"]) == ["NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE"]
    init = spec["initContainers"][0]
    assert init["image"] == "registry.invalid/openshell-supervisor:1"
    assert init["command"][0] == "cp" and "/opt/openshell/bin/" in init["command"]
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols["openshell-bin"] == {"name": "openshell-bin", "emptyDir": {}}
    mounts = {m["name"]: m["mountPath"] for m in agent["volumeMounts"]}
    assert mounts["openshell-bin"] == "/opt/openshell/bin"
    assert "schedulingGates" not in spec


def test_restricted_namespace_admits_workload_refuses_combined(kube, tmp_path):
    from tests.lib.driver_util import Driver
    rns = kube.client.create_namespace("restricted", {"pod-security.kubernetes.io/enforce": "restricted"})
    d = Driver(kube, tmp_path, rns)
    r = d.create("r1")
    assert r.rc == 0, r  # both dedicated Pods pass 'restricted'
    assert set(d.pods("r1")) == {"workload", "supervisor"}

    d.configure(topology="combined")
    r = d.create("r2")
    assert r.rc == 1, r
    assert 'violates PodSecurity "restricted:latest"' in r.stderr, r
    assert "NET_ADMIN" in r.stderr and "dedicated-supervisor" in r.stderr, r
    assert all(not v for v in d.all_objects("r2").values()), "rolled back"
    assert d.run("get", "r2").json["phase"] == "Failed"


def test_stop_keeps_long_lived_objects_start_recreates_pods(kube, drv):
    drv.configure(workspace_storage_size="1Gi")
    assert drv.create("s1").rc == 0
    before = drv.all_objects("s1")
    r = drv.run("stop", "s1")
    assert r.rc == 0 and r.json["phase"] == "Stopped", r
    after = drv.all_objects("s1")
    assert after["Pod"] == []
    for kind in ("Service", "Secret", "PersistentVolumeClaim", "NetworkPolicy"):
        assert sorted(o["metadata"]["uid"] for o in after[kind]) == \
            sorted(o["metadata"]["uid"] for o in before[kind]), kind
    h = drv.start_bg("start", "s1", ready_timeout=60)
    sup = poll(lambda: drv.pods("s1").get("supervisor"), 30, "supervisor recreated")
    mark_ready(kube, drv.ns, sup["metadata"]["name"])
    r = h.result()
    assert r.rc == 0 and r.json["phase"] == "Running", r
    assert set(drv.pods("s1")) == {"workload", "supervisor"}
    assert drv.all_objects("s1")["NetworkPolicy"] == after["NetworkPolicy"]


def test_delete_leaves_nothing(kube, drv):
    drv.configure(workspace_storage_size="1Gi")
    assert drv.create("x1").rc == 0
    assert drv.create("x2").rc == 0  # a neighbour that must survive
    r = drv.run("delete", "x1")
    assert r.rc == 0, r
    assert all(v == [] for v in drv.all_objects("x1").values()), drv.all_objects("x1")
    assert not os.path.exists(os.path.join(drv.state, "x1.json"))
    assert drv.pods("x2") and drv.objects("NetworkPolicy", "x2")
    again = drv.run("delete", "x1")  # idempotent
    assert again.rc == 0, again


def test_binaries_policy_refused_in_dedicated_unless_endpoint_only(kube, drv, tmp_path):
    pol = tmp_path / "policy.yaml"
    pol.write_text("""version: 1
network_policies:
  github:
    endpoints:
      - host: api.github.com
        port: 443
    binaries:
      - path: /usr/bin/curl
""")
    r = drv.create("b1", "--policy", str(pol))
    assert r.rc == 2 and "split_binary_identity" in r.stderr, r
    assert drv.all_objects("b1")["Pod"] == []
    drv.configure(split_binary_identity="endpoint-only")
    r = drv.create("b2", "--policy", str(pol))
    assert r.rc == 0, r
    assert r.json["placement"]["endpoint_only_identity"] is True
    sec = kube.client.get(drv.path("Secret", "os-b2-supervisor"))
    assert base64.b64decode(sec["data"]["policy.yaml"]).decode() == pol.read_text()


def test_get_shows_pods_events_and_conditions(kube, drv):
    from tests.lib.driver_util import warn_event
    assert drv.create("ev1").rc == 0
    warn_event(kube, drv.ns, "os-ev1-supervisor", "FailedCreatePodSandBox", "handler kata failed")
    got = drv.run("get", "ev1")
    assert got.rc == 0, got
    cond = {c["type"]: c for c in got.json["conditions"]}
    assert cond["SupervisorReady"]["status"] == "False"
    assert cond["SupervisorReady"]["message"] == "handler kata failed"
    assert cond["WorkloadReady"]["reason"] == "Gated"
    sup = next(p for p in got.json["pods"] if p["component"] == "supervisor")
    assert sup["events"][0]["reason"] == "FailedCreatePodSandBox" and sup["phase"] == "Pending"
    # Control: once the supervisor is Ready and the workload ungated, both say so.
    mark_ready(kube, drv.ns, "os-ev1-supervisor")
    assert drv.run("reconcile").rc == 0
    mark_ready(kube, drv.ns, "os-ev1-workload")
    cond = {c["type"]: c for c in drv.run("get", "ev1").json["conditions"]}
    assert cond["SupervisorReady"]["status"] == "True" and cond["WorkloadReady"]["status"] == "True"
