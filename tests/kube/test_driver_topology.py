# Both topologies against the real apiserver, through the gateway's API: the
# objects, their order, their labels and owners, restricted Pod Security, and
# the lifecycle (stop keeps the long-lived objects, start recreates the Pods,
# delete leaves nothing).
import base64

from tests.lib.driver_util import mark_ready, poll, rv


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def test_dedicated_objects_and_order(kube, drv):
    drv.configure(workspace_storage_size="2Gi")
    st, b = drv.create("d1", image="registry.invalid/custom:2")
    assert st == 201 and b["phase"] == "Provisioning", b
    objs = drv.all_objects("d1")
    sid = drv.sid("d1")
    names = {k: sorted(o["metadata"]["name"] for o in v) for k, v in objs.items()}
    o = f"os-{sid}"
    assert names == {
        "Pod": [f"{o}-supervisor", f"{o}-workload"],
        "Service": [f"{o}-supervisor"],
        "Secret": [o, f"{o}-supervisor", f"{o}-trust"],
        "PersistentVolumeClaim": [f"{o}-workspace"],
        "NetworkPolicy": [f"{o}-fence", f"{o}-supervisor"],
    }, names

    # The fence was accepted before the first Pod existed.
    fence = next(x for x in objs["NetworkPolicy"] if x["metadata"]["name"] == f"{o}-fence")
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
    anchor = next(x for x in objs["Secret"] if x["metadata"]["name"] == o)
    for kind, items in objs.items():
        for x in items:
            lab = x["metadata"]["labels"]
            assert lab["app.kubernetes.io/managed-by"] == "openshell"
            assert lab["openshell.ai/sandbox-id"] == sid and lab["openshell.ai/sandbox-name"] == "d1"
            assert lab["openshell.ai/component"]
            if x is not anchor:
                refs = x["metadata"]["ownerReferences"]
                assert [x["uid"] for x in refs] == [anchor["metadata"]["uid"]], (kind, refs)

    wl, sup = drv.pod("d1", "-workload"), drv.pod("d1", "-supervisor")
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
    assert vols["workspace"]["persistentVolumeClaim"]["claimName"] == f"{o}-workspace"
    # The workload never mounts the supervisor's credentials.
    assert all(v.get("secret", {}).get("secretName") != f"{o}-supervisor" for v in ws["volumes"])
    sc = sup["spec"]["containers"][0]
    assert sc["command"][:3] == ["openshell-supervisor", "--backend", "split"]
    assert "--split-advertise" in sc["command"] and "$(OPENSHELL_POD_IP)" in sc["command"]
    pod_ip = next(e for e in sc["env"] if e["name"] == "OPENSHELL_POD_IP")
    assert pod_ip["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    # Both sides hold the same per-sandbox key; only the supervisor's holds the policy.
    secrets = {x["metadata"]["name"]: x["data"] for x in objs["Secret"]}
    assert secrets[f"{o}-supervisor"]["sandbox.key"] == secrets[f"{o}-trust"]["sandbox.key"]
    assert set(secrets[f"{o}-trust"]) == {"sandbox.key"}
    # The gateway's default policy (nothing may leave), as the supervisor starts with it.
    policy = base64.b64decode(secrets[f"{o}-supervisor"]["policy.yaml"]).decode()
    assert policy.endswith("version: 1\n") and "network_policies" not in policy, policy
    svc = objs["Service"][0]
    assert svc["spec"]["selector"]["openshell.ai/component"] == "supervisor"


def test_dedicated_ungates_only_after_supervisor_ready(kube, drv):
    st, b = drv.create("d2")
    assert st == 201, b
    sup = poll(lambda: drv.pods("d2").get("supervisor"), 30, "supervisor Pod")
    wl = poll(lambda: drv.pods("d2").get("workload"), 30, "workload Pod")
    assert wl["spec"]["schedulingGates"], "gated while the supervisor is not Ready"
    mark_ready(kube, drv.ns, sup["metadata"]["name"], ready=False)  # running, not ready yet
    mark = len(drv.log())
    poll(lambda: drv.get("d2")["conditions"], 10, "conditions")
    assert drv.pod("d2", "-workload")["spec"]["schedulingGates"]
    assert drv.get("d2")["phase"] == "Provisioning"
    mark_ready(kube, drv.ns, sup["metadata"]["name"])
    assert drv.wait_phase("d2", "Ready")["phase"] == "Ready"
    assert not drv.pod("d2", "-workload")["spec"].get("schedulingGates")
    assert (drv.sid("d2"), "ungated") in [(a["id"], a["action"]) for a in drv.reconcile_actions(mark)]


def test_dns_peers_in_fence(kube, drv):
    drv.configure(dns_peers=[{"namespace_selector": {"kubernetes.io/metadata.name": "kube-system"},
                              "pod_selector": {"k8s-app": "kube-dns"}, "port": 53}])
    assert drv.create("d3")[0] == 201
    fence = kube.client.get(drv.path("NetworkPolicy", drv.oname("d3", "-fence")))
    dns = fence["spec"]["egress"][1]
    assert dns["to"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                          "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}]
    assert sorted((p["protocol"], p["port"]) for p in dns["ports"]) == [("TCP", 53), ("UDP", 53)]
    # The fence as stored is exactly the rendered one: the driver confirms it.
    mark_ready(kube, drv.ns, drv.oname("d3", "-supervisor"))
    drv.wait_phase("d3", "Ready")
    assert {"id": drv.sid("d3"), "action": "ungated",
            "reason": "supervisor Ready and fence confirmed"} in drv.reconcile_actions()


def test_combined_objects(kube, drv):
    drv.configure(topology="combined")
    st, b = drv.create("k1", command=["python3", "agent.py"])
    assert st == 201, b
    objs = drv.all_objects("k1")
    assert [p["metadata"]["name"] for p in objs["Pod"]] == [drv.oname("k1", "-sandbox")]
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
    # The supervisor image's whole bundle (docs/images.md), copied beside
    # nothing of that image and mounted where its loader path points.
    assert init["command"] == ["cp", "-R", "/opt/openshell/bin", "/opt/openshell/lib",
                               "/opt/openshell/etc", "/mnt/openshell/"]
    assert {m["name"]: m["mountPath"] for m in init["volumeMounts"]} == {"openshell-bin": "/mnt/openshell"}
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols["openshell-bin"] == {"name": "openshell-bin", "emptyDir": {}}
    mounts = {m["name"]: m["mountPath"] for m in agent["volumeMounts"]}
    assert mounts["openshell-bin"] == "/opt/openshell"
    assert "schedulingGates" not in spec


def test_restricted_namespace_admits_workload_refuses_combined(kube, tmp_path):
    from tests.lib.driver_util import Driver
    rns = kube.client.create_namespace("restricted", {"pod-security.kubernetes.io/enforce": "restricted"})
    d = Driver(kube, tmp_path, rns)
    try:
        st, b = d.create("r1")
        assert st == 201 and b["phase"] == "Provisioning", b  # both dedicated Pods pass 'restricted'
        assert set(d.pods("r1")) == {"workload", "supervisor"}

        d.configure(topology="combined")
        st, b = d.create("r2")
        assert st == 201 and b["phase"] == "Error", b
        assert 'violates PodSecurity "restricted:latest"' in b["message"], b
        # (the message is capped; its 16-hex-digit ids leave "dedicated-sup...")
        assert "NET_ADMIN" in b["message"] and 'topology = "dedicated-sup' in b["message"], b
        assert all(not v for v in d.all_objects("r2").values()), "rolled back"
        assert d.get("r2")["phase"] == "Error"
    finally:
        d.cleanup()


def test_stop_keeps_long_lived_objects_start_recreates_pods(kube, drv):
    drv.configure(workspace_storage_size="1Gi")
    assert drv.create("s1")[0] == 201
    before = drv.all_objects("s1")
    st, b = drv.act("s1", "stop")
    assert st == 202, b
    assert drv.wait_phase("s1", "Stopped")["phase"] == "Stopped"
    poll(lambda: drv.all_objects("s1")["Pod"] == [], 30, "Pods deleted by stop")
    after = drv.all_objects("s1")
    for kind in ("Service", "Secret", "PersistentVolumeClaim", "NetworkPolicy"):
        assert sorted(o["metadata"]["uid"] for o in after[kind]) == \
            sorted(o["metadata"]["uid"] for o in before[kind]), kind
    st, b = drv.act("s1", "start")
    assert st == 202, b
    sup = poll(lambda: drv.pods("s1").get("supervisor"), 30, "supervisor recreated")
    mark_ready(kube, drv.ns, sup["metadata"]["name"])
    assert drv.wait_phase("s1", "Ready")["phase"] == "Ready"
    assert set(drv.pods("s1")) == {"workload", "supervisor"}
    assert not drv.pods("s1")["workload"]["spec"].get("schedulingGates")
    assert drv.all_objects("s1")["NetworkPolicy"] == after["NetworkPolicy"]


def test_delete_leaves_nothing(kube, drv):
    drv.configure(workspace_storage_size="1Gi")
    assert drv.create("x1")[0] == 201
    assert drv.create("x2")[0] == 201  # a neighbour that must survive
    st, b = drv.delete("x1")
    assert st in (200, 202), b
    poll(lambda: drv.get("x1") is None, 60, "x1 deleted")
    assert all(v == [] for v in drv.all_objects("x1").values()), drv.all_objects("x1")
    assert drv.pods("x2") and drv.objects("NetworkPolicy", "x2")
    st, _ = drv.delete("x1")  # gone: nothing left to delete
    assert st == 404, st


def test_binaries_policy_refused_in_dedicated_unless_endpoint_only(kube, drv, tmp_path):
    pol = """version: 1
network_policies:
  github:
    endpoints:
      - host: api.github.com
        port: 443
    binaries:
      - path: /usr/bin/curl
"""
    st, b = drv.create("b1", policy=pol)
    assert st == 400 and "split_binary_identity" in b["message"], (st, b)
    assert drv.get("b1") is None
    assert kube.client.list(drv.path("Pod"))["items"] == []
    drv.configure(split_binary_identity="endpoint-only")
    st, b = drv.create("b2", policy=pol)
    assert st == 201 and b["phase"] == "Provisioning", b
    assert b["placement"]["endpoint_only_identity"] is True
    sec = kube.client.get(drv.path("Secret", drv.oname("b2", "-supervisor")))
    assert base64.b64decode(sec["data"]["policy.yaml"]).decode() == pol


def test_get_shows_pods_events_and_conditions(kube, drv):
    from tests.lib.driver_util import warn_event
    assert drv.create("ev1")[0] == 201
    # A warning the kubelet may recover from (FailedCreatePodSandBox would
    # fail the sandbox outright: test_driver_runtimeclass 5c).
    warn_event(kube, drv.ns, drv.oname("ev1", "-supervisor"), "FailedMount",
               "handler kata failed")
    # Events reach the gateway with its Pod list/watch (not one call per GET).
    got = poll(lambda: (g := drv.get("ev1")) and any(
        c["message"] == "handler kata failed" for c in g["conditions"]) and g, 30,
        "the event in the sandbox's conditions")
    cond = {c["type"]: c for c in got["conditions"]}
    assert cond["SupervisorReady"]["status"] == "False"
    assert cond["SupervisorReady"]["message"] == "handler kata failed"
    assert cond["WorkloadReady"]["reason"] == "Gated"
    sup = next(p for p in got["pods"] if p["component"] == "supervisor")
    assert sup["events"][0]["reason"] == "FailedMount" and sup["phase"] == "Pending"
    # Control: once the supervisor is Ready and the workload ungated, both say so.
    mark_ready(kube, drv.ns, drv.oname("ev1", "-supervisor"))
    drv.wait_phase("ev1", "Ready")
    mark_ready(kube, drv.ns, drv.oname("ev1", "-workload"))
    got = poll(lambda: (g := drv.get("ev1")) and all(
        c["status"] == "True" for c in g["conditions"]) and g, 30, "both conditions True")
    cond = {c["type"]: c for c in got["conditions"]}
    assert cond["SupervisorReady"]["status"] == "True" and cond["WorkloadReady"]["status"] == "True"
