"""Helpers for the kubernetes driver's tests against the real apiserver: drive
the driver through its one host, openshell-gateway (its HTTP API), make
RuntimeClasses available, and play the kubelet by writing Pod status (there
is no kubelet)."""
import json, os, re, sqlite3, time, uuid

import pytest

from tests.lib import build
from tests.lib.kubelib import ApiError

LABEL_ID = "openshell.ai/sandbox-id"
SUP_IMAGE = "registry.invalid/openshell-supervisor:1"  # never pulled: no kubelet
AGENT_IMAGE = "registry.invalid/agent:1"

# Every collection a sandbox may have objects in.
KINDS = {
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
}


def uid():
    return uuid.uuid4().hex[:8]


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    return json.dumps(v)  # a TOML basic string for our ASCII values


class Driver:
    """The kubernetes driver as its host runs it: one openshell-gateway
    (default_driver = "kubernetes") on a state dir that survives restarts and
    reconfiguration, plus readers of what landed in the cluster. Sandboxes
    are named by the caller; the gateway picks their ids."""

    def __init__(self, kube, tmp_path, namespace, **settings):
        from tests.lib.gateway_kube_util import KubeGateway
        self.kube, self.ns, self.dir = kube, namespace, tmp_path
        self.g = KubeGateway(kube, namespace, **settings)
        self.kubeconfig, self.extra_env = None, {}
        self.ids = {}

    def configure(self, **settings):
        """New settings; a running gateway is restarted with them."""
        self.g.write_config(**settings)
        if self.running():
            self.restart()
        return self

    def running(self):
        return self.g.proc is not None and self.g.proc.poll() is None

    def start(self):
        self.g.start(self.extra_env, self.kubeconfig)
        return self

    def ensure(self):
        if not self.running():
            self.start()
        return self

    def restart(self):
        """Stops and starts the gateway: what it logs afterwards is the
        start-up reconcile of a new process (records + cluster only)."""
        self.g.stop()
        mark = len(self.g.log_text()) if os.path.exists(self.g.log_path) else 0
        self.start()
        return mark

    def log(self, since=0):
        return self.g.log_text()[since:]

    def reconcile_actions(self, since=0):
        """The reconcile report lines the gateway logged: [{id, action, ...}]."""
        out = []
        for line in self.log(since).splitlines():
            try:
                msg = json.loads(line).get("msg", "")
            except ValueError:
                msg = line
            m = re.search(r"reconcile: (\{.*\})$", msg)
            if m:
                out.append(json.loads(m.group(1)))
        return out

    def stop_gateway(self):
        self.g.stop()

    def cleanup(self):
        self.g.cleanup()

    # ---- the API ----
    def request(self, method, path, body=None):
        self.ensure()
        return self.g.request(method, path, body)

    def create(self, name, runtime_class=None, image=None, policy=None, **fields):
        """POST /v1/sandboxes: (HTTP status, body). The sandbox's id is kept."""
        body = {"name": name, **fields}
        if runtime_class:
            body["runtime_class_name"] = runtime_class
        if image:
            body["image"] = image
        if policy is not None:
            body["policy"] = policy
        st, b = self.request("POST", "/v1/sandboxes", body)
        if st == 201:
            self.ids[name] = b["id"]
            b = self.created(name, b)
        return st, b

    def created(self, name, b):
        """The sandbox once its create finished: the gateway runs kubernetes
        creates off its loop, the API answers while they run."""
        def done():
            v = self.get(name)
            return v and v.get("backend", {}).get("message") != "creating its objects" and \
                (v["backend"]["phase"] != "Failed" or v["phase"] == "Error") and v
        return poll(done, 60, f"{name}'s create finished") if b.get("backend") else b

    def get(self, name):
        st, b = self.request("GET", f"/v1/sandboxes/{name}")
        return b if st == 200 else None

    def act(self, name, action):
        return self.request("POST", f"/v1/sandboxes/{name}/{action}")

    def delete(self, name):
        return self.request("DELETE", f"/v1/sandboxes/{name}")

    def wait_phase(self, name, *phases, timeout=30):
        return poll(lambda: (s := self.get(name)) and s["phase"] in phases and s, timeout,
                    f"{name} in {phases}")

    def forget(self, name):
        """What a gateway that never knew the sandbox would have: its row
        removed from the stopped gateway's own SQLite store."""
        assert not self.running()
        db = sqlite3.connect(os.path.join(self.g.state_dir, "gateway.db"))
        try:
            db.execute("DELETE FROM sandboxes WHERE id = ?", (self.ids[name],))
            db.commit()
        finally:
            db.close()

    # ---- reading the cluster back ----
    def sid(self, name):
        return self.ids[name]

    def oname(self, name, suffix=""):
        return f"os-{self.ids[name]}{suffix}"

    def path(self, kind, name=None):
        p = KINDS[kind].format(ns=self.ns)
        return f"{p}/{name}" if name else p

    def objects(self, kind, name):
        c = self.kube.client
        return c.list(self.path(kind), labelSelector=f"{LABEL_ID}={self.ids[name]}")["items"]

    def all_objects(self, name):
        return {k: self.objects(k, name) for k in KINDS}

    def pod(self, name, suffix):
        return self.kube.client.get(self.path("Pod", self.oname(name, suffix)))

    def pods(self, name):
        return {p["metadata"]["labels"]["openshell.ai/component"]: p for p in self.objects("Pod", name)}


def poll(fn, timeout, what, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s: {what}")


def exists(client, path):
    try:
        client.get(path)
        return True
    except ApiError as e:
        if e.status == 404:
            return False
        raise


def make_runtime_class(kube, name, handler="kata"):
    """Creates a RuntimeClass and waits until Pod admission sees it (dry-run Pod)."""
    c = kube.client
    c.post("/apis/node.k8s.io/v1/runtimeclasses",
           {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": name}, "handler": handler})
    ns = "default"
    probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"rc-probe-{uid()}"},
             "spec": {"runtimeClassName": name, "automountServiceAccountToken": False,
                      "containers": [{"name": "c", "image": AGENT_IMAGE}]}}

    def admitted():
        try:
            c.post(f"/api/v1/namespaces/{ns}/pods", probe, dryRun="All")
            return True
        except ApiError as e:
            if "not found" in e.body.get("message", ""):
                return False
            raise
    ensure_default_sa(kube, ns)
    poll(admitted, 30, f"RuntimeClass {name} visible to admission")
    return name


def ensure_default_sa(kube, ns):
    try:
        kube.client.post(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "default"}})
    except ApiError as e:
        if e.status != 409:
            raise


def mark_ready(kube, ns, pod, ready=True):
    """What a kubelet would write once the containers run and pass readiness."""
    status = "True" if ready else "False"
    kube.client.patch(f"/api/v1/namespaces/{ns}/pods/{pod}/status",
                      {"status": {"phase": "Running",
                                  "conditions": [{"type": "Ready", "status": status}]}})


def warn_event(kube, ns, pod, reason, message):
    """A kubelet's Warning Event about a Pod (e.g. FailedCreatePodSandBox)."""
    p = kube.client.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
    kube.client.post(f"/api/v1/namespaces/{ns}/events", {
        "metadata": {"name": f"{pod}.{uid()}"}, "type": "Warning", "reason": reason,
        "message": message, "count": 1,
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": pod,
                           "uid": p["metadata"]["uid"]},
        "source": {"component": "kubelet"}})


def rv(obj):
    return int(obj["metadata"]["resourceVersion"])


@pytest.fixture
def ns(kube):
    return kube.client.create_namespace("drv")


@pytest.fixture
def drv(kube, tmp_path, ns):
    d = Driver(kube, tmp_path, ns)
    yield d
    d.cleanup()
