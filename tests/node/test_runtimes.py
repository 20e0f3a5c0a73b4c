"""Runtime handlers on the real node: RuntimeClass gvisor runs Pods under
gVisor (runc Pods do not), a Pod shaped like our workload Pod runs on both
in a PodSecurity-restricted namespace once its scheduling gate is removed,
and a RuntimeClass whose handler the node lacks leaves its Pod unable to
start with the event the driver reports."""
from tests.lib import nodelib
from tests.lib.nodelib import sh, workload_pod

GATE = "openshell.io/sandbox-ready"
# What the workload checks about itself: kernel, identity, capabilities, seccomp.
SELF_REPORT = sh("cat /proc/version; id -u; grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status")


def status_fields(log):
    return dict(l.split(":\t", 1) for l in log.splitlines() if ":\t" in l)


def test_gvisor_runtimeclass_runs_under_gvisor_and_runc_does_not(node, ns):
    with open("/proc/version") as f:
        host_kernel = f.read().strip()
    runc = nodelib.run_to_completion(node.client, ns, workload_pod("on-runc", sh("cat /proc/version")))
    gvisor = nodelib.run_to_completion(node.client, ns, workload_pod(
        "on-gvisor", sh("cat /proc/version"), runtime_class="gvisor"))
    # Control: a runc Pod shares the host kernel.
    assert runc.strip() == host_kernel
    assert "gvisor" not in runc.lower()
    # gVisor's own kernel ("Linux version 4.19.0-gvisor ..."; its dmesg
    # needs CAP_SYSLOG, which a restricted Pod lacks).
    assert "gvisor" in gvisor.lower(), gvisor
    assert gvisor.strip() != host_kernel


def test_runtimeclass_exists_with_handler_runsc(node):
    rc = node.client.get("/apis/node.k8s.io/v1/runtimeclasses/gvisor")
    assert rc["handler"] == "runsc"


def run_gated(node, ns, name, runtime_class):
    c = node.client
    c.post(f"/api/v1/namespaces/{ns}/pods",
           workload_pod(name, SELF_REPORT, runtime_class=runtime_class, gate=GATE))
    # Gated: not scheduled, whatever the wait.
    p = nodelib.wait_for(
        lambda: (lambda p: p if any(x["type"] == "PodScheduled" and x["reason"] == "SchedulingGated"
                                    for x in p["status"].get("conditions", [])) else None)(
            nodelib.pod(c, ns, name)),
        60, f"{name} reported SchedulingGated")
    assert not p["spec"].get("nodeName")
    c.patch(f"/api/v1/namespaces/{ns}/pods/{name}", {"spec": {"schedulingGates": []}})
    nodelib.wait_phase(c, ns, name, ("Succeeded",))
    return nodelib.logs(c, ns, name)


def test_workload_shaped_pod_runs_on_runc_and_gvisor_in_restricted_namespace(node, ns):
    labels = node.client.get(f"/api/v1/namespaces/{ns}")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    for name, rc, kernel_mark in (("wl-runc", None, None), ("wl-gvisor", "gvisor", "gvisor")):
        log = run_gated(node, ns, name, rc)
        lines = log.splitlines()
        assert (kernel_mark in lines[0].lower()) if kernel_mark else ("gvisor" not in lines[0].lower()), log
        assert lines[1] == "65532", log  # runAsUser, not root
        fields = status_fields(log)
        assert int(fields["CapEff"], 16) == 0, log  # every capability dropped
        assert fields["NoNewPrivs"] == "1", log  # allowPrivilegeEscalation: false
        if rc is None:
            # runc's kernel reports the filter; gVisor's /proc does not
            # (test_runtime_default_seccomp_... shows it applies there too).
            assert fields["Seccomp"] == "2", log


def test_pod_privileged_shape_is_rejected_in_restricted_namespace(node, ns):
    # Canary for the namespace label: the same Pod with a capability added is refused.
    bad = workload_pod("wl-bad", SELF_REPORT)
    bad["spec"]["containers"][0]["securityContext"]["capabilities"] = {"drop": ["ALL"], "add": ["NET_ADMIN"]}
    try:
        node.client.post(f"/api/v1/namespaces/{ns}/pods", bad)
    except nodelib.kubelib.ApiError as e:
        assert e.status == 403 and "restricted" in str(e.body), e.body
    else:
        raise AssertionError("a NET_ADMIN Pod was admitted under PodSecurity restricted")


def test_runtimeclass_without_handler_fails_sandbox_creation(node, ns):
    c = node.client
    c.post("/apis/node.k8s.io/v1/runtimeclasses",
           {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": f"missing-{ns}"}, "handler": "kata"})
    try:
        c.post(f"/api/v1/namespaces/{ns}/pods",
               workload_pod("no-handler", sh("true"), runtime_class=f"missing-{ns}"))
        evs = nodelib.wait_for(
            lambda: [e for e in nodelib.events_for(c, ns, "no-handler")
                     if e[0] == "FailedCreatePodSandBox"],
            120, "a FailedCreatePodSandBox event")
        reason, message = evs[0]
        # The exact text is in docs/kube-testenv.md; the driver reports it.
        assert 'no runtime for "kata" is configured' in message, message
        p = nodelib.pod(c, ns, "no-handler")
        assert p["status"]["phase"] == "Pending"
        assert not p["status"].get("containerStatuses", [{}])[0].get("state", {}).get("running")
    finally:
        c.delete(f"/apis/node.k8s.io/v1/runtimeclasses/missing-{ns}")


def test_runtime_default_seccomp_applies_on_runc_and_inside_gvisor(node):
    """RuntimeDefault refuses unshare(CLONE_NEWUSER) without CAP_SYS_ADMIN, on
    runc and inside gVisor (runsc oci-seccomp); the same Pod Unconfined
    creates the user namespace (the control: it is the profile, not the
    runtime, that refuses). Unconfined needs a namespace PodSecurity allows it in."""
    c = node.client
    ns = c.create_namespace("node-seccomp", labels={"pod-security.kubernetes.io/enforce": "privileged"})
    try:
        cmd = sh("/bin/busybox unshare -U -r /bin/busybox id -u; echo rc=$?")
        for rc in (None, "gvisor"):
            for profile, want in (("RuntimeDefault", "rc=1"), ("Unconfined", "rc=0")):
                p = workload_pod(f"{rc or 'runc'}-{profile.lower()}", cmd, runtime_class=rc)
                p["spec"]["securityContext"]["seccompProfile"] = {"type": profile}
                out = nodelib.run_to_completion(c, ns, p)
                assert want in out, (rc, profile, out)
                if profile == "RuntimeDefault":
                    assert "Operation not permitted" in out, out
    finally:
        c.delete(f"/api/v1/namespaces/{ns}")
