# Smoke tests proving tools/kube-testenv runs the real control plane: real
# admission (PodSecurity, RuntimeClass), validation, watch expiry and garbage
# collection. Each negative case has a positive control that a fake would fail.
import http.client, json, ssl, time, urllib.parse, urllib.request, uuid

import pytest

from tests.lib.kubelib import ApiError

IMAGE = "registry.invalid/agent:1"  # never pulled: there is no kubelet


def pod(name, **spec_extra):
    """A Pod that satisfies the 'restricted' Pod Security Standard."""
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "agent", "image": IMAGE,
                "securityContext": {"allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]}},
            }],
            **spec_extra,
        },
    }


def with_net_admin(p):
    p["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = ["NET_ADMIN"]
    return p


def poll(fn, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout}s: {what}")


def exists(c, path):
    try:
        c.get(path)
        return True
    except ApiError as e:
        if e.status == 404:
            return False
        raise


def test_pod_security_restricted(kube):
    c = kube.client
    ns = c.create_namespace("pss", {"pod-security.kubernetes.io/enforce": "restricted"})
    with pytest.raises(ApiError) as ei:
        c.post(f"/api/v1/namespaces/{ns}/pods", with_net_admin(pod("caps")))
    assert ei.value.status == 403
    msg = ei.value.body["message"]
    assert 'violates PodSecurity "restricted:latest"' in msg and "NET_ADMIN" in msg, msg

    created = c.post(f"/api/v1/namespaces/{ns}/pods", pod("ok"))
    assert created["metadata"]["uid"] and created["status"]["phase"] == "Pending"

    # Control: the same Pod with NET_ADMIN is fine where 'privileged' is enforced,
    # so the rejection above came from the namespace's label.
    priv = c.create_namespace("priv", {"pod-security.kubernetes.io/enforce": "privileged"})
    c.post(f"/api/v1/namespaces/{priv}/pods", with_net_admin(pod("caps")))


def test_runtime_class_must_exist(kube):
    c = kube.client
    ns = c.create_namespace("rc")
    rc = f"openshell-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ApiError) as ei:
        c.post(f"/api/v1/namespaces/{ns}/pods", pod("before", runtimeClassName=rc))
    assert ei.value.status == 403
    assert f'RuntimeClass "{rc}" not found' in ei.value.body["message"], ei.value.body

    c.post("/apis/node.k8s.io/v1/runtimeclasses", {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": rc},
        "handler": "runc", "overhead": {"podFixed": {"memory": "64Mi", "cpu": "50m"}}})
    created = {}

    def admitted():
        try:
            created.update(c.post(f"/api/v1/namespaces/{ns}/pods", pod("after", runtimeClassName=rc)))
            return True
        except ApiError as e:
            if "not found" in e.body.get("message", ""):
                return False  # admission's informer has not seen the class yet
            raise
    poll(admitted, 15, "Pod with an existing RuntimeClass admitted")
    # The RuntimeClass plugin copied the class's overhead into the Pod.
    assert created["spec"]["overhead"] == {"memory": "64Mi", "cpu": "50m"}
    c.delete(f"/apis/node.k8s.io/v1/runtimeclasses/{rc}")


def test_invalid_network_policy_rejected(kube):
    c = kube.client
    ns = c.create_namespace("np")
    path = f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
    bad = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
           "metadata": {"name": "bad"},
           "spec": {"podSelector": {}, "policyTypes": ["Egress", "Sideways"],
                    "egress": [{"to": [{"ipBlock": {"cidr": "192.0.2.0/33"}}],
                                "ports": [{"protocol": "TCP", "port": 70000}]}]}}
    with pytest.raises(ApiError) as ei:
        c.post(path, bad)
    e = ei.value
    assert e.status == 422 and e.reason == "Invalid", e
    fields = {cause["field"] for cause in e.body["details"]["causes"]}
    assert {"spec.policyTypes[1]", "spec.egress[0].to[0].ipBlock.cidr",
            "spec.egress[0].ports[0].port"} <= fields, e.body
    assert 'Unsupported value: "Sideways"' in e.body["message"], e.body["message"]

    good = json.loads(json.dumps(bad))
    good["metadata"]["name"] = "good"
    good["spec"]["policyTypes"] = ["Egress"]
    good["spec"]["egress"] = [{"to": [{"ipBlock": {"cidr": "192.0.2.0/24"}}],
                               "ports": [{"protocol": "TCP", "port": 443}]}]
    assert c.post(path, good)["metadata"]["name"] == "good"


def compact_etcd(etcd_url, revision):
    """Compact etcd's history up to revision, through etcd's own JSON gateway."""
    req = urllib.request.Request(f"{etcd_url}/v3/kv/compaction", method="POST",
                                 data=json.dumps({"revision": str(revision), "physical": True}).encode())
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200


def test_stale_watch_gets_410_gone(kube):
    """Events are not watch-cached by default, so these watches are served by etcd."""
    c = kube.client
    ns = c.create_namespace("watch")
    path = f"/api/v1/namespaces/{ns}/events"
    ev = c.post(path, {"metadata": {"name": "e"}, "type": "Normal", "reason": "Test", "message": "1",
                       "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap",
                                          "namespace": ns, "name": "x"}})
    rv = int(ev["metadata"]["resourceVersion"])
    compact_etcd(kube.etcd_url, rv)  # everything before this Event is now gone
    c.patch(f"{path}/e", {"message": "2"})

    # Control: a watch from the compaction point still replays the update.
    got = next(c.watch(path, resource_version=rv, timeout_seconds=5))
    assert got["type"] == "MODIFIED" and got["object"]["message"] == "2", got

    # A watch from before the compaction (it would start at revision rv-1, which
    # etcd no longer has): 410 Gone, as the HTTP status or, as the apiserver does
    # once a watch is accepted, an in-stream ERROR Status.
    try:
        got = next(c.watch(path, resource_version=rv - 2, timeout_seconds=5))
    except ApiError as e:
        assert e.status == 410 and e.reason in ("Expired", "Gone"), e
    else:
        assert got["type"] == "ERROR", got
        assert got["object"]["code"] == 410 and got["object"]["reason"] in ("Expired", "Gone"), got


def test_garbage_collector_deletes_dependents(kube):
    c = kube.client
    ns = c.create_namespace("gc")
    cms, secrets = f"/api/v1/namespaces/{ns}/configmaps", f"/api/v1/namespaces/{ns}/secrets"

    def owned_by(owner):
        m = owner["metadata"]
        return [{"apiVersion": "v1", "kind": "ConfigMap", "name": m["name"], "uid": m["uid"]}]

    owner = c.post(cms, {"metadata": {"name": "owner"}})
    c.post(cms, {"metadata": {"name": "dep-cm", "ownerReferences": owned_by(owner)}})
    c.post(secrets, {"metadata": {"name": "dep-secret", "ownerReferences": owned_by(owner)}})
    keeper = c.post(cms, {"metadata": {"name": "keeper"}})
    c.post(cms, {"metadata": {"name": "kept-dep", "ownerReferences": owned_by(keeper)}})
    orphaner = c.post(cms, {"metadata": {"name": "orphaner"}})
    c.post(cms, {"metadata": {"name": "orphan", "ownerReferences": owned_by(orphaner)}})

    c.delete(f"{cms}/owner")  # background propagation: the GC deletes dependents
    c.delete(f"{cms}/orphaner", {"kind": "DeleteOptions", "apiVersion": "v1",
                                 "propagationPolicy": "Orphan"})
    poll(lambda: not exists(c, f"{cms}/dep-cm") and not exists(c, f"{secrets}/dep-secret"),
         120, "garbage collector deleted the dependents of a deleted owner")

    # Controls: a live owner's dependent stays; an orphaned one stays, unowned.
    poll(lambda: not exists(c, f"{cms}/orphaner"), 60, "orphaning deletion finished")
    assert exists(c, f"{cms}/kept-dep")
    assert not c.get(f"{cms}/orphan")["metadata"].get("ownerReferences")


def test_rbac_is_enforced(kube):
    """A request without the admin client certificate is anonymous and forbidden."""
    u = urllib.parse.urlsplit(kube.server)
    ctx = ssl.create_default_context(cafile=kube.client.ca_file)  # no client certificate
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=10)
    conn.request("GET", "/api/v1/namespaces")
    r = conn.getresponse()
    body = json.loads(r.read())
    conn.close()
    assert r.status == 403 and "system:anonymous" in body["message"], body
    assert kube.client.list("/api/v1/namespaces")["items"]  # control: admin may
