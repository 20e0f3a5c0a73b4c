# Session fixture `node` for the node layer: one `kube-testenv up --node` per
# test run with our images imported, stopped at the end (or by the teardown
# test, which then checks the host against the snapshot taken before `up`).
# A machine that cannot run a node (not root) skips the layer with its reason,
# except under CI=true, where that fails. A failed build or start fails.
import pytest

from tests.lib import kubelib, nodelib

TEARDOWN_MARK = "node_teardown"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{TEARDOWN_MARK}: stops the session's node; runs last")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda i: i.get_closest_marker(TEARDOWN_MARK) is not None)


@pytest.fixture(scope="session")
def node():
    """A nodelib.NodeEnv: .client, .host_ip, .kubeconfig, .dir, .before, .stop()."""
    why = nodelib.why_not_runnable()
    if why:
        if nodelib.in_ci():
            pytest.fail(f"{why}; CI=true: the node layer fails instead of skipping", pytrace=False)
        pytest.skip(why)
    try:
        env, err = nodelib.start_node(), None
    except kubelib.TestEnvError as e:
        env, err = None, str(e)
    if err:
        pytest.fail(f"node test environment unavailable: {err}", pytrace=False)
    yield env
    env.stop()


@pytest.fixture
def ns(node):
    """A namespace enforcing PodSecurity restricted, deleted after the test."""
    name = node.client.create_namespace("node", labels=nodelib.RESTRICTED)
    yield name
    if node.stopped:  # the teardown test took the whole node down
        return
    node.client.delete(f"/api/v1/namespaces/{name}")
