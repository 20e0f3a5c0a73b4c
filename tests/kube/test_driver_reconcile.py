# Reconcile against the real apiserver, as the gateway runs it (at start-up,
# on every Pod change its watch reports, every 30 s): it fails closed (a
# workload without its supervisor or fence is stopped), removes objects of
# sandboxes the gateway does not know, and finishes provisioning.
import os

from tests.lib.driver_util import exists, mark_ready, poll


def actions(drv, since=0):
    return [(a.get("id"), a.get("action")) for a in drv.reconcile_actions(since)]


def running(kube, drv, name):
    st, b = drv.create(name)
    assert st == 201 and b["phase"] == "Provisioning", b
    mark_ready(kube, drv.ns, drv.oname(name, "-supervisor"))
    poll(lambda: not drv.pod(name, "-workload")["spec"].get("schedulingGates"), 20,
         "the gateway's watch ungated the workload")
    assert {"id": drv.sid(name), "action": "ungated",
            "reason": "supervisor Ready and fence confirmed"} in drv.reconcile_actions()
    drv.wait_phase(name, "Ready")


def test_restart_reconcile_finishes_provisioning(kube, drv):
    st, b = drv.create("p1")  # returns once objects are accepted: a gateway that then stops
    assert st == 201 and b["phase"] == "Provisioning", b
    drv.stop_gateway()
    mark = drv.restart()  # supervisor not Ready: still gated, nothing done
    assert actions(drv, mark) == [], drv.log(mark)
    assert drv.pod("p1", "-workload")["spec"]["schedulingGates"]
    drv.stop_gateway()
    mark_ready(kube, drv.ns, drv.oname("p1", "-supervisor"))  # while no gateway runs
    mark = drv.restart()  # a new process: nothing but the records and the cluster
    poll(lambda: (drv.sid("p1"), "ungated") in actions(drv, mark), 10, "start-up reconcile")
    assert not drv.pod("p1", "-workload")["spec"].get("schedulingGates")
    assert drv.wait_phase("p1", "Ready")["phase"] == "Ready"


def test_workload_without_supervisor_is_stopped(kube, drv):
    running(kube, drv, "g1")
    running(kube, drv, "g2")  # control: a healthy neighbour is left alone
    mark = len(drv.log())
    kube.client.delete(drv.path("Pod", drv.oname("g1", "-supervisor")))
    poll(lambda: drv.pods("g1") == {}, 20, "the workload must not run unsupervised")
    acts = drv.reconcile_actions(mark)
    assert [(a["id"], a["action"]) for a in acts] == [(drv.sid("g1"), "stopped")], acts
    assert "fail closed" in acts[0]["reason"], acts
    got = drv.wait_phase("g1", "Error")  # the gateway: stopped outside its control
    assert "stopped" in got["message"], got
    assert set(drv.pods("g2")) == {"workload", "supervisor"}
    assert drv.get("g2")["phase"] == "Ready"
    assert drv.objects("NetworkPolicy", "g1"), "stop keeps the fence"


def test_workload_without_fence_is_stopped(kube, drv):
    running(kube, drv, "f1")
    drv.stop_gateway()  # a fence lost while the gateway was away: found at start-up
    kube.client.delete(drv.path("NetworkPolicy", drv.oname("f1", "-fence")))
    mark = drv.restart()
    poll(lambda: drv.pods("f1") == {}, 20, "unfenced workload stopped")
    assert (drv.sid("f1"), "stopped") in actions(drv, mark), drv.log(mark)


def test_orphans_are_removed(kube, drv):
    assert drv.create("o1")[0] == 201
    assert drv.create("o2")[0] == 201
    drv.stop_gateway()
    drv.forget("o1")  # the gateway no longer knows o1
    mark = drv.restart()
    poll(lambda: all(v == [] for v in drv.all_objects("o1").values()), 30, "o1 removed")
    assert [a for a in actions(drv, mark) if a[1] != "ungated"] == \
        [(drv.sid("o1"), "removed-orphan")], drv.log(mark)
    assert set(drv.pods("o2")) == {"workload", "supervisor"}  # control


def test_watch_loop_reacts_to_pod_changes(kube, drv):
    """The gateway's loop: a real watch on the sandbox Pods drives reconcile
    (the periodic resync is 30 s; each step here is bounded well below it)."""
    assert drv.create("w1")[0] == 201
    mark = len(drv.log())
    assert drv.pod("w1", "-workload")["spec"]["schedulingGates"]
    mark_ready(kube, drv.ns, drv.oname("w1", "-supervisor"))  # an event, not a timer, wakes it
    poll(lambda: not drv.pod("w1", "-workload")["spec"].get("schedulingGates"), 20,
         "watch loop ungated the workload after the supervisor became Ready")
    kube.client.delete(drv.path("Pod", drv.oname("w1", "-supervisor")))
    poll(lambda: drv.pods("w1") == {}, 20, "watch loop stopped the unsupervised workload")
    acts = actions(drv, mark)
    assert (drv.sid("w1"), "ungated") in acts and (drv.sid("w1"), "stopped") in acts, acts
    st, status = drv.request("GET", "/v1/gateway/status")
    assert status["kubernetes"]["watch"] == "ok", status
