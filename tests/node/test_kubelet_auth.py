"""The kubelet is not open to anonymous callers: without a client certificate
its API answers 401; with one our CA signed it authorizes through the
apiserver (the control). The apiserver reaches it by the node's InternalIP
with its own kubelet-client certificate: Pod logs come through that path."""
import json, ssl, urllib.error, urllib.request

from tests.lib import nodelib
from tests.lib.nodelib import sh, workload_pod


def kubelet_get(node, path, cert=None):
    with open(f"{node.dir}/kubelet.json") as f:
        port = json.load(f)["port"]
    ctx = ssl.create_default_context(cafile=f"{node.dir}/ca.crt")  # kubelet serving cert: IP SAN
    if cert:
        ctx.load_cert_chain(f"{node.dir}/{cert}.crt", f"{node.dir}/{cert}.key")
    try:
        with urllib.request.urlopen(f"https://{node.host_ip}:{port}{path}", context=ctx,
                                    timeout=15) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_kubelet_refuses_anonymous_and_serves_authorized_clients(node):
    assert kubelet_get(node, "/pods") == 401
    assert kubelet_get(node, "/pods", cert="admin") == 200


def test_node_is_named_by_its_internal_ip(node):
    n = node.client.get(f"/api/v1/nodes/{node.host_ip}")
    assert {"type": "InternalIP", "address": node.host_ip} in n["status"]["addresses"]


def test_apiserver_reaches_kubelet_for_logs(node, ns):
    # Pod logs are served by the kubelet, fetched by the apiserver with its
    # kubelet-client certificate.
    out = nodelib.run_to_completion(node.client, ns, workload_pod("logs", sh("echo via-kubelet")))
    assert out.strip() == "via-kubelet"
