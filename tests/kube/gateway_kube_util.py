"""Helpers for tests/kube/test_gateway_kube.py: the real openshell-gateway with
default_driver = "kubernetes" against the kube fixture's apiserver, driven by
the real `openshell` CLI. Reuses tests/integration/gateway_util.Gateway for
process handling and driver_util for cluster helpers; nothing is mocked."""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import gateway_util  # noqa: E402
from driver_util import AGENT_IMAGE, SUP_IMAGE, ensure_default_sa, toml_value, uid  # noqa: E402


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
        base = {"namespace": namespace, "topology": "dedicated-supervisor",
                "supervisor_image": SUP_IMAGE, "default_image": AGENT_IMAGE}
        base.update(settings)
        with open(self.config, "w") as f:
            f.write('[openshell.gateway]\ndefault_driver = "kubernetes"\n\n')
            f.write("[openshell.drivers.kubernetes]\n")
            for k, v in base.items():
                if v is not None:
                    f.write(f"{k} = {toml_value(v)}\n")

    def start(self, extra_env=None):
        env = {k: v for k, v in self.env.items()
               if not k.startswith("OPENSHELL_DRIVERS_") and not k.startswith("KUBERNETES_")}
        env.update(extra_env or {})
        env["KUBECONFIG"] = self.kube.kubeconfig
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [gateway_util.GATEWAY, "--config", self.config, "--state-dir", self.state_dir,
             "--listen", f"127.0.0.1:{self.port}"],
            env=env, stdout=self.log, stderr=self.log)
        gateway_util.wait_for(self.healthy, 20, what="gateway health")
        return self

    def cli_json(self, *args, check=0, timeout=90):
        r = self.cli("-o", "json", *args, check=check, timeout=timeout)
        return json.loads(r.stdout) if r.stdout.strip() else None


def wait_for(pred, timeout=30, what="condition"):
    return gateway_util.wait_for(pred, timeout, step=0.2, what=what)


__all__ = ["KubeGateway", "wait_for", "uid"]
