"""A full disk under the gateway's state directory, for real: the state dir
is a small tmpfs filled to 0 bytes and to a few KiB free while sandboxes are
created, policies updated and the lifecycle pass records what supervisors do.
The gateway must not crash, must answer 507 insufficient_storage, must log
each failure once and back off, must leave nothing half-made, and must bring
every sandbox to its true phase once space returns."""

import os
import signal
import subprocess
import tempfile
import time

import pytest

from tests.lib import build
from tests.lib.gateway_util import Gateway, supervisors_for, wait_for

pytestmark = build.needs("openshell-gateway", "openshell-supervisor")

POLICY = "version: 1\n"


@pytest.fixture
def small_disk():
    """A 16 MiB tmpfs as the state directory (removed after)."""
    where = tempfile.mkdtemp(prefix="osgw-disk-", dir="/var/tmp")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", where],
                   check=True)
    yield where
    subprocess.run(["umount", "-l", where], check=False)
    os.rmdir(where)


class Filler:
    """Fills a filesystem to 0 bytes free, or to `leave` bytes free."""

    def __init__(self, root):
        self.path = os.path.join(root, "filler")

    def fill(self, leave=0):
        with open(self.path, "ab") as f:
            while True:
                st = os.statvfs(self.path)
                free = st.f_bavail * st.f_frsize
                if free <= leave:
                    break
                try:
                    f.write(b"\0" * min(free - leave, 1 << 20))
                    f.flush()
                except OSError:
                    break  # ENOSPC: truly full
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def free(self):
        os.unlink(self.path)


@pytest.fixture
def gw(small_disk):
    g = Gateway(state_dir=os.path.join(small_disk, "state"))
    os.mkdir(g.state_dir, 0o700)
    # The gateway's own log lives off the full disk, so it can be read.
    fd, g.log_path = tempfile.mkstemp(prefix="osgw-log-", dir="/var/tmp")
    os.close(fd)
    g.start()
    yield g
    g.cleanup()
    os.unlink(g.log_path)


def create(gw, name):
    return gw.request("POST", "/v1/sandboxes",
                      {"name": name, "command": ["sleep", "300"], "policy": POLICY})


def assert_alive(gw):
    assert gw.proc.poll() is None, gw.log_text()
    assert gw.request("GET", "/v1/health", token=None)[0] == 200


def test_full_disk_refuses_with_507_and_recovers(gw):
    assert create(gw, "before")[0] == 201
    gw.wait_phase("before", "Ready")
    sid = gw.sandbox("before")["id"]
    filler = Filler(os.path.dirname(gw.state_dir))
    assert filler.fill(0) == 0

    # Creates: a clear 507, nothing half-made (no row, no directory).
    dirs = set(os.listdir(os.path.join(gw.state_dir, "sandboxes")))
    st, body = create(gw, "during")
    assert st == 507, body
    assert body["error"] == "insufficient_storage"
    assert "No space left on device" in body["message"] or "full" in body["message"]
    assert gw.request("GET", "/v1/sandboxes/during")[0] == 404
    assert set(os.listdir(os.path.join(gw.state_dir, "sandboxes"))) == dirs
    # Policy updates: the same.
    st, body = gw.request("PUT", "/v1/sandboxes/before/policy", {"policy": POLICY + "\n"})
    assert st == 507, body
    assert "revision" in body["message"]
    assert_alive(gw)

    # The lifecycle pass must write: the supervisor stops answering (its
    # session is lost after 4 s without heartbeats) while nothing can be saved.
    pids = supervisors_for(sid)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    row = wait_for(lambda: (r := gw.sandbox("before")) and "could not save" in r["message"] and r,
                   20, what="the lost session's unsaved phase shown")
    assert "No space left on device" in row["message"] or "full" in row["message"], row
    time.sleep(3)  # several passes meet the full disk
    assert_alive(gw)
    # Logged once, not once a pass.
    log = gw.log_text()
    assert log.count("sandbox before: saving its phase") == 1, log
    # And the supervisor dies while its exit status cannot be written.
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: not supervisors_for(sid), 10, what="supervisor gone")
    time.sleep(1)

    # Space returns: everything converges, with the true reasons.
    filler.free()
    row = gw.wait_phase("before", "Error")
    assert "killed by signal 9" in row["message"], row  # the supervisor, not the agent
    assert row["exit_code"] == 137, row
    wait_for(lambda: "back to every 300 ms" in gw.log_text(), 20, what="the pass's back-off ends")
    assert "its state is saved again" in gw.log_text()
    assert create(gw, "after")[0] == 201
    gw.wait_phase("after", "Ready")
    st, body = gw.request("PUT", "/v1/sandboxes/after/policy", {"policy": POLICY + "\n"})
    assert st == 202, body
    assert_alive(gw)


def test_a_few_kib_free_during_creates_and_policy_updates(gw):
    filler = Filler(os.path.dirname(gw.state_dir))
    answers = {}
    for leave in (16384, 8192, 4096, 2048, 0):
        filler.fill(leave)
        name = f"tight-{leave}"
        st, body = create(gw, name)
        answers[name] = st
        assert st in (201, 507), (leave, st, body)  # never 500, never a crash
        if st == 507:
            assert gw.request("GET", f"/v1/sandboxes/{name}")[0] == 404
        else:
            pst, pbody = gw.request("PUT", f"/v1/sandboxes/{name}/policy",
                                    {"policy": POLICY + "\n"})
            assert pst in (202, 507), (leave, pst, pbody)
        assert_alive(gw)
    assert answers["tight-0"] == 507
    time.sleep(2)  # lifecycle passes run against the nearly full disk
    assert_alive(gw)
    filler.free()
    # Full recovery: every stored sandbox reaches Ready, none stuck
    # Provisioning, none in Error with a reason that is not its own.
    st, body = gw.request("GET", "/v1/sandboxes")
    names = [s["name"] for s in body["sandboxes"]]
    assert names == [n for n, s in answers.items() if s == 201]
    for n in names:
        row = gw.wait_phase(n, "Ready", "Error")
        assert row["phase"] == "Ready", row
    assert create(gw, "after")[0] == 201
    gw.wait_phase("after", "Ready")
