"""Gateway restarts against live sandboxes: state survives, running
supervisors are re-adopted (same pid), dead ones are reported with their exit
code, a kill -9 between the driver's spawn and the write that records it
ends consistent, and unknown sandboxes are removed, never left running.
No orphan supervisor, namespace or veth survives a delete, even of 50
sandboxes created and deleted concurrently, and the run dir of a supervisor
killed with SIGKILL is removed by the driver."""

import concurrent.futures
import os
import re
import signal
import socket
import sqlite3
import struct
import subprocess

import pytest

from tests.lib import build, procfs
from tests.lib.gateway_util import Gateway, osb_links, supervisors_for, wait_for

pytestmark = build.needs("openshell-gateway", "openshell-supervisor")


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
    # A killed supervisor, not "the agent exited with code 137".
    assert "the supervisor was killed by signal 9 (SIGKILL)" in row["message"], row
    assert "agent exited" not in row["message"]


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


# Issue 7: "50 concurrent creates". Every one goes through the real API, gets
# its own supervisor, namespace, veth and subnet, and nothing survives the
# concurrent deletes. Other tests may run beside this one on the same host,
# so leftovers are matched by identity (pid + start time, ifindex), never by
# host-wide counts.
N_CONCURRENT = 50


def proc_table():
    """{pid: (ppid, start time in clock ticks)} of every process."""
    table = {}
    for pid, fields in procfs.stat_all():
        try:
            table[pid] = (int(fields[1]), int(fields[19]))
        except (IndexError, ValueError):
            continue
    return table


def descendants(pid, table):
    kids = {}
    for p, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(p)
    out, todo = [], list(kids.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def netns_of(pid):
    """'net:[N]' of a process, or None when it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def default_gateway(pid):
    """(interface, gateway) of the default route inside pid's namespace."""
    with open(f"/proc/{pid}/net/route") as f:
        for line in f.read().splitlines()[1:]:
            iface, dest, gwhex = line.split()[:3]
            if dest == "00000000":
                return iface, socket.inet_ntoa(struct.pack("<I", int(gwhex, 16)))
    return None, None


def link_index(name):
    """The link's ifindex in this process's network namespace (netlink, via
    ip: /sys/class/net shows the namespace /sys was mounted in, which is not
    ours under `unshare --net`)."""
    r = subprocess.run(["ip", "-o", "link", "show", "dev", name], capture_output=True, text=True)
    return int(r.stdout.split(":", 1)[0]) if r.returncode == 0 and r.stdout else None


def run_dir(sid):
    return os.path.join("/run/openshell", sid)


def sandbox_view(sid):
    """What one Ready sandbox holds on this host: its processes (monitor,
    supervisor, launcher, agent) as (pid, start time), its namespace, and the
    subnet octet N of the default route via 10.200.N.1 on eth0."""
    (sup,) = supervisors_for(sid)
    host = netns_of(os.getpid())

    def inside():
        table = proc_table()
        inner = [p for p in descendants(sup, table) if netns_of(p) not in (None, host)]
        return inner and (table, inner[0])

    table, agent = wait_for(inside, 10, what=f"{sid}'s agent in its namespace")
    procs = {(p, table[p][1]) for p in [table[sup][0], sup, *descendants(sup, table)]
             if p in table}
    iface, via = default_gateway(agent)
    assert iface == "eth0" and via and re.fullmatch(r"10\.200\.\d+\.1", via), (iface, via)
    return procs, netns_of(agent), int(via.split(".")[2])


def survivors(procs):
    table = proc_table()
    return sorted(p for p, start in procs if p in table and table[p][1] == start)


def netns_holders(inodes, started_by):
    """pids that started no later than started_by (clock ticks since boot)
    and still live in, or hold an fd on, one of these namespaces. Later ones
    are other tests' fresh namespaces that reuse a freed inode number."""
    found = set()
    for pid, (_, start) in proc_table().items():
        if start > started_by:
            continue
        refs = [netns_of(pid)]
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            fds = []
        for fd in fds:
            try:
                refs.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                pass
        if inodes.intersection(refs):
            found.add(pid)
    return found


def describe(pids):
    out = []
    for pid in sorted(pids):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                out.append(f"{pid}: " + f.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            out.append(f"{pid}: (gone)")
    return out


def named_or_host_leftovers(inodes):
    """A named namespace (`ip netns`, a bind mount under /run/netns) that is
    one of ours, and the fence's table in the host's own namespace."""
    named = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                           check=True).stdout
    out = []
    for name in (line.split()[0] for line in named.splitlines() if line.strip()):
        try:
            if f"net:[{os.stat(f'/run/netns/{name}').st_ino}]" in inodes:
                out.append(name)
        except OSError:
            pass  # deleted since the listing
    tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True,
                            check=True).stdout
    return out + [t for t in tables.splitlines() if t.split()[-1:] == ["openshell"]]


def uptime_ticks():
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")) + 1


def create_all_ready(gw, names):
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(names)) as pool:
        created = list(pool.map(lambda nm: create(gw, nm), names))
    assert [st for st, _ in created] == [201] * len(names), \
        [body for st, body in created if st != 201]

    def all_ready():
        rows = gw.request("GET", "/v1/sandboxes")[1]["sandboxes"]
        failed = [r for r in rows if r["phase"] == "Error"]
        assert not failed, failed  # fail at once, with the reason
        return len(rows) == len(names) and all(r["phase"] == "Ready" for r in rows) and rows

    rows = wait_for(all_ready, 90, step=0.5, what=f"{len(names)} sandboxes Ready")
    assert sorted(r["name"] for r in rows) == sorted(names)
    return [body["id"] for _, body in created]


def test_fifty_concurrent_creates_and_deletes_leave_nothing_behind(gw):
    names = [f"par-{i}" for i in range(N_CONCURRENT)]
    ids = create_all_ready(gw, names)
    assert len(set(ids)) == N_CONCURRENT
    listed = gw.cli("sandbox", "list", check=0).stdout.split()
    assert all(nm in listed for nm in names)  # the CLI's list shows all 50

    views = [sandbox_view(sid) for sid in ids]
    ready_at = uptime_ticks()
    procs = set().union(*(v[0] for v in views))
    inodes = {v[1] for v in views}
    subnets = {v[2] for v in views}
    assert len(inodes) == len(subnets) == N_CONCURRENT  # nothing shared
    # Each subnet's host-side veth carries the supervisor's address; kept as
    # (name, ifindex) since another test may reuse a freed name at once.
    addrs = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True,
                           check=True).stdout
    for n in subnets:
        assert re.search(rf"^\d+: osb{n}\s+inet 10\.200\.{n}\.1/24 ", addrs, re.M), n
    veths = {(f"osb{n}", link_index(f"osb{n}")) for n in subnets}
    assert all(os.path.isfile(os.path.join(run_dir(sid), "ca.pem")) for sid in ids)
    held = netns_holders(inodes, ready_at)  # positive control for the check below
    assert held and held <= {p for p, _ in procs}

    with concurrent.futures.ThreadPoolExecutor(max_workers=N_CONCURRENT) as pool:
        deleted = list(pool.map(lambda nm: gw.request("DELETE", f"/v1/sandboxes/{nm}")[0],
                                names))
    assert deleted == [202] * N_CONCURRENT
    wait_for(lambda: gw.request("GET", "/v1/sandboxes")[1]["sandboxes"] == [], 60,
             what="all deleted")
    wait_for(lambda: not survivors(procs), 10, what="every sandbox process gone")
    assert not netns_holders(inodes, ready_at), describe(netns_holders(inodes, ready_at))
    # The kernel destroys a released namespace, and the veth with it, in a
    # batched work item: give it a moment.
    wait_for(lambda: not {(name, link_index(name)) for name, _ in veths} & veths, 10,
             what="veths gone")
    assert named_or_host_leftovers(inodes) == []
    for sid in ids:
        assert not os.path.exists(gw.sandbox_dir(sid))
        assert not os.path.exists(run_dir(sid))
    # No delete failed along the way (one that raced the monitor's write of
    # the exit status used to fail with "Directory not empty" and retry).
    assert re.findall(r"sandbox par-\d+: delete: [^\"]*", gw.log_text()) == []


def test_run_dir_of_a_killed_supervisor_is_removed_when_found_dead(gw):
    sid = create(gw, "killed")[1]["id"]
    gw.wait_phase("killed", "Ready")
    assert os.path.isfile(os.path.join(run_dir(sid), "ca.pem"))  # positive control
    (pid,) = supervisors_for(sid)
    os.kill(pid, signal.SIGKILL)  # no chance to clean up after itself
    row = gw.wait_phase("killed", "Error")
    assert row["exit_code"] == 128 + signal.SIGKILL  # recorded, not "lost"
    assert "killed by signal 9" in row["message"], row
    assert not os.path.exists(run_dir(sid))  # the driver removed what it left
    assert gw.request("DELETE", "/v1/sandboxes/killed")[0] == 202
    wait_for(lambda: gw.sandbox("killed") is None, 30, what="deleted")
    assert not os.path.exists(gw.sandbox_dir(sid))


def test_run_dir_of_a_supervisor_killed_during_delete_is_removed(gw):
    sid = create(gw, "wedged")[1]["id"]
    gw.wait_phase("wedged", "Ready")
    (pid,) = supervisors_for(sid)
    os.kill(pid, signal.SIGSTOP)  # deaf to the delete's SIGTERM
    assert gw.request("DELETE", "/v1/sandboxes/wedged")[0] == 202
    gw.wait_phase("wedged", "Deleting")
    assert os.path.isfile(os.path.join(run_dir(sid), "ca.pem"))
    os.kill(pid, signal.SIGKILL)  # what an operator does to a wedged supervisor
    wait_for(lambda: gw.sandbox("wedged") is None, 30, what="deleted")
    assert not supervisors_for(sid)
    assert not os.path.exists(run_dir(sid))
    assert not os.path.exists(gw.sandbox_dir(sid))
