"""Gateway restarts against live sandboxes: state survives, running
supervisors are re-adopted (same pid), dead ones are reported with their exit
code, a kill -9 between the driver's spawn and the write that records it
ends consistent, and unknown sandboxes are removed, never left running.
No orphan supervisor, namespace or veth survives a delete."""

import os
import signal
import sqlite3
import threading

import pytest

from gateway_util import GATEWAY, SUPERVISOR, Gateway, osb_links, supervisors_for, wait_for

pytestmark = pytest.mark.skipif(not (os.path.exists(GATEWAY) and os.path.exists(SUPERVISOR)),
                                reason="gateway/supervisor not built")


@pytest.fixture
def gw():
    g = Gateway().start()
    yield g
    g.cleanup()


def create(gw, name, command=("sleep", "300")):
    return gw.request("POST", "/v1/sandboxes", {"name": name, "command": list(command)})


def test_restart_keeps_state_and_readopts_running_sandboxes(gw):
    sid = create(gw, "keep")[1]["id"]
    gw.wait_phase("keep", "Ready")
    pids = supervisors_for(sid)
    assert len(pids) == 1
    gw.stop(signal.SIGTERM)
    assert supervisors_for(sid) == pids  # sandboxes outlive the gateway
    gw.start()
    row = gw.wait_phase("keep", "Ready")
    assert row["id"] == sid
    assert supervisors_for(sid) == pids  # re-adopted, not restarted
    # Still fully managed: stop works through the new gateway.
    st, _ = gw.request("POST", "/v1/sandboxes/keep/stop")
    assert st == 202
    gw.wait_phase("keep", "Stopped")
    assert not supervisors_for(sid)


def test_sandbox_that_died_while_the_gateway_was_down_is_reported(gw):
    sid = create(gw, "dies")[1]["id"]
    gw.wait_phase("dies", "Ready")
    gw.stop(signal.SIGKILL)
    for pid in supervisors_for(sid):
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not supervisors_for(sid), 10, what="supervisor gone")
    gw.start()
    row = gw.wait_phase("dies", "Error")
    assert row["exit_code"] == 128 + signal.SIGKILL
    assert "137" in row["message"]


def test_kill_9_between_spawn_and_record_then_restart_is_consistent(gw):
    links_before = osb_links()
    gw.stop()
    gw.start(extra_env={"OPENSHELL_TEST_GATEWAY_CRASH": "after-spawn"})
    with pytest.raises(Exception):
        create(gw, "crashy")  # the gateway dies mid-request
    gw.proc.wait(timeout=10)
    assert gw.proc.returncode == -signal.SIGKILL
    gw.proc = None
    gw.start()
    row = gw.wait_phase("crashy", "Ready")
    assert len(supervisors_for(row["id"])) == 1  # adopted, not spawned twice
    assert gw.request("DELETE", "/v1/sandboxes/crashy")[0] == 202
    wait_for(lambda: gw.sandbox("crashy") is None, 30, what="deleted")
    assert not supervisors_for(row["id"])
    wait_for(lambda: osb_links() <= links_before, 10, what="veths gone")
    assert not os.path.exists(gw.sandbox_dir(row["id"]))


def test_unknown_sandbox_directories_are_stopped_and_removed(gw):
    sid = create(gw, "orphan")[1]["id"]
    gw.wait_phase("orphan", "Ready")
    assert supervisors_for(sid)
    gw.stop()
    db = sqlite3.connect(os.path.join(gw.state_dir, "gateway.db"))
    db.execute("DELETE FROM sandboxes WHERE id = ?", (sid,))
    db.commit()
    db.close()
    gw.start()
    wait_for(lambda: not supervisors_for(sid), 15, what="orphan stopped")
    assert not os.path.exists(gw.sandbox_dir(sid))
    assert "removed unknown sandbox" in gw.log_text()


def test_concurrent_creates_all_become_ready(gw):
    n = 20
    links_before = osb_links()
    results = [None] * n

    def one(i):
        results[i] = create(gw, f"par-{i}")[0]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [201] * n
    for i in range(n):
        gw.wait_phase(f"par-{i}", "Ready", timeout=60)
    assert len(osb_links() - links_before) == n  # one veth each, none shared
    for i in range(n):
        assert gw.request("DELETE", f"/v1/sandboxes/par-{i}")[0] == 202
    wait_for(lambda: gw.request("GET", "/v1/sandboxes")[1]["sandboxes"] == [], 60,
             what="all deleted")
    wait_for(lambda: osb_links() <= links_before, 15, what="veths gone")
