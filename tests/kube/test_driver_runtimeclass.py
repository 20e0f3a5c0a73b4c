# The seed's five acceptance criteria (KUBERNETES.md "RuntimeClass placement",
# supervisor-runtimeclass-request.txt), each against the real kube-apiserver
# with its RuntimeClass admission, reading the Pods back from the API.
import json, threading

from tests.lib.driver_util import make_runtime_class, mark_ready, poll, uid, warn_event


def classes(kube, prefix):
    w = make_runtime_class(kube, f"{prefix}-workload-{uid()}", "kata")
    s = make_runtime_class(kube, f"{prefix}-supervisor-{uid()}", "kata")
    return w, s


def test_1_two_classes_land_on_their_pods(kube, drv):
    wclass, sclass = classes(kube, "c1")
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=sclass)
    r = drv.create("c1")
    assert r.rc == 0, r
    pods = drv.pods("c1")
    assert set(pods) == {"workload", "supervisor"}
    assert drv.pod("os-c1-workload")["spec"]["runtimeClassName"] == wclass
    assert drv.pod("os-c1-supervisor")["spec"]["runtimeClassName"] == sclass
    # The record holds what was resolved, and `get` shows each Pod's class.
    got = drv.run("get", "c1")
    assert got.rc == 0, got
    by_name = {p["name"]: p for p in got.json["pods"]}
    assert by_name["os-c1-workload"]["runtimeClassName"] == wclass
    assert by_name["os-c1-supervisor"]["runtimeClassName"] == sclass
    assert got.json["placement"]["supervisor_runtime_class"] == sclass


def test_2_stop_start_reuses_recorded_classes(kube, drv):
    wclass, sclass = classes(kube, "c2")
    other_w, other_s = classes(kube, "c2-other")
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=sclass)
    assert drv.create("c2").rc == 0
    old = {c: p["metadata"]["uid"] for c, p in drv.pods("c2").items()}

    stop = drv.run("stop", "c2")
    assert stop.rc == 0 and stop.json["phase"] == "Stopped", stop
    poll(lambda: not drv.pods("c2"), 30, "both Pods deleted by stop")

    # The operator changes the classes meanwhile: the sandbox keeps its own.
    drv.configure(default_runtime_class_name=other_w, supervisor_runtime_class_name=other_s)
    h = drv.start_bg("start", "c2", ready_timeout=90)
    sup = poll(lambda: drv.pods("c2").get("supervisor"), 30, "supervisor Pod recreated")
    mark_ready(kube, drv.ns, sup["metadata"]["name"])
    r = h.result()
    assert r.rc == 0 and r.json["phase"] == "Running", r

    new = drv.pods("c2")
    assert set(new) == {"workload", "supervisor"}
    assert all(new[c]["metadata"]["uid"] != old[c] for c in new), "replacement Pods expected"
    assert new["workload"]["spec"]["runtimeClassName"] == wclass
    assert new["supervisor"]["spec"]["runtimeClassName"] == sclass
    assert not new["workload"]["spec"].get("schedulingGates"), "ungated after Ready"


def test_3_supervisor_class_omitted_means_no_field(kube, drv):
    kata = make_runtime_class(kube, f"kata-{uid()}", "kata")
    drv.configure(allowed_runtime_class_names=[kata])  # no default, no supervisor class
    r = drv.create("c3", "--runtime-class", kata)
    assert r.rc == 0, r
    wl, sup = drv.pod("os-c3-workload"), drv.pod("os-c3-supervisor")
    assert wl["spec"]["runtimeClassName"] == kata  # the workload asked for Kata and got it
    assert "runtimeClassName" not in sup["spec"], sup["spec"]  # absent, never ""
    assert r.json["placement"]["supervisor_runtime_class"] is None
    # And with no class anywhere, neither Pod has the field.
    r = drv.create("c3b")
    assert r.rc == 0, r
    assert "runtimeClassName" not in drv.pod("os-c3b-workload")["spec"]
    assert "runtimeClassName" not in drv.pod("os-c3b-supervisor")["spec"]


def test_4_caller_cannot_change_supervisor_class(kube, drv, tmp_path):
    wclass, sclass = classes(kube, "c4")
    kata = make_runtime_class(kube, f"c4-kata-{uid()}", "kata")
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=sclass,
                  allowed_runtime_class_names=[kata])

    def spec_file(obj):
        p = tmp_path / f"spec-{uid()}.json"
        p.write_text(json.dumps(obj))
        return str(p)

    attempts = {
        "supervisor field": {"supervisor_runtime_class_name": kata},
        "nested supervisor": {"supervisor": {"runtime_class_name": kata}},
        "unknown field": {"runtimeClassNameSupervisor": kata},
        "driver-config passthrough": {"driver_config": {"supervisor_runtime_class_name": kata}},
        "class outside allowlist": {"runtime_class_name": sclass},
    }
    for i, (what, spec) in enumerate(attempts.items()):
        r = drv.create(f"c4-bad{i}", "--spec-json", spec_file(spec))
        assert r.rc == 2, (what, r)  # 400: bad request
        assert "bad request" in r.stderr, (what, r)
        assert not drv.all_objects(f"c4-bad{i}")["Pod"], what
    r = drv.create("c4-cli", "--runtime-class", sclass)  # the CLI flag, same allowlist
    assert r.rc == 2 and "not allowed" in r.stderr, r

    # Control: the caller's allowed workload class is honoured; the supervisor's is not touched.
    r = drv.create("c4-ok", "--spec-json", spec_file({"runtime_class_name": kata}))
    assert r.rc == 0, r
    assert drv.pod("os-c4-ok-workload")["spec"]["runtimeClassName"] == kata
    assert drv.pod("os-c4-ok-supervisor")["spec"]["runtimeClassName"] == sclass


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
    t, added = watch_pod_additions(kube, drv.ns, 6)
    r = drv.create("c5", ready_timeout=30)
    t.join()
    assert r.rc == 1, r
    assert f'RuntimeClass "{missing}" not found' in r.stderr, r
    assert "403" in r.stderr and "supervisor" in r.stderr, r
    # No supervisor Pod without the class, and the workload never existed.
    assert added == [], [p["metadata"]["name"] for p in added]
    assert all(not v for v in drv.all_objects("c5").values()), "rolled back completely"
    got = drv.run("get", "c5")
    assert got.rc == 0 and got.json["phase"] == "Failed", got
    assert missing in got.json["message"] and got.json["pods"] == [], got

    # Control: the same sandbox configuration works once the class exists.
    make_runtime_class(kube, missing, "kata")
    r = drv.create("c5-ok")
    assert r.rc == 0, r
    assert drv.pod("os-c5-ok-supervisor")["spec"]["runtimeClassName"] == missing


def test_5b_startup_check_reports_missing_classes(kube, drv):
    wclass = make_runtime_class(kube, f"c5b-workload-{uid()}", "kata")
    missing = f"c5b-missing-{uid()}"
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=missing)
    r = drv.run("check-config")
    assert r.rc == 1, r
    assert f"supervisor RuntimeClass '{missing}' not found" in r.stderr, r
    status = {c["name"]: c for c in r.json["runtime_classes"]}
    assert status[missing]["available"] is False and status[missing]["role"] == "supervisor"
    assert status[wclass]["available"] is True  # control within the same check
    make_runtime_class(kube, missing, "kata")
    r = drv.run("check-config")
    assert r.rc == 0 and r.json["ok"] is True, r


def test_5c_handler_cannot_run_workload_never_runs(kube, drv):
    wclass, sclass = classes(kube, "c5c")
    drv.configure(default_runtime_class_name=wclass, supervisor_runtime_class_name=sclass)
    h = drv.start_bg("create", "--id", "c5c", "--name", "c5c", ready_timeout=8)
    sup = poll(lambda: drv.pods("c5c").get("supervisor"), 30, "supervisor Pod created")
    # The kubelet cannot start the handler: the supervisor never becomes Ready.
    msg = f'failed to get sandbox runtime: no runtime for "{sclass}" is configured'
    warn_event(kube, drv.ns, sup["metadata"]["name"], "FailedCreatePodSandBox", msg)
    wl = poll(lambda: drv.pods("c5c").get("workload"), 30, "workload Pod created gated")
    assert wl["spec"]["schedulingGates"], "the workload must be gated while waiting"
    r = h.result()
    assert r.rc == 1, r
    assert "FailedCreatePodSandBox" in r.stderr and "not Ready" in r.stderr, r
    assert all(not v for v in drv.all_objects("c5c").values()), "rolled back"
    got = drv.run("get", "c5c")
    assert got.json["phase"] == "Failed" and "FailedCreatePodSandBox" in got.json["message"]
