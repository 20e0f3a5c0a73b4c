"""A Pod from each of our images (`make images`) runs on the node, with the
image's own entrypoint: the gateway (as the chart runs it, `--config
/etc/openshell/gateway.toml`, the Kubernetes driver in-cluster) answers
/v1/health and its client reads the API through the kubernetes Service with
the Pod's ServiceAccount; the supervisor image's `openshell-supervisor
--version` runs; the test-agent's /bin/sh runs a command."""
import json, urllib.request

import pytest

from tests.lib import nodelib
from tests.lib.nodelib import workload_pod

GATEWAY_PORT = 17670  # the image's declared port (the chart's default)


@pytest.fixture
def gateway_config(node, ns):
    """A ConfigMap `gw` with gateway.toml for the Kubernetes driver in ns,
    and the rules the chart's RBAC gives the gateway
    (deploy/helm/openshell/templates/rbac.yaml); the cluster-wide part is
    removed afterwards."""
    c = node.client
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    c.post(f"{rbac}/namespaces/{ns}/roles", {
        "metadata": {"name": "gw"},
        "rules": [{"apiGroups": [""], "resources": ["pods"],
                   "verbs": ["get", "list", "watch", "create", "delete", "patch"]},
                  {"apiGroups": [""], "resources": ["services", "persistentvolumeclaims"],
                   "verbs": ["get", "list", "watch", "create", "delete"]},
                  {"apiGroups": [""], "resources": ["secrets"],
                   "verbs": ["get", "list", "watch", "create", "delete", "patch"]},
                  {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
                   "verbs": ["get", "list", "watch", "create", "delete"]},
                  {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]}]})
    c.post(f"{rbac}/namespaces/{ns}/rolebindings", {
        "metadata": {"name": "gw"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gw"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]})
    cluster = f"node-test-gateway-{ns}"
    c.post(f"{rbac}/clusterroles", {
        "metadata": {"name": cluster},
        "rules": [{"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"],
                   "verbs": ["get", "list", "watch"]},
                  {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": [ns],
                   "verbs": ["get"]}]})
    c.post(f"{rbac}/clusterrolebindings", {
        "metadata": {"name": cluster},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]})
    c.post(f"/api/v1/namespaces/{ns}/configmaps", {
        "metadata": {"name": "gw"},
        "data": {"gateway.toml": (
            "[openshell.gateway]\n"
            f'listen_address = "0.0.0.0:{GATEWAY_PORT}"\n'
            'state_dir = "/var/lib/openshell/state"\n'
            'default_driver = "kubernetes"\n\n'
            "[openshell.drivers.kubernetes]\n"
            f'namespace = "{ns}"\ntopology = "dedicated-supervisor"\n'
            'supervisor_image = "openshell/supervisor:dev"\n'
            'default_image = "openshell/test-agent:dev"\n'
            'default_runtime_class_name = "gvisor"\n')}})
    yield "gw"
    if not node.stopped:
        c.delete(f"{rbac}/clusterrolebindings/{cluster}")
        c.delete(f"{rbac}/clusterroles/{cluster}")


def gateway_pod(name, args=None):
    """The gateway as the chart's Deployment runs it: its config from the
    ConfigMap, its state on a volume, in-cluster credentials."""
    pod = workload_pod(name, None, image="openshell/gateway:dev", token=True, args=args)
    pod["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "gw"}},
                              {"name": "state", "emptyDir": {}}]
    pod["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "cfg", "mountPath": "/etc/openshell", "readOnly": True},
        {"name": "state", "mountPath": "/var/lib/openshell"}]
    return pod


def test_gateway_image_answers_health(node, ns, gateway_config):
    c = node.client
    pod = gateway_pod("gateway")
    pod["spec"]["containers"][0]["readinessProbe"] = {
        "httpGet": {"path": "/v1/health", "port": GATEWAY_PORT}, "periodSeconds": 1}
    c.post(f"/api/v1/namespaces/{ns}/pods", pod)

    def ready():
        p = nodelib.pod(c, ns, "gateway")
        if p["status"].get("phase") in ("Succeeded", "Failed"):
            raise AssertionError(f"gateway exited: {nodelib.logs(c, ns, 'gateway')}")
        ok = any(x["type"] == "Ready" and x["status"] == "True"
                 for x in p["status"].get("conditions", []))
        return p if ok else None
    p = nodelib.wait_for(ready, 180, "the gateway Pod Ready (its /v1/health readiness probe)")
    # And from the host, over the Pod network: the answer itself.
    url = f"http://{p['status']['podIP']}:{GATEWAY_PORT}/v1/health"
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200 and json.load(r) == {"status": "ok"}


def test_gateway_image_reads_the_api_in_cluster(node, ns, gateway_config):
    """`--check-config` makes read-only GETs of the namespace and the
    RuntimeClass with the gateway's own client over TLS, using only the
    in-cluster credentials (KUBERNETES_SERVICE_HOST = the kubernetes
    Service, the projected token and CA), and reports what it found."""
    c = node.client
    out = nodelib.run_to_completion(c, ns, gateway_pod(
        "gw-check", ["--check-config", "/etc/openshell/gateway.toml"]))
    report, _ = json.JSONDecoder().raw_decode(out[out.index("{"):])
    svc_ip = c.get("/api/v1/namespaces/default/services/kubernetes")["spec"]["clusterIP"]
    k = report["kubernetes"]
    assert report["ok"] is True, out
    assert svc_ip in k["server"], out  # in-cluster: through the Service
    assert k["namespace_exists"] is True, out
    assert [(r["name"], r["available"]) for r in k["runtime_classes"]] == [("gvisor", True)], out


def test_supervisor_image_binaries_run(node, ns):
    out = nodelib.run_to_completion(node.client, ns, workload_pod(
        "supervisor", None, image="openshell/supervisor:dev", args=["--version"]))
    assert out.startswith("openshell-supervisor "), out


def test_test_agent_image_runs_a_shell_command(node, ns):
    out = nodelib.run_to_completion(node.client, ns, workload_pod(
        "agent", ["/bin/sh", "-c", "echo agent-$((6 * 7)); id -u"]))
    assert out.split() == ["agent-42", "65532"], out
