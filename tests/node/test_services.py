"""Service names resolve in Pods (CoreDNS, cluster.local) and route through
kube-proxy, and Pods reach the apiserver through the `kubernetes` Service
with their ServiceAccount token, as a workload on a real cluster does."""
import json, ssl, urllib.request

from tests.lib import nodelib
from tests.lib.nodelib import sh, workload_pod

WEB = sh("mkdir -p /w/www && echo hello-from-web > /w/www/index.html && "
         "/bin/busybox httpd -f -p 8080 -h /w/www")
APISERVER_NAME = "kubernetes.default.svc.cluster.local"


def test_service_name_resolves_and_routes(node, ns):
    c = node.client
    web = workload_pod("web", WEB, labels={"app": "web"})
    web["spec"]["volumes"] = [{"name": "w", "emptyDir": {}}]
    web["spec"]["containers"][0]["volumeMounts"] = [{"name": "w", "mountPath": "/w"}]
    c.post(f"/api/v1/namespaces/{ns}/pods", web)
    svc = c.post(f"/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    cluster_ip = svc["spec"]["clusterIP"]
    nodelib.wait_phase(c, ns, "web", ("Running",))
    name = f"web.{ns}.svc.cluster.local"
    # The short name through the Pod's search path, the full name, and a
    # name that does not exist (the control: resolution is not "anything goes").
    log = nodelib.run_to_completion(c, ns, workload_pod("dns-client", sh(
        f"nslookup {name}; echo ---; nslookup nope.{ns}.svc.cluster.local; echo rc=$?; echo ---; "
        "for i in 1 2 3 4 5 6 7 8 9 10; do "
        "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 web 80 | grep hello && break; sleep 1; done")))
    found, missing, fetched = log.split("---")
    assert f"Address: {cluster_ip}" in found.split(name, 1)[1], log
    assert "rc=1" in missing or "NXDOMAIN" in missing, log
    assert "hello-from-web" in fetched, log


def test_pod_reaches_apiserver_through_kubernetes_service_with_its_token(node, ns):
    c = node.client
    # The kubernetes Service's ClusterIP answers as the apiserver does: a Go
    # TLS server's reply to a plaintext request names itself.
    log = nodelib.run_to_completion(c, ns, workload_pod("in-cluster", sh(
        f"nslookup {APISERVER_NAME}; echo ---; "
        f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {APISERVER_NAME} 443; echo ---; "
        "cat /var/run/secrets/kubernetes.io/serviceaccount/token"), token=True))
    dns, answer, token = log.split("---")
    svc_ip = c.get("/api/v1/namespaces/default/services/kubernetes")["spec"]["clusterIP"]
    assert f"Address: {svc_ip}" in dns.split(APISERVER_NAME, 1)[1], log
    assert "Client sent an HTTP request to an HTTPS server" in answer, log
    # The Pod's projected token authenticates as its ServiceAccount (checked
    # from the host: the test-agent image has no TLS client).
    ctx = ssl.create_default_context(cafile=f"{node.dir}/ca.crt")
    req = urllib.request.Request(
        f"{node.server}/apis/authentication.k8s.io/v1/selfsubjectreviews", method="POST",
        data=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode(),
        headers={"Authorization": f"Bearer {token.strip()}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        who = json.load(r)["status"]["userInfo"]["username"]
    assert who == f"system:serviceaccount:{ns}:default"

