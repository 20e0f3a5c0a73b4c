# Reconcile against the real apiserver, as a restarted gateway runs it: it
# fails closed (a workload without its supervisor or fence is stopped),
# removes objects of sandboxes nobody knows, and finishes provisioning.
import os

from tests.lib.driver_util import exists, mark_ready, poll


def running(kube, drv, sid):
    assert drv.create(sid).rc == 0
    mark_ready(kube, drv.ns, f"os-{sid}-supervisor")
    r = drv.run("reconcile")
    assert r.rc == 0 and {"id": sid, "action": "ungated",
                          "reason": "supervisor Ready and fence confirmed"} in r.json, r
    assert not drv.pod(f"os-{sid}-workload")["spec"].get("schedulingGates")


def test_restart_reconcile_finishes_provisioning(kube, drv):
    r = drv.create("p1")  # returns once objects are accepted: a gateway that then restarts
    assert r.rc == 0 and r.json["phase"] == "Provisioning", r
    nothing = drv.run("reconcile")  # supervisor not Ready: still gated
    assert nothing.rc == 0 and nothing.json == [], nothing
    assert drv.pod("os-p1-workload")["spec"]["schedulingGates"]
    mark_ready(kube, drv.ns, "os-p1-supervisor")
    r = drv.run("reconcile")  # a new process: nothing but the records and the cluster
    assert r.rc == 0 and [a["action"] for a in r.json] == ["ungated"], r
    assert drv.run("get", "p1").json["phase"] == "Running"


def test_workload_without_supervisor_is_stopped(kube, drv):
    running(kube, drv, "g1")
    running(kube, drv, "g2")  # control: a healthy neighbour is left alone
    kube.client.delete(drv.path("Pod", "os-g1-supervisor"))
    poll(lambda: not exists(kube.client, drv.path("Pod", "os-g1-supervisor")), 30, "supervisor gone")
    r = drv.run("reconcile")
    assert r.rc == 0, r
    assert [(a["id"], a["action"]) for a in r.json] == [("g1", "stopped")], r
    assert drv.pods("g1") == {}, "the workload must not run unsupervised"
    got = drv.run("get", "g1").json
    assert got["phase"] == "Stopped" and "fail closed" in got["message"]
    assert set(drv.pods("g2")) == {"workload", "supervisor"}
    assert drv.objects("NetworkPolicy", "g1"), "stop keeps the fence"


def test_workload_without_fence_is_stopped(kube, drv):
    running(kube, drv, "f1")
    kube.client.delete(drv.path("NetworkPolicy", "os-f1-fence"))
    r = drv.run("reconcile")
    assert r.rc == 0 and [(a["id"], a["action"]) for a in r.json] == [("f1", "stopped")], r
    assert drv.pods("f1") == {}


def test_orphans_are_removed(kube, drv):
    assert drv.create("o1").rc == 0
    assert drv.create("o2").rc == 0
    os.unlink(os.path.join(drv.state, "o1.json"))  # the gateway no longer knows o1
    r = drv.run("reconcile")
    assert r.rc == 0 and [(a["id"], a["action"]) for a in r.json] == [("o1", "removed-orphan")], r
    assert all(v == [] for v in drv.all_objects("o1").values())
    assert set(drv.pods("o2")) == {"workload", "supervisor"}  # control


def test_create_over_foreign_objects_leaves_them(kube, drv):
    assert drv.create("a1").rc == 0
    os.unlink(os.path.join(drv.state, "a1.json"))
    r = drv.create("a1")  # same id: the anchor exists and belongs to someone else
    assert r.rc == 1 and "HTTP 409 AlreadyExists" in r.stderr, r
    assert set(drv.pods("a1")) == {"workload", "supervisor"}, "no rollback of foreign objects"


def test_watch_loop_reacts_to_pod_changes(kube, drv):
    """The gateway's loop: a real watch on the sandbox Pods drives reconcile."""
    import subprocess
    assert drv.create("w1").rc == 0
    p = subprocess.Popen(drv.argv("watch", "--for", "40"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=drv.env)
    try:
        assert drv.pod("os-w1-workload")["spec"]["schedulingGates"]
        mark_ready(kube, drv.ns, "os-w1-supervisor")  # an event, not a timer, wakes it
        poll(lambda: not drv.pod("os-w1-workload")["spec"].get("schedulingGates"), 20,
             "watch loop ungated the workload after the supervisor became Ready")
        kube.client.delete(drv.path("Pod", "os-w1-supervisor"))
        poll(lambda: drv.pods("w1") == {}, 20, "watch loop stopped the unsupervised workload")
    finally:
        p.terminate()
        out, err = p.communicate(timeout=30)
    assert '"action":"ungated"' in out and '"action":"stopped"' in out, (out, err)
