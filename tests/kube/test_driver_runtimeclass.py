# The seed's five acceptance criteria (KUBERNETES.md "RuntimeClass placement",
# supervisor-runtimeclass-request.txt), each against the real kube-apiserver
# with its RuntimeClass admission, through the gateway's API (and its
# --check-config), reading the Pods back from the API.
import threading

from tests.lib.driver_util import make_runtime_class, mark_ready, poll, uid, warn_event


def classes(kube, prefix):
    w = make_runtime_class(kube, f"{prefix}-workload-{uid()}", "kata")
    s = make_runtime_class(kube, f"{prefix}-supervisor-{uid()}", "kata")
    return w, s


def test_1_two_classes_land_on_their_pods(kube, drv):
    wclass, sclass = classes(kube, "c1")
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=sclass)
    st, b = drv.create("c1")
    assert st == 201 and b["phase"] == "Provisioning", b
    pods = drv.pods("c1")
    assert set(pods) == {"workload", "supervisor"}
    assert drv.pod("c1", "-workload")["spec"]["runtimeClassName"] == wclass
    assert drv.pod("c1", "-supervisor")["spec"]["runtimeClassName"] == sclass
    # The record holds what was resolved, and `get` shows each Pod's class
    # (from the gateway's Pod list/watch: as soon as it saw both).
    got = poll(lambda: (g := drv.get("c1")) and len(g.get("pods", [])) == 2 and g, 30,
               "both Pods in the gateway's view")
    by_name = {p["name"]: p for p in got["pods"]}
    assert by_name[drv.oname("c1", "-workload")]["runtimeClassName"] == wclass
    assert by_name[drv.oname("c1", "-supervisor")]["runtimeClassName"] == sclass
    assert got["placement"]["supervisor_runtime_class"] == sclass


def test_2_stop_start_reuses_recorded_classes(kube, drv):
    wclass, sclass = classes(kube, "c2")
    other_w, other_s = classes(kube, "c2-other")
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=sclass)
    assert drv.create("c2")[0] == 201
    old = {c: p["metadata"]["uid"] for c, p in drv.pods("c2").items()}

    assert drv.act("c2", "stop")[0] == 202
    assert drv.wait_phase("c2", "Stopped")["phase"] == "Stopped"
    poll(lambda: not drv.pods("c2"), 30, "both Pods deleted by stop")

    # The operator changes the classes meanwhile (gateway restarted with
    # them): the sandbox keeps its own.
    drv.configure(default_runtime_class_name=other_w, supervisor_runtime_class_name=other_s)
    assert drv.act("c2", "start")[0] == 202
    sup = poll(lambda: drv.pods("c2").get("supervisor"), 30, "supervisor Pod recreated")
    mark_ready(kube, drv.ns, sup["metadata"]["name"])
    assert drv.wait_phase("c2", "Ready")["phase"] == "Ready"

    new = drv.pods("c2")
    assert set(new) == {"workload", "supervisor"}
    assert all(new[c]["metadata"]["uid"] != old[c] for c in new), "replacement Pods expected"
    assert new["workload"]["spec"]["runtimeClassName"] == wclass
    assert new["supervisor"]["spec"]["runtimeClassName"] == sclass
    assert not new["workload"]["spec"].get("schedulingGates"), "ungated after Ready"


def test_3_supervisor_class_omitted_means_no_field(kube, drv):
    kata = make_runtime_class(kube, f"kata-{uid()}", "kata")
    drv.configure(allowed_runtime_class_names=[kata])  # no default, no supervisor class
    st, b = drv.create("c3", runtime_class=kata)
    assert st == 201, b
    wl, sup = drv.pod("c3", "-workload"), drv.pod("c3", "-supervisor")
    assert wl["spec"]["runtimeClassName"] == kata  # the workload asked for Kata and got it
    assert "runtimeClassName" not in sup["spec"], sup["spec"]  # absent, never ""
    assert b["placement"]["supervisor_runtime_class"] is None
    # And with no class anywhere, neither Pod has the field.
    assert drv.create("c3b")[0] == 201
    assert "runtimeClassName" not in drv.pod("c3b", "-workload")["spec"]
    assert "runtimeClassName" not in drv.pod("c3b", "-supervisor")["spec"]


def test_4_caller_cannot_change_supervisor_class(kube, drv):
    wclass, sclass = classes(kube, "c4")
    kata = make_runtime_class(kube, f"c4-kata-{uid()}", "kata")
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=sclass,
                  allowed_runtime_class_names=[kata])
    attempts = {
        "supervisor field": {"supervisor_runtime_class_name": kata},
        "nested supervisor": {"supervisor": {"runtime_class_name": kata}},
        "unknown field": {"runtimeClassNameSupervisor": kata},
        "driver-config passthrough": {"driver_config": {"supervisor_runtime_class_name": kata}},
        "class outside allowlist": {"runtime_class_name": sclass},
    }
    for i, (what, fields) in enumerate(attempts.items()):
        st, b = drv.create(f"c4-bad{i}", **fields)
        assert st == 400, (what, st, b)  # bad request
        assert drv.get(f"c4-bad{i}") is None, what
    assert kube.client.list(drv.path("Pod"))["items"] == []
    r = drv.g.cli("sandbox", "create", "--name", "c4-cli", "--detach", "--runtime-class", sclass)
    assert r.returncode == 1 and "not allowed" in r.stderr and "HTTP 400" in r.stderr, r.stderr

    # Control: the caller's allowed workload class is honoured; the supervisor's is not touched.
    st, b = drv.create("c4-ok", runtime_class=kata)
    assert st == 201, b
    assert drv.pod("c4-ok", "-workload")["spec"]["runtimeClassName"] == kata
    assert drv.pod("c4-ok", "-supervisor")["spec"]["runtimeClassName"] == sclass


def watch_pod_additions(kube, ns, seconds):
    """Collects every Pod ADDED in ns for `seconds` from now (a real watch)."""
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


def test_5a_unavailable_supervisor_class_never_falls_back(kube, drv):
    wclass = make_runtime_class(kube, f"c5-workload-{uid()}", "kata")
    missing = f"c5-missing-{uid()}"  # no RuntimeClass object: unavailable
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=missing)
    drv.ensure()
    t, added = watch_pod_additions(kube, drv.ns, 6)
    st, b = drv.create("c5")
    t.join()
    assert st == 201 and b["phase"] == "Error", b
    assert f'RuntimeClass "{missing}" not found' in b["message"], b
    assert "403" in b["message"] and "supervisor" in b["message"], b
    # No supervisor Pod without the class, and the workload never existed.
    assert added == [], [p["metadata"]["name"] for p in added]
    assert all(not v for v in drv.all_objects("c5").values()), "rolled back completely"
    got = drv.get("c5")
    assert got["phase"] == "Error" and missing in got["message"] and got["pods"] == [], got

    # Control: the same sandbox configuration works once the class exists.
    make_runtime_class(kube, missing, "kata")
    st, b = drv.create("c5-ok")
    assert st == 201 and b["phase"] == "Provisioning", b
    assert drv.pod("c5-ok", "-supervisor")["spec"]["runtimeClassName"] == missing


def test_5b_startup_check_reports_missing_classes(kube, drv):
    wclass = make_runtime_class(kube, f"c5b-workload-{uid()}", "kata")
    missing = f"c5b-missing-{uid()}"
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=missing)
    rc, out, err = drv.g.check_config()
    assert rc == 1, (out, err)
    assert f"supervisor RuntimeClass '{missing}' not found" in err, err
    status = {c["name"]: c for c in out["kubernetes"]["runtime_classes"]}
    assert status[missing]["available"] is False and status[missing]["role"] == "supervisor"
    assert status[wclass]["available"] is True  # control within the same check
    assert not drv.running(), "--check-config starts nothing"
    # The running gateway reports the same at start-up.
    k = drv.request("GET", "/v1/gateway/status")[1]["kubernetes"]
    assert k["missing"] == [missing] and k["ok"] is False, k
    make_runtime_class(kube, missing, "kata")
    rc, out, err = drv.g.check_config()
    assert rc == 0 and out["ok"] is True and out["kubernetes"]["ok"] is True, (out, err)
    assert "OK" in err


def test_5c_handler_cannot_run_workload_never_runs(kube, drv):
    wclass, sclass = classes(kube, "c5c")
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=sclass)
    st, b = drv.create("c5c")
    assert st == 201, b
    sup = poll(lambda: drv.pods("c5c").get("supervisor"), 30, "supervisor Pod created")
    # The kubelet cannot start the handler: the supervisor never becomes Ready.
    msg = f'failed to get sandbox runtime: no runtime for "{sclass}" is configured'
    wl = poll(lambda: drv.pods("c5c").get("workload"), 30, "workload Pod created gated")
    assert wl["spec"]["schedulingGates"], "the workload must be gated while waiting"
    mark = len(drv.log())
    warn_event(kube, drv.ns, sup["metadata"]["name"], "FailedCreatePodSandBox", msg)
    # The kubelet's refusal is final for us (it would retry forever): the
    # next reconcile (a Pod change wakes it) fails the sandbox with it, both
    # Pods go, and the workload was never ungated.
    mark_ready(kube, drv.ns, sup["metadata"]["name"], ready=False)
    got = poll(lambda: (lambda g: g if g["phase"] == "Error" else None)(drv.get("c5c")), 40,
               "the sandbox failed by the reconcile")
    assert "FailedCreatePodSandBox" in got["message"] and msg in got["message"], got
    assert "workload never ran" in got["message"], got
    poll(lambda: drv.pods("c5c") == {}, 30, "both Pods deleted")
    actions = [(a["id"], a["action"]) for a in drv.reconcile_actions(mark)]
    assert (drv.sid("c5c"), "failed") in actions, actions
    assert (drv.sid("c5c"), "ungated") not in actions, actions