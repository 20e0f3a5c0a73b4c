"""Helpers for tests/kube/test_gateway_kube.py: the real openshell-gateway with
default_driver = "kubernetes" against the kube fixture's apiserver, driven by
the real `openshell` CLI. Reuses tests/integration/gateway_util.Gateway for
process handling and driver_util for cluster helpers; nothing is mocked."""
import json, os, subprocess, threading

from tests.lib import gateway_util
from tests.lib.driver_util import (AGENT_IMAGE, KINDS, LABEL_ID, SUP_IMAGE, ensure_default_sa, mark_ready,
                                   poll, toml_value, uid)


class KubeGateway(gateway_util.Gateway):
    """A gateway whose gateway.toml selects the kubernetes driver."""

    def __init__(self, kube, namespace, state_dir=None, port=None, config_text=None, **settings):
        super().__init__(state_dir=state_dir)
        self.kube, self.ns = kube, namespace
        if port:
            self.port = port
        ensure_default_sa(kube, namespace)
        self.config = os.path.join(self.state_dir, f"gateway-{uid()}.toml")
        if config_text is not None:  # e.g. what the Helm chart rendered
            with open(self.config, "w") as f:
                f.write(config_text)
            return
        self.write_config(**settings)

    def write_config(self, **settings):
        """(Re)writes gateway.toml: default_driver = "kubernetes" and the section."""
        base = {"namespace": self.ns, "topology": "dedicated-supervisor",
                "supervisor_image": SUP_IMAGE, "default_image": AGENT_IMAGE}
        base.update(settings)
        with open(self.config, "w") as f:
            f.write('[openshell.gateway]\ndefault_driver = "kubernetes"\n\n')
            f.write("[openshell.drivers.kubernetes]\n")
            for k, v in base.items():
                if v is not None:
                    f.write(f"{k} = {toml_value(v)}\n")

    def argv(self):
        return [gateway_util.GATEWAY, "--config", self.config, "--state-dir", self.state_dir,
                "--listen", f"127.0.0.1:{self.port}"]

    def proc_env(self, extra_env=None, kubeconfig=None):
        """kubeconfig: None = the test cluster's, False = no KUBECONFIG at all."""
        env = {k: v for k, v in self.env.items()
               if not k.startswith("OPENSHELL_DRIVERS_") and not k.startswith("KUBERNETES_")}
        env.pop("KUBECONFIG", None)
        if kubeconfig is not False:
            env["KUBECONFIG"] = kubeconfig or self.kube.kubeconfig
        env.update(extra_env or {})
        return env

    def start(self, extra_env=None, kubeconfig=None):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv(), env=self.proc_env(extra_env, kubeconfig),
                                     stdout=self.log, stderr=self.log)
        gateway_util.wait_for(self.healthy, 20, what="gateway health")
        return self

    def start_fails(self, extra_env=None, kubeconfig=None, timeout=30):
        """Runs a gateway that must refuse to start: (exit code, its output)."""
        p = subprocess.run(self.argv(), env=self.proc_env(extra_env, kubeconfig),
                           capture_output=True, text=True, timeout=timeout)
        lines = []
        for line in (p.stdout + p.stderr).splitlines():  # JSON log records: their text
            try:
                lines.append(json.loads(line).get("msg", line))
            except (ValueError, AttributeError):
                lines.append(line)
        return p.returncode, "\n".join(lines)

    def check_config(self, *args, extra_env=None, kubeconfig=None):
        """openshell-gateway --check-config on this gateway.toml:
        (exit code, JSON report or None, stderr)."""
        p = subprocess.run([gateway_util.GATEWAY, "--check-config", self.config, *args],
                           env=self.proc_env(extra_env, kubeconfig), capture_output=True,
                           text=True, timeout=60)
        try:
            out = json.loads(p.stdout) if p.stdout.strip() else None
        except ValueError:
            out = None
        return p.returncode, out, p.stderr

    def cli_json(self, *args, check=0, timeout=90):
        r = self.cli("-o", "json", *args, check=check, timeout=timeout)
        return json.loads(r.stdout) if r.stdout.strip() else None


def secret_of(kube, ns, sid):
    """The supervisor Secret's data, decoded."""
    import base64
    sec = kube.client.get(f"/api/v1/namespaces/{ns}/secrets/os-{sid}-supervisor")
    return {k: base64.b64decode(v).decode() for k, v in sec["data"].items()}


def play_supervisor(g, sid, sec, endpoint, workdir=None, agent=("sleep", "300")):
    """The supervisor Pod's process (the test apiserver has no kubelet), run
    here with exactly the policy and token its Secret holds (and, with
    workdir, the Pod's workspace volume as that directory); recorded on g so
    the test's teardown stops it."""
    from tests.lib.sandbox_util import LAUNCHER
    d = os.path.join(g.state_dir, f"played-{sid}")
    os.makedirs(d, exist_ok=True)
    tok, pol = os.path.join(d, "token"), os.path.join(d, "policy.yaml")
    with open(tok, "w") as f:
        f.write(sec["token"])
    os.chmod(tok, 0o600)
    with open(pol, "w") as f:
        f.write(sec["policy.yaml"])
    p = subprocess.Popen([gateway_util.SUPERVISOR, "--backend", "inpod", "--sandbox-id", sid,
                          "--proxy-port", "3128", "--launcher", LAUNCHER, "--policy", pol,
                          "--audit-log", "/dev/null", "--gateway", endpoint,
                          "--token-file", tok,
                          *(["--workdir", workdir] if workdir else []), "--", *agent],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    g.played = getattr(g, "played", []) + [p]
    return p


def stop_played(g):
    for p in getattr(g, "played", []):
        if p.poll() is None:
            p.terminate()
            try:
                p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()


def wait_for(pred, timeout=30, what="condition"):
    return gateway_util.wait_for(pred, timeout, step=0.2, what=what)


__all__ = ["KubeGateway", "wait_for", "uid", "secret_of", "play_supervisor", "stop_played",
           "ENDPOINT_POLICY", "start_gateway", "pods_of", "cli_bg", "create_ready"]


# Shared by test_gateway_kube.py and test_gateway_kube_session.py.
ENDPOINT_POLICY = """version: 1
network_policies:
  github:
    endpoints:
      - host: api.github.com
        port: 443
"""


def start_gateway(kube, ns, gateways, **settings):
    g = KubeGateway(kube, ns, **settings)
    gateways.append(g)
    return g.start()


def pods_of(kube, ns, sid):
    items = kube.client.list(KINDS["Pod"].format(ns=ns), labelSelector=f"{LABEL_ID}={sid}")["items"]
    return {p["metadata"]["labels"]["openshell.ai/component"]: p for p in items}


def objects_of(kube, ns, sid):
    return {k: kube.client.list(p.format(ns=ns), labelSelector=f"{LABEL_ID}={sid}")["items"]
            for k, p in KINDS.items()}


def cli_bg(g, *args):
    """Runs a CLI command that waits (create/start) in a thread; .result() joins."""
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", g.cli(*args, timeout=150)))
    t.start()

    class H:
        def result(self):
            t.join(160)
            assert not t.is_alive(), "CLI did not finish"
            return box["r"]
    return H()


def create_ready(kube, g, name, *flags):
    """CLI create (detached); plays the kubelet for the supervisor; returns the row."""
    h = cli_bg(g, "sandbox", "create", "--name", name, "--detach", *flags)
    row = poll(lambda: g.sandbox(name), 30, f"sandbox {name} recorded")
    sup = poll(lambda: pods_of(kube, g.ns, row["id"]).get("supervisor"), 30,
               "supervisor Pod created")
    wl = poll(lambda: pods_of(kube, g.ns, row["id"]).get("workload"), 30, "workload Pod created")
    assert wl["spec"].get("schedulingGates"), "workload gated until its supervisor is Ready"
    mark_ready(kube, g.ns, sup["metadata"]["name"])
    # A supervisor that dials the gateway must hold its session before Ready.
    c = sup["spec"]["containers"][0]
    if "--gateway" in c["command"]:
        endpoint = {e["name"]: e.get("value") for e in c["env"]}["OPENSHELL_GATEWAY_ENDPOINT"]
        play_supervisor(g, row["id"], secret_of(kube, g.ns, row["id"]), endpoint)
    r = h.result()
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr, g.log_text()[-3000:])
    return g.sandbox(name)
