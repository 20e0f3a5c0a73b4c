"""A Pod from each of our images (`make images`) runs on the node, with the
image's own entrypoint: the gateway answers /v1/health, the supervisor
image's `openshell-supervisor --version` runs, the test-agent's /bin/sh runs
a command."""
import json, urllib.request

from tests.lib import nodelib
from tests.lib.nodelib import workload_pod

GATEWAY_PORT = 17670  # the image's declared port (the chart's default)


def test_gateway_image_answers_health(node, ns):
    c = node.client
    pod = workload_pod("gateway", None, image="openshell/gateway:dev",
                       args=["--state-dir", "/var/lib/openshell/state",
                             "--listen", f"0.0.0.0:{GATEWAY_PORT}"])
    ctr = pod["spec"]["containers"][0]
    ctr["readinessProbe"] = {"httpGet": {"path": "/v1/health", "port": GATEWAY_PORT},
                             "periodSeconds": 1}
    ctr["volumeMounts"] = [{"name": "state", "mountPath": "/var/lib/openshell"}]
    pod["spec"]["volumes"] = [{"name": "state", "emptyDir": {}}]
    c.post(f"/api/v1/namespaces/{ns}/pods", pod)
    p = nodelib.wait_for(
        lambda: (lambda p: p if any(x["type"] == "Ready" and x["status"] == "True"
                                    for x in p["status"].get("conditions", [])) else None)(
            nodelib.pod(c, ns, "gateway")),
        180, "the gateway Pod Ready (its /v1/health readiness probe)")
    # And from the host, over the Pod network: the answer itself.
    url = f"http://{p['status']['podIP']}:{GATEWAY_PORT}/v1/health"
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200 and json.load(r) == {"status": "ok"}


def test_supervisor_image_binaries_run(node, ns):
    out = nodelib.run_to_completion(node.client, ns, workload_pod(
        "supervisor", None, image="openshell/supervisor:dev", args=["--version"]))
    assert out.startswith("openshell-supervisor "), out


def test_test_agent_image_runs_a_shell_command(node, ns):
    out = nodelib.run_to_completion(node.client, ns, workload_pod(
        "agent", ["/bin/sh", "-c", "echo agent-$((6 * 7)); id -u"]))
    assert out.split() == ["agent-42", "65532"], out
