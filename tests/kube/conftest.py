# Session fixture `kube` for the kube test layer: one real etcd + kube-apiserver
# + kube-controller-manager (tools/kube-testenv) per test run, stopped at the end.
# A missing Go toolchain or a failed build FAILS the tests; it never skips them.
import os, sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
import kubelib  # noqa: E402


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
