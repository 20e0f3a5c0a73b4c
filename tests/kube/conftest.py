# Session fixture `kube` for the kube test layer: one real etcd + kube-apiserver
# + kube-controller-manager (tools/kube-testenv) per test run, stopped at the end.
# A missing Go toolchain or a failed build FAILS the tests; it never skips them.
# The per-test fixtures `ns` and `drv` are defined in tests/lib/driver_util.py
# and reach the tests through this file.
import pytest

from tests.lib import kubelib
from tests.lib.driver_util import drv, ns  # noqa: F401 (fixtures)
from tests.lib.gateway_kube_util import stop_played


@pytest.fixture(scope="session")
def kube():
    """A kubelib.KubeEnv: .client (KubeClient), .kubeconfig, .helm, .etcd_url, .environ()."""
    try:
        env, err = kubelib.acquire_shared_env(), None
    except kubelib.TestEnvError as e:
        env, err = None, str(e)
    if err:
        pytest.fail(f"kube test environment unavailable: {err}", pytrace=False)
    yield env
    kubelib.release_shared_env()


@pytest.fixture
def gateways():
    """KubeGateways a test starts (start_gateway appends); stopped and removed after it."""
    made = []
    yield made
    for g in made:
        stop_played(g)
        if g.proc and g.proc.poll() is None and g.healthy():
            for s in (g.request("GET", "/v1/sandboxes")[1] or {}).get("sandboxes", []):
                g.request("DELETE", f"/v1/sandboxes/{s['name']}")
        g.cleanup()
