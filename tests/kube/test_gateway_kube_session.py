# Kubernetes sandboxes keep a session with the gateway, like local ones: with
# gateway_endpoint configured, the driver puts the sandbox token in the
# supervisor's Secret and the `--gateway/--token-file` flags on its command;
# the token is good for that sandbox's supervisor routes only; a policy update
# patches the Secret and is pushed on the session. The supervisor Pod's
# process is played by the real openshell-supervisor, started with exactly
# the flags, policy and token the cluster holds (the test apiserver has no
# kubelet to run it).
from tests.lib.driver_util import mark_ready, poll
from tests.lib.gateway_kube_util import (ENDPOINT_POLICY, cli_bg, create_ready, play_supervisor,
                                         pods_of, secret_of, start_gateway)
from tests.lib.gateway_util import free_port, supervisors_for

NEW_POLICY = ENDPOINT_POLICY.replace("api.github.com", "api.example.test")


def test_kubernetes_supervisors_get_a_session(kube, ns, gateways, tmp_path):
    port = free_port()
    endpoint = f"http://localhost:{port}"
    g = start_gateway(kube, ns, gateways, port=port, gateway_endpoint=endpoint)
    h = cli_bg(g, "sandbox", "create", "--name", "ks1", "--detach", "--policy",
               write(tmp_path, ENDPOINT_POLICY))
    row = poll(lambda: g.sandbox("ks1"), 30, "sandbox recorded")
    sid = row["id"]
    sup_pod = poll(lambda: pods_of(kube, ns, sid).get("supervisor"), 30, "supervisor Pod")
    sec = secret_of(kube, ns, sid)
    token = sec["token"]
    assert len(token) == 64 and token not in g.log_text()
    cmd = sup_pod["spec"]["containers"][0]["command"]
    i = cmd.index("--gateway")
    assert cmd[i:i + 4] == ["--gateway", "$(OPENSHELL_GATEWAY_ENDPOINT)", "--token-file",
                            "/etc/openshell/credentials/token"], cmd
    env = {e["name"]: e.get("value") for e in sup_pod["spec"]["containers"][0]["env"]}
    assert env["OPENSHELL_GATEWAY_ENDPOINT"] == endpoint
    ctx = sup_pod["spec"]["securityContext"]
    assert ctx["fsGroup"] == ctx["runAsUser"]  # a non-root supervisor reads its Secret
    # Pods Running is not Ready: the session is not up yet.
    mark_ready(kube, ns, sup_pod["metadata"]["name"])
    poll(lambda: "session" in g.sandbox("ks1")["message"], 30, "waiting for the session")
    assert g.sandbox("ks1")["phase"] == "Provisioning"
    # The token is that sandbox's: its own supervisor routes only.
    st, _ = g.request("POST", "/v1/supervisor/sandboxes/0000000000000000/heartbeat", raw="",
                      token=token)
    assert st == 403
    st, _ = g.request("GET", "/v1/sandboxes", token=token)
    assert st == 403
    sup = play_supervisor(g, sid, sec, endpoint)
    try:
        r = h.result()
        assert r.returncode == 0 and g.sandbox("ks1")["phase"] == "Ready", \
            (r.stdout, r.stderr, g.log_text()[-2000:])
        # A policy update: the Secret is patched and the running supervisor
        # loads it from its session, so --wait sees "loaded".
        r = g.cli("policy", "set", "ks1", "--policy", write(tmp_path, NEW_POLICY, "new.yaml"),
                  "--wait", "--timeout", "30")
        assert r.returncode == 0, (r.stdout, r.stderr, g.log_text()[-2000:])
        # The Secret patch runs off the loop: it lands at once, not with the reply.
        poll(lambda: secret_of(kube, ns, sid)["policy.yaml"] == NEW_POLICY, 10,
             "the Secret patched")
        assert secret_of(kube, ns, sid)["token"] == token  # kept by the patch
        rev = g.cli_json("policy", "get", "ks1")
        assert rev["status"] == "loaded" and rev["policy"] == NEW_POLICY, rev
        # Losing the session takes Ready away again.
        sup.terminate()
        sup.communicate(timeout=30)
        poll(lambda: g.sandbox("ks1")["phase"] != "Ready", 30, "Ready withdrawn")
    finally:
        if sup.poll() is None:
            sup.kill()
            sup.communicate(timeout=30)
    assert not supervisors_for(sid)


def test_without_gateway_endpoint_no_token_leaves_the_gateway(kube, ns, gateways):
    g = start_gateway(kube, ns, gateways)
    row = create_ready(kube, g, "ks3")
    assert "token" not in secret_of(kube, ns, row["id"])
    pod = kube.client.get(f"/api/v1/namespaces/{ns}/pods/os-{row['id']}-supervisor")
    assert "--gateway" not in pod["spec"]["containers"][0]["command"]


def write(tmp_path, text, name="policy.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)
