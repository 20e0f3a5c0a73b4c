"""Helpers for the kubernetes driver's tests against the real apiserver: run
the openshell-k8s-driver harness, write its gateway.toml, make RuntimeClasses
available, and play the kubelet by writing Pod status (there is no kubelet)."""
import json, os, subprocess, threading, time, uuid

import pytest

from tests.lib import build
from tests.lib.kubelib import ApiError

BUILD = build.BUILD
BINARY = build.binary("openshell-k8s-driver")
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


class Result:
    def __init__(self, proc):
        self.rc, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        try:
            self.json = json.loads(proc.stdout) if proc.stdout.strip() else None
        except ValueError:
            self.json = None

    def __repr__(self):
        return f"<exit {self.rc} stdout={self.stdout[-2000:]!r} stderr={self.stderr[-2000:]!r}>"


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
    """One configured harness: a gateway.toml, a state dir and a kubeconfig."""

    def __init__(self, kube, tmp_path, namespace, **settings):
        self.kube, self.ns, self.dir = kube, namespace, tmp_path
        self.state = str(tmp_path / "state")
        self.kubeconfig = kube.kubeconfig
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("OPENSHELL_DRIVERS_") and not k.startswith("KUBERNETES_")}
        self.env.pop("KUBECONFIG", None)
        self.configure(**settings)

    def configure(self, **settings):
        base = {"namespace": self.ns, "topology": "dedicated-supervisor",
                "supervisor_image": SUP_IMAGE, "default_image": AGENT_IMAGE}
        base.update(settings)
        self.config = str(self.dir / f"gateway-{uid()}.toml")
        with open(self.config, "w") as f:
            f.write("[openshell.drivers.kubernetes]\n")
            for k, v in base.items():
                if v is not None:
                    f.write(f"{k} = {toml_value(v)}\n")
        return self

    def argv(self, *args, ready_timeout=0, kubeconfig=True):
        a = [BINARY, "--config", self.config, "--state-dir", self.state,
             "--ready-timeout", str(ready_timeout), "--call-timeout", "20"]
        if kubeconfig:
            a += ["--kubeconfig", self.kubeconfig]
        return a + list(args)

    def run(self, *args, ready_timeout=0, env=None, kubeconfig=True, timeout=180):
        p = subprocess.run(self.argv(*args, ready_timeout=ready_timeout, kubeconfig=kubeconfig),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**self.env, **(env or {})}, timeout=timeout)
        return Result(p)

    def start_bg(self, *args, ready_timeout=60):
        """Runs a command that waits for the supervisor; .result() joins it."""
        box = {}

        def go():
            box["r"] = self.run(*args, ready_timeout=ready_timeout)
        t = threading.Thread(target=go)
        t.start()

        class Handle:
            def result(self, timeout=240):
                t.join(timeout)
                assert not t.is_alive(), "driver command did not finish"
                return box["r"]
        return Handle()

    def create(self, sid, *extra, ready_timeout=0, name=None):
        return self.run("create", "--id", sid, "--name", name or sid, *extra,
                        ready_timeout=ready_timeout)

    # ---- reading the cluster back ----
    def path(self, kind, name=None):
        p = KINDS[kind].format(ns=self.ns)
        return f"{p}/{name}" if name else p

    def objects(self, kind, sid):
        c = self.kube.client
        return c.list(self.path(kind), labelSelector=f"{LABEL_ID}={sid}")["items"]

    def all_objects(self, sid):
        return {k: self.objects(k, sid) for k in KINDS}

    def pod(self, name):
        return self.kube.client.get(self.path("Pod", name))

    def pods(self, sid):
        return {p["metadata"]["labels"]["openshell.ai/component"]: p for p in self.objects("Pod", sid)}


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
    assert os.access(BINARY, os.X_OK), f"{BINARY} not built (set OPENSHELL_BUILD)"
    return Driver(kube, tmp_path, ns)
