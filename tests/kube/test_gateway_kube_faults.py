"""The gateway against a kube-apiserver that stops answering or throttles,
for real: the apiserver (and etcd) paused with SIGSTOP, and API Priority and
Fairness rejecting the gateway's own identity (a PriorityLevelConfiguration
with one seat and Reject, and a FlowSchema for its ServiceAccount) while a
client of the same identity keeps the seat busy. /v1/health keeps answering
within a second, the lifecycle pass does not freeze the loop (status comes
from one Pod list/watch, not a call per sandbox), `gateway status` says the
apiserver is degraded and then ok again, creates succeed or fail with a
clear message, 429s are logged with their Retry-After, and the watch
recovers (a Pod made after the fault is seen)."""
import base64, json, os, signal, socket, threading, time, urllib.parse

from tests.lib.driver_util import poll, uid
from tests.lib.gateway_kube_util import ENDPOINT_POLICY, KubeGateway, pods_of, start_gateway
from tests.lib.http_util import read_head

SANDBOXES = 3
HAMMERS = 24


def health_within_a_second(g):
    """GET /v1/health with a 1 s socket timeout (the brief's bound)."""
    with socket.create_connection(("127.0.0.1", g.port), timeout=1) as s:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        return read_head(s)[0]


def pids_of_testenv(kube):
    with open(kube.state_path) as f:
        return json.load(f)["pids"]


def apiserver_state(g):
    st, body = g.request("GET", "/v1/gateway/status")
    assert st == 200, body
    return body["kubernetes"]["apiserver"]


def keep_checking_health(g, seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        assert health_within_a_second(g) == 200
        n += 1
        time.sleep(0.2)
    return n


def test_paused_apiserver_and_etcd_never_freeze_the_gateway(kube, ns, gateways):
    g = start_gateway(kube, ns, gateways, topology="combined")
    ids = []
    for i in range(SANDBOXES):
        st, b = g.request("POST", "/v1/sandboxes", {"name": f"f{i}"})
        assert st == 201 and b["phase"] == "Provisioning", b
        ids.append(b["id"])
    poll(lambda: all(pods_of(kube, ns, sid) for sid in ids), 30, "every sandbox's Pod")
    pids = pids_of_testenv(kube)
    for name in ("etcd", "kube-apiserver"):
        os.kill(pids[name], signal.SIGSTOP)
    try:
        # Lifecycle passes keep running over three sandboxes meanwhile.
        assert keep_checking_health(g, 8) > 10
        st, body = g.request("GET", "/v1/sandboxes")
        assert st == 200 and len(body["sandboxes"]) == SANDBOXES
        # A create while the apiserver is away is accepted at once (its
        # calls wait on the worker, not here), and the gateway keeps answering.
        t0 = time.monotonic()
        st, b = g.request("POST", "/v1/sandboxes", {"name": "during"})
        assert st == 201 and b["phase"] in ("Provisioning", "Error"), b
        assert time.monotonic() - t0 < 1.5
        assert health_within_a_second(g) == 200
        # A delete is accepted at once and carried out off the loop.
        assert g.request("DELETE", "/v1/sandboxes/f0")[0] == 202
        assert keep_checking_health(g, 3) > 3
        # The status route says so, without waiting on the apiserver itself.
        poll(lambda: apiserver_state(g).startswith("degraded"), 60, "apiserver degraded")
        assert health_within_a_second(g) == 200
    finally:
        for name in ("kube-apiserver", "etcd"):
            os.kill(pids[name], signal.SIGCONT)
    poll(lambda: apiserver_state(g) == "ok", 90, "apiserver ok again")
    poll(lambda: g.sandbox("f0") is None and not pods_of(kube, ns, ids[0]), 90,
         "the delete asked during the outage done")
    # The create asked during the outage ends clearly: its objects were
    # made once the apiserver came back, or it failed with the driver's words.
    def settled():
        v = g.sandbox("during")
        return v if v and (v.get("pods") or v["phase"] == "Error") else None
    v = poll(settled, 90, "the create asked during the outage settled")
    assert v.get("pods") or "time" in v["message"].lower(), v
    # Nothing half-made: the create is removed whole on delete.
    assert g.request("DELETE", "/v1/sandboxes/during")[0] == 202
    poll(lambda: g.sandbox("during") is None and not pods_of(kube, ns, b["id"]), 60,
         "the failed create gone")
    # The watch recovered: a Pod made now shows in the gateway's view.
    st, b = g.request("POST", "/v1/sandboxes", {"name": "after"})
    assert st == 201 and b["phase"] == "Provisioning", b
    poll(lambda: (v := g.sandbox("after")) and v.get("pods"), 30, "the new Pod in the view")
    assert "kubernetes watch" in g.log_text()  # the outage was logged


def test_reconcile_checks_wait_on_the_apiserver_off_the_loop(kube, ns, gateways):
    """Dedicated sandboxes are checked at every resync (fence confirmed,
    supervisor alive, ungate) and the namespace scanned for orphans: calls
    that used to run on the loop one after another (a few seconds each while
    the apiserver is away). With the apiserver and etcd paused across a
    resync, /v1/health answers within a second throughout; afterwards the
    checks resume (an orphan made during the outage is removed) and a stop
    asked right after the outage is carried out."""
    g = start_gateway(kube, ns, gateways)
    ids = []
    for i in range(SANDBOXES):
        st, b = g.request("POST", "/v1/sandboxes", {"name": f"d{i}"})
        assert st == 201, b
        ids.append(b["id"])
    poll(lambda: all("workload" in pods_of(kube, ns, sid) for sid in ids), 30,
         "every workload Pod (gated: no kubelet here)")
    pids = pids_of_testenv(kube)
    for name in ("etcd", "kube-apiserver"):
        os.kill(pids[name], signal.SIGSTOP)
    try:
        # A policy update answers at once: its Secret patch waits on the
        # reconcile worker, not on the loop.
        t0 = time.monotonic()
        st, body = g.request("PUT", "/v1/sandboxes/d2/policy", {"policy": ENDPOINT_POLICY})
        assert st in (200, 201, 202) and time.monotonic() - t0 < 1.5, (st, body)
        # K8S_RESYNC_MS is 30 s: at least one resync, with its fence checks
        # and orphan scan, falls inside the outage.
        assert keep_checking_health(g, 36) > 60
    finally:
        for name in ("kube-apiserver", "etcd"):
            os.kill(pids[name], signal.SIGCONT)
    poll(lambda: apiserver_state(g) == "ok", 90, "apiserver ok again")
    # The patch that failed during the outage is sent again by a later pass.
    def secret_policy():
        sec = kube.client.get(f"/api/v1/namespaces/{ns}/secrets/os-{ids[2]}-supervisor")
        return base64.b64decode(sec["data"]["policy.yaml"]).decode()
    poll(lambda: secret_policy() == ENDPOINT_POLICY, 75, "the Secret patched after the outage")
    # The checks go on: a Secret labelled as a sandbox nobody knows is an
    # orphan, removed by the next resync's scan.
    orphan = f"orphan-{uid()}"
    kube.client.post(f"/api/v1/namespaces/{ns}/secrets", {
        "metadata": {"name": orphan, "labels": {"app.kubernetes.io/managed-by": "openshell",
                                               "openshell.ai/sandbox-id": orphan}}})
    def orphan_gone():
        names = [s["metadata"]["name"] for s in
                 kube.client.list(f"/api/v1/namespaces/{ns}/secrets")["items"]]
        return orphan not in names
    poll(orphan_gone, 75, "the orphan removed by a resync's scan")
    poll(lambda: "removed-orphan" in g.log_text(), 10, "the removal reported")
    st, _ = g.request("POST", "/v1/sandboxes/d1/stop")
    assert st == 202
    poll(lambda: (v := g.sandbox("d1")) and v["phase"] == "Stopped", 60, "d1 stopped")
    assert "workload" not in pods_of(kube, ns, ids[1])


def throttle(kube, ns, sa):
    """One seat, Reject, for ServiceAccount sa: the gateway's identity."""
    name = f"os-faults-{uid()}"
    base = "/apis/flowcontrol.apiserver.k8s.io/v1"
    kube.client.post(f"{base}/prioritylevelconfigurations", {
        "metadata": {"name": name},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1, "lendablePercent": 0,
            "limitResponse": {"type": "Reject"}}}})
    kube.client.post(f"{base}/flowschemas", {
        "metadata": {"name": name},
        "spec": {"priorityLevelConfiguration": {"name": name}, "matchingPrecedence": 100,
                 "distinguisherMethod": {"type": "ByUser"},
                 "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {
                     "name": sa, "namespace": ns}}],
                     "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                        "resources": ["*"], "namespaces": ["*"],
                                        "clusterScope": True}],
                     "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}})
    return name


def unthrottle(kube, name):
    base = "/apis/flowcontrol.apiserver.k8s.io/v1"
    kube.client.delete(f"{base}/flowschemas/{name}")
    kube.client.delete(f"{base}/prioritylevelconfigurations/{name}")


def sa_kubeconfig(kube, ns, tmp_path, sa):
    from test_driver_client import bind_admin, service_account_token
    token = service_account_token(kube, ns, sa)
    bind_admin(kube, ns, {"kind": "ServiceAccount", "name": sa, "namespace": ns})
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "t",
           "clusters": [{"name": "c", "cluster": {"server": kube.server,
                                                  "certificate-authority": kube.client.ca_file}}],
           "contexts": [{"name": "t", "context": {"cluster": "c", "user": "u"}}],
           "users": [{"name": "u", "user": {"token": token}}]}
    path = tmp_path / f"{sa}.json"
    path.write_text(json.dumps(cfg))
    return str(path), token


def hammer(kube, ns, token, stop, seen):
    """Requests as the gateway's identity on kept-alive connections, as fast
    as they go: the level's few seats stay taken, so the gateway's own calls
    are rejected (429). seen counts the statuses the hammer itself got."""
    import http.client, ssl
    u = urllib.parse.urlsplit(kube.server)
    ctx = ssl.create_default_context(cafile=kube.client.ca_file)
    c = None
    while not stop.is_set():
        try:
            c = c or http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=5)
            c.request("GET", f"/api/v1/namespaces/{ns}/pods",
                      headers={"Authorization": f"Bearer {token}"})
            r = c.getresponse()
            r.read()
            seen[r.status] = seen.get(r.status, 0) + 1
        except (OSError, http.client.HTTPException):
            c = None
            time.sleep(0.01)


def test_api_priority_and_fairness_429s_are_retried_logged_and_survived(kube, ns, gateways,
                                                                          tmp_path):
    sa = "gw-throttled"
    kubeconfig, token = sa_kubeconfig(kube, ns, tmp_path, sa)
    g = KubeGateway(kube, ns, topology="combined")
    gateways.append(g)
    g.start(kubeconfig=kubeconfig)
    st, b = g.request("POST", "/v1/sandboxes", {"name": "t0"})
    assert st == 201 and b["phase"] == "Provisioning", b
    name = throttle(kube, ns, sa)
    stop = threading.Event()
    seen = {}
    workers = [threading.Thread(target=hammer, args=(kube, ns, token, stop, seen))
               for _ in range(HAMMERS)]
    for w in workers:
        w.start()
    try:
        poll(lambda: seen.get(429), 60, f"the throttle in effect (hammer saw {seen})")
        poll(lambda: "HTTP 429 Too Many Requests" in g.log_text(), 60, "a 429 retried")
        assert "Retry-After" in g.log_text()
        assert keep_checking_health(g, 5) > 5
        # Creates succeed or fail with the API's words, never hang the gateway.
        results = []
        for i in range(3):
            st, b = g.request("POST", "/v1/sandboxes", {"name": f"t{i + 1}"})
            assert st == 201, b
            results.append(b)
            assert health_within_a_second(g) == 200
        for b in results:
            assert b["phase"] in ("Provisioning", "Error"), b
            if b["phase"] == "Error":
                assert "429" in b["message"] or "Too Many Requests" in b["message"], b
    finally:
        stop.set()
        for w in workers:
            w.join(30)
        unthrottle(kube, name)
    # Once the throttle is gone every sandbox can be created.
    st, b = g.request("POST", "/v1/sandboxes", {"name": "t9"})
    assert st == 201 and b["phase"] == "Provisioning", b
