"""The watch's 410 path, forced for real: an apiserver of its own with the
watch cache off (every watch is served by etcd itself) and etcd compacted
by the apiserver every 2 s. The gateway is paused (SIGSTOP) while the
cluster moves on and is compacted past the resourceVersion its Pod watch
last saw; resumed, its next watch from that version is answered 410 Gone,
and it must list again (counted in `watch_relists_after_410`), keep
answering, and see Pods made afterwards."""
import os, signal, time

import pytest

from tests.lib import kubelib
from tests.lib.driver_util import poll
from tests.lib.gateway_kube_util import KubeGateway, pods_of, stop_played


@pytest.fixture(scope="module")
def compacting_kube():
    try:
        env = kubelib.start_env(with_controller_manager=False, apiserver_args=(
            "--watch-cache=false", "--etcd-compaction-interval=2s"))
    except kubelib.TestEnvError as e:
        pytest.fail(f"kube test environment unavailable: {e}", pytrace=False)
    yield env
    kubelib.stop_env(env)


def kube_status(g):
    st, body = g.request("GET", "/v1/gateway/status")
    assert st == 200, body
    return body["kubernetes"]


def test_watch_expired_by_compaction_is_listed_again(compacting_kube):
    kube = compacting_kube
    ns = kube.client.create_namespace("relist")
    g = KubeGateway(kube, ns, topology="combined")
    g.start()
    try:
        st, b = g.request("POST", "/v1/sandboxes", {"name": "before"})
        assert st == 201, b
        poll(lambda: (v := g.sandbox("before")) and v.get("pods"), 30, "its Pod in the view")
        assert kube_status(g)["watch_relists_after_410"] == 0
        os.kill(g.proc.pid, signal.SIGSTOP)
        try:
            # The cluster moves on (any write bumps etcd's revision), and two
            # compactions pass the version the paused watch holds.
            for i in range(20):
                kube.client.post(f"/api/v1/namespaces/{ns}/configmaps",
                                 {"metadata": {"name": f"churn-{i}"}})
            time.sleep(7)
        finally:
            os.kill(g.proc.pid, signal.SIGCONT)
        poll(lambda: kube_status(g)["watch_relists_after_410"] >= 1, 60,
             "a 410 answered by a new list")
        assert "410" in g.log_text() or "expired" in g.log_text().lower(), g.log_text()[-2000:]
        # The watch goes on from the new list: a Pod made now is seen.
        st, b = g.request("POST", "/v1/sandboxes", {"name": "after"})
        assert st == 201, b
        poll(lambda: (v := g.sandbox("after")) and v.get("pods"), 30, "the new Pod in the view")
        assert pods_of(kube, ns, b["id"])
    finally:
        stop_played(g)
        for s in (g.request("GET", "/v1/sandboxes")[1] or {}).get("sandboxes", []):
            g.request("DELETE", f"/v1/sandboxes/{s['name']}")
        g.cleanup()
