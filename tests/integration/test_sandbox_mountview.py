"""openshell-sandbox mount view: read_only paths are read-only mounts, so the
kernel refuses metadata changes Landlock lets a file's owner make (chmod,
utime, setxattr, chown, truncate), a read_only path inside a read_write one
stays read-only, read_write paths inside read_only ones stay writable, and
without a mount namespace a policy that nests read_only inside read_write is
refused instead of run with less than it says."""

import errno
import json
import os

import pytest

from tests.lib import build
from tests.lib import sandbox_util as su

pytestmark = build.needs("openshell-sandbox", "sandbox-probe")

META = ["chmod", "utime", "setxattr", "chown", "truncate"]


@pytest.fixture
def tree():
    """base/rw (read_write) holding ro/ (read_only) holding rw2/ (read_write)
    and base/owned-ro (read_only): every file belongs to the agent's uid, so
    only the mount can refuse what the owner may otherwise do."""
    base = su.make_workdir()
    paths = {"base": base}
    for name in ("rw", "rw/ro", "rw/ro/rw2", "owned-ro"):
        d = os.path.join(base, name)
        os.mkdir(d)
        with open(os.path.join(d, "f"), "w") as f:
            f.write("data")
        for p in (d, os.path.join(d, "f")):
            os.chown(p, su.AGENT_UID, su.AGENT_GID)
        paths[name] = d
    yield paths
    su.remove_workdir(base)


def run_probe(tree, cmd, path, new_namespaces=True):
    s = su.spec([su.PROBE, cmd, path],
                read_only=[tree["owned-ro"], tree["rw/ro"]],
                read_write=[tree["rw"], tree["rw/ro/rw2"]],
                new_namespaces=new_namespaces)
    r = su.run(s)
    assert r.rc == 0 and r.execed, r
    return su.probe_lines(r.stdout)


@pytest.mark.parametrize("call", META)
def test_owner_cannot_change_metadata_of_a_read_only_file(tree, call):
    inside = run_probe(tree, "meta", os.path.join(tree["owned-ro"], "f"))
    assert inside[call] == errno.EROFS
    # Positive control: the same calls on a read_write file of the same owner work.
    control = run_probe(tree, "meta", os.path.join(tree["rw"], "f"))
    assert control[call] == 0


def test_read_only_inside_read_write_stays_read_only(tree):
    target = os.path.join(tree["rw/ro"], "f")
    r = run_probe(tree, "open-write", target)
    assert r["open_write"] == errno.EROFS
    assert run_probe(tree, "meta", target)["chmod"] == errno.EROFS
    new = os.path.join(tree["rw/ro"], "new")
    assert run_probe(tree, "open-write", new)["open_write"] == errno.EROFS
    assert not os.path.exists(new)
    # Control: its read_write parent is writable.
    assert run_probe(tree, "open-write", os.path.join(tree["rw"], "new"))["open_write"] == 0


def test_read_write_inside_read_only_stays_writable(tree):
    new = os.path.join(tree["rw/ro/rw2"], "new")
    assert run_probe(tree, "open-write", new)["open_write"] == 0
    assert os.path.exists(new)


def test_read_only_mount_keeps_nosuid_and_nodev(tree):
    # /proc/self/mountinfo inside the sandbox names the options of the view.
    s = su.spec(["/bin/cat", "/proc/self/mountinfo"], read_only=[tree["owned-ro"]])
    r = su.run(s)
    assert r.rc == 0 and r.execed, r
    lines = [l for l in r.stdout.splitlines() if l.split()[4] == tree["owned-ro"]]
    assert lines, r.stdout
    opts = lines[-1].split()[5].split(",")
    assert "ro" in opts and "nosuid" in opts and "nodev" in opts


def test_nesting_without_a_mount_namespace_is_refused_by_name(tree):
    s = su.spec([su.PROBE, "open-read", tree["rw/ro"]],
                read_only=[tree["rw/ro"]], read_write=[tree["rw"]], new_namespaces=False)
    r = su.run(s)
    assert not r.execed and r.failure, r
    assert r.failure["step"] == "namespaces"
    assert tree["rw/ro"] in r.failure["message"] and tree["rw"] in r.failure["message"]
    # Control: the same spec with a mount namespace runs.
    s["new_namespaces"] = True
    r = su.run(s)
    assert r.rc == 0 and r.execed, r


@pytest.fixture
def listening_socket(tree):
    """A unix socket in an unlisted directory (another sandbox's workspace,
    say), connectable by anyone (0777), and one in a listed directory."""
    import socket
    socks = {}
    for name in ("elsewhere", "rw"):
        d = os.path.join(tree["base"], name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "s.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        os.chmod(path, 0o777)
        s.listen(4)
        socks[name] = (s, path)
    yield {k: v[1] for k, v in socks.items()}
    for s, _ in socks.values():
        s.close()


def test_unix_socket_outside_the_policy_cannot_be_connected(tree, listening_socket):
    r = run_probe(tree, "connect-unix", listening_socket["elsewhere"])
    assert r["connect_unix"] == errno.ENOENT
    # Control: without a mount namespace (Landlock alone) it connects, which
    # is why the view exists; and a socket in a listed directory connects.
    s = su.spec([su.PROBE, "connect-unix", listening_socket["elsewhere"]],
                read_write=[tree["rw"]], new_namespaces=False)
    r = su.run(s)
    assert r.rc == 0 and su.probe_lines(r.stdout)["connect_unix"] == 0, r
    assert run_probe(tree, "connect-unix", listening_socket["rw"])["connect_unix"] == 0


def test_unlisted_paths_are_absent_and_the_view_root_is_read_only(tree):
    r = run_probe(tree, "open-read", "/var/lib/dpkg/status")
    assert r["open_read"] == errno.ENOENT
    assert os.path.exists("/var/lib/dpkg/status")  # control: it is there outside
    assert run_probe(tree, "open-write", "/new-file")["open_write"] == errno.EROFS


def test_a_symlinked_entry_is_reachable_under_both_names(tree):
    link = os.path.join(tree["base"], "link")
    os.symlink(tree["owned-ro"], link)
    s = su.spec([su.PROBE, "open-read", os.path.join(link, "f")], read_only=[link])
    r = su.run(s)
    assert r.rc == 0 and su.probe_lines(r.stdout)["open_read"] == 0, r
    s = su.spec([su.PROBE, "open-read", os.path.join(tree["owned-ro"], "f")], read_only=[link])
    r = su.run(s)
    assert r.rc == 0 and su.probe_lines(r.stdout)["open_read"] == 0, r


def test_an_unlisted_working_directory_exists_empty(tree):
    cwd = os.path.join(tree["base"], "elsewhere-cwd")
    os.mkdir(cwd)
    with open(os.path.join(cwd, "secret"), "w") as f:
        f.write("x")
    s = su.spec([su.PROBE, "open-read", "secret"], cwd=cwd)
    r = su.run(s)
    assert r.rc == 0 and r.execed, r
    assert su.probe_lines(r.stdout)["open_read"] == errno.ENOENT


def test_a_symlink_planted_in_a_writable_tree_is_not_followed(tree):
    """An earlier run of the agent left rw/planted -> a host directory it
    may not see; a policy naming rw/planted must not bind that directory
    into the view."""
    secret_dir = os.path.join(tree["base"], "elsewhere-secret")
    os.mkdir(secret_dir)
    with open(os.path.join(secret_dir, "f"), "w") as f:
        f.write("secret")
    os.chmod(os.path.join(secret_dir, "f"), 0o644)
    planted = os.path.join(tree["rw"], "planted")
    os.symlink(secret_dir, planted)
    s = su.spec([su.PROBE, "open-read", os.path.join(planted, "f")],
                read_only=[planted], read_write=[tree["rw"]])
    r = su.run(s)
    assert not r.execed and r.failure and r.failure["step"] == "namespaces", r
    assert planted in r.failure["message"] and "symlink" in r.failure["message"]
    # Control: a real directory at the same place is bound and readable.
    os.unlink(planted)
    os.mkdir(planted)
    with open(os.path.join(planted, "f"), "w") as f:
        f.write("mine")
    os.chmod(os.path.join(planted, "f"), 0o644)
    r = su.run(s)
    assert r.rc == 0 and su.probe_lines(r.stdout)["open_read"] == 0, r


ATTEMPTS = r"""
import errno, json, os, sys
rw, f = sys.argv[1], sys.argv[2]
def err(fn, *a):
    try:
        fn(*a)
        return "OK"
    except OSError as e:
        return errno.errorcode[e.errno]
out = {"rename_parent": err(os.rename, os.path.dirname(f), os.path.dirname(f) + "2"),
       "rename_grandparent": err(os.rename, os.path.join(rw, "a"), os.path.join(rw, "a2")),
       "hardlink": err(os.link, f, os.path.join(rw, "hl")),
       "sibling_control": err(os.rename, os.path.join(rw, "other"), os.path.join(rw, "other2"))}
if out["rename_grandparent"] == "OK" or out["rename_parent"] == "OK":
    os.makedirs(os.path.dirname(f), exist_ok=True)
out["write"] = err(lambda: open(f, "w").write("agent's"))
print(json.dumps(out))
"""


def test_parents_of_a_read_only_path_inside_read_write_cannot_be_moved(tree):
    """read_only rw/a/b/cfg inside read_write rw: renaming a or b away (the
    read-only mount moves with it) and writing a new rw/a/b/cfg would put
    the agent's file under the policy's read-only name, on the host too."""
    rw = tree["rw"]
    cfg = os.path.join(rw, "a", "b", "cfg")
    os.makedirs(os.path.dirname(cfg))
    os.mkdir(os.path.join(rw, "other"))
    with open(cfg, "w") as f:
        f.write("operator's")
    for p in (os.path.join(rw, "a"), os.path.dirname(cfg), cfg, os.path.join(rw, "other")):
        os.chown(p, su.AGENT_UID, su.AGENT_GID)
    s = su.spec(["/usr/bin/python3", "-c", ATTEMPTS, rw, cfg], read_only=[cfg],
                read_write=[rw])
    r = su.run(s)
    assert r.rc == 0 and r.execed, r
    got = json.loads(r.stdout)
    assert got["rename_parent"] == "EBUSY" and got["rename_grandparent"] == "EBUSY", got
    assert got["hardlink"] == "EXDEV" and got["write"] == "EROFS", got
    with open(cfg) as f:
        assert f.read() == "operator's"
    # Control: other directories of the writable tree still move.
    assert got["sibling_control"] == "OK" and os.path.isdir(os.path.join(rw, "other2"))


SHM_ATTEMPTS = r"""
import json, os
def err(fn):
    try:
        fn()
        return "OK"
    except OSError as e:
        return __import__("errno").errorcode[e.errno]
print(json.dumps({"host_file_seen": os.path.exists("/dev/shm/" + os.environ["HOST_NAME"]),
                  "write": err(lambda: open("/dev/shm/agent-" + os.environ["HOST_NAME"],
                                            "w").write("x"))}))
"""


@pytest.fixture
def host_shm_file():
    name = f"osb-shm-{os.getpid()}"
    path = os.path.join("/dev/shm", name)
    with open(path, "w") as f:
        f.write("a host program's shared memory")
    os.chmod(path, 0o666)
    yield name
    for p in (path, os.path.join("/dev/shm", "agent-" + name)):
        if os.path.exists(p):
            os.unlink(p)


@pytest.mark.parametrize("ro,rw,writable", [((), ("/dev/shm",), True), (("/dev",), (), False)],
                         ids=["dev-shm-read-write", "dev-read-only"])
def test_dev_shm_is_the_sandboxs_own(host_shm_file, ro, rw, writable):
    """/dev/shm from the host is world-writable and shared by every process
    there: bound into the view it was a channel between sandboxes and into
    host programs' segments. The view's /dev/shm is a tmpfs of its own."""
    s = su.spec(["/usr/bin/python3", "-c", SHM_ATTEMPTS], read_only=list(ro),
                read_write=list(rw), env={"PATH": "/usr/bin:/bin", "HOST_NAME": host_shm_file})
    r = su.run(s)
    assert r.rc == 0 and r.execed, r
    got = json.loads(r.stdout)
    assert got["host_file_seen"] is False, got
    assert got["write"] == ("OK" if writable else "EROFS"), got
    # Nothing the agent wrote is on the host.
    assert not os.path.exists(os.path.join("/dev/shm", "agent-" + host_shm_file))
    assert os.path.exists(os.path.join("/dev/shm", host_shm_file))  # control: it is there
