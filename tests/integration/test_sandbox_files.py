"""`openshell sandbox upload` / `download` / `port-forward` end to end: the
real CLI, gateway, supervisor relay and a launcher joined to the running
sandbox (docs/files.md). Files and trees go both ways with their modes,
streamed; paths outside the workspace, `..`, links the agent planted and a
link swapped in during a transfer are refused, each beside a positive
control; uploads are written as the agent's uid and cannot go where the
agent could not write; a forwarded port reaches a server the agent runs on
its loopback, while the fence still refuses everything inbound."""

import hashlib
import os
import socket
import stat
import subprocess
import threading
import time

import pytest

from tests.lib import build
from tests.lib.gateway_util import CLI, Gateway, free_port, supervisors_for, wait_for
from tests.lib.sanitizer_util import skip_if_sanitized

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

POLICY = """version: 1
filesystem_policy:
  include_workdir: true
  read_only: [/usr, /lib, /lib64, /bin, /etc, /proc, /dev/urandom]
  read_write: [/tmp, /dev/null]
"""

# The agent: a loopback echo server on 7000 (for port-forward), a directory
# link and a file link pointing outside the workspace, a read-only dir.
AGENT = r"""
mkdir -p /tmp/outside /sandbox/ro && chmod 0555 /sandbox/ro
ln -s /tmp/outside /sandbox/dirlink
ln -s /tmp/outside/target /sandbox/filelink
echo secret > /tmp/outside/target
exec /usr/bin/python3 -c '
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 7000)); s.listen(16)
def serve(c):
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d.upper())
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'
"""


@pytest.fixture(scope="module")
def gw():
    g = Gateway().start()
    pol = os.path.join(g.state_dir, "ws.yaml")
    with open(pol, "w") as f:
        f.write(POLICY)
    r = g.cli("sandbox", "create", "--name", "box", "--policy", pol, "--detach", "--",
              "/bin/sh", "-c", AGENT)
    assert r.returncode == 0, (r.stdout, r.stderr)
    # The agent is up once its server answers (through exec).
    wait_for(lambda: sh(g, "test -L /sandbox/filelink && echo ok").stdout == b"ok\n",
             timeout=30, what="the agent's set-up")
    yield g
    g.cleanup()


def run(gw, *args, timeout=120, **kw):
    return subprocess.run([CLI, *args], env=gw.env, capture_output=True, timeout=timeout, **kw)


def sh(gw, script):
    return run(gw, "sandbox", "exec", "box", "--", "/bin/sh", "-c", script)


def upload(gw, *args, timeout=120):
    return run(gw, "sandbox", "upload", "box", *args, timeout=timeout)


def download(gw, *args, timeout=120):
    return run(gw, "sandbox", "download", "box", *args, timeout=timeout)


def test_a_file_goes_in_and_out_with_its_mode(gw, tmp_path):
    src = tmp_path / "tool.sh"
    src.write_bytes(b"#!/bin/sh\necho hi\n")
    src.chmod(0o751)
    r = upload(gw, str(src))
    assert r.returncode == 0, r
    assert b"uploaded 1 file (18 bytes) to box:/sandbox/tool.sh" in r.stdout, r
    r = sh(gw, "stat -c '%a %u' /sandbox/tool.sh; /sandbox/tool.sh")
    assert r.stdout == b"751 65534\nhi\n", r  # the agent's uid, its mode, runnable
    out = tmp_path / "back"
    out.mkdir()
    r = download(gw, "tool.sh", str(out))
    assert r.returncode == 0, r
    back = out / "tool.sh"
    assert back.read_bytes() == src.read_bytes()
    assert stat.S_IMODE(back.stat().st_mode) == 0o751
    # REMOTE names the file itself when it is not a directory; absolute
    # paths inside the workspace are the same thing.
    # A trailing slash names a directory that must exist, as with cp.
    r = upload(gw, str(src), "no-such-dir/")
    assert r.returncode != 0 and b"/sandbox/no-such-dir/: no such directory" in r.stderr, r
    r = upload(gw, str(src), "/sandbox/renamed.sh")
    assert r.returncode == 0 and sh(gw, "cat /sandbox/renamed.sh").stdout == b"#!/bin/sh\necho hi\n"
    r = download(gw, "/sandbox/renamed.sh", str(tmp_path / "local-name"))
    assert r.returncode == 0 and (tmp_path / "local-name").read_bytes() == src.read_bytes()


def test_a_tree_goes_in_and_out_whole(gw, tmp_path):
    tree = tmp_path / "proj"
    (tree / "src" / "deep").mkdir(parents=True)
    (tree / "empty").mkdir()
    (tree / "README").write_text("readme\n")
    (tree / "src" / "a.py").write_text("print(1)\n")
    (tree / "src" / "deep" / "blob").write_bytes(os.urandom(300000))
    (tree / "src" / "deep").chmod(0o750)
    (tree / "README").chmod(0o600)
    os.symlink("/etc/passwd", tree / "link")  # never followed: skipped with a warning
    r = upload(gw, str(tree), "work")  # "work" does not exist: the tree becomes it
    assert r.returncode == 0, r
    assert b"link: skipped" in r.stderr, r
    assert b"uploaded 3 files" in r.stdout, r
    r = sh(gw, "cd /sandbox/work && find . | sort && stat -c '%a' src/deep README && "
               "sha256sum src/deep/blob | cut -c1-64")
    lines = r.stdout.decode().split()
    assert lines[:7] == [".", "./README", "./empty", "./src", "./src/a.py", "./src/deep",
                         "./src/deep/blob"], lines
    assert lines[7:9] == ["750", "600"], lines
    assert lines[9] == hashlib.sha256((tree / "src/deep/blob").read_bytes()).hexdigest()
    # Into an existing directory: under its own name.
    r = upload(gw, str(tree), "work")
    assert r.returncode == 0 and sh(gw, "test -f /sandbox/work/proj/README && echo y").stdout == b"y\n"
    out = tmp_path / "out"
    out.mkdir()
    r = download(gw, "work", str(out))
    assert r.returncode == 0, r
    assert (out / "work" / "src" / "deep" / "blob").read_bytes() == \
        (tree / "src" / "deep" / "blob").read_bytes()
    assert stat.S_IMODE((out / "work" / "src" / "deep").stat().st_mode) == 0o750
    assert (out / "work" / "empty").is_dir()
    # The agent's links are skipped with a warning naming them, not followed.
    r = download(gw, ".", str(tmp_path / "whole"))
    assert r.returncode == 0, r
    assert b"/sandbox/dirlink: skipped" in r.stderr and b"/sandbox/filelink: skipped" in r.stderr
    assert not (tmp_path / "whole" / "dirlink").exists()
    assert (tmp_path / "whole" / "tool.sh").exists() or (tmp_path / "whole" / "work").is_dir()


@pytest.mark.parametrize("remote", ["/etc", "/tmp/outside", "../x", "work/../../tmp",
                                    "/sandbox/../tmp"])
def test_paths_outside_the_workspace_are_refused(gw, tmp_path, remote):
    f = tmp_path / "f"
    f.write_text("x")
    r = upload(gw, str(f), remote)
    assert r.returncode != 0, r
    assert b"outside the workspace" in r.stderr or b'".." is not allowed' in r.stderr, r
    assert remote.encode() in r.stderr, r
    r = download(gw, remote, str(tmp_path / "o"))
    assert r.returncode != 0 and remote.encode() in r.stderr, r
    assert not (tmp_path / "o").exists()
    # Positive control: the same file into the workspace works.
    assert upload(gw, str(f), "inside-ok").returncode == 0


def test_links_the_agent_planted_are_never_followed(gw, tmp_path):
    f = tmp_path / "payload"
    f.write_text("planted\n")
    # Through a directory link, onto a file link, or reading either: refused.
    for remote in ["dirlink", "dirlink/payload", "filelink"]:
        r = upload(gw, str(f), remote)
        assert r.returncode != 0 and b"symbolic link" in r.stderr, (remote, r)
        assert remote.encode() in r.stderr, r
    for remote in ["dirlink/target", "filelink"]:
        r = download(gw, remote, str(tmp_path / "got"))
        assert r.returncode != 0 and b"symbolic link" in r.stderr, (remote, r)
    assert not (tmp_path / "got").exists()
    r = sh(gw, "ls /tmp/outside; cat /tmp/outside/target")
    assert r.stdout == b"target\nsecret\n", r  # nothing landed, nothing changed
    # Positive control: the agent itself can write there (the refusal is
    # the transfer's, not a missing permission).
    assert sh(gw, "echo mine > /tmp/outside/agent-wrote && cat /tmp/outside/agent-wrote"
              ).stdout == b"mine\n"
    sh(gw, "rm /tmp/outside/agent-wrote")


def test_uploads_cannot_write_where_the_agent_cannot(gw, tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    r = upload(gw, str(f), "ro")  # 0555, owned by the agent's uid but not writable
    assert r.returncode != 0 and b"/sandbox/ro" in r.stderr, r
    assert b"Permission denied" in r.stderr, r
    # A directory the launcher's root could write but the agent cannot:
    # the workspace's parent view is not reachable at all, and /sandbox/ro
    # stays empty.
    assert sh(gw, "ls -A /sandbox/ro").stdout == b""
    # Positive control: a writable directory works.
    sh(gw, "mkdir -p /sandbox/rw")
    assert upload(gw, str(f), "rw").returncode == 0


FLIPPER = ("mkdir -p /sandbox/race; end=$(($(date +%s)+{secs})); "
           "while [ $(date +%s) -lt $end ]; do "
           "mv /sandbox/race /sandbox/race.real 2>/dev/null; ln -s /tmp/outside /sandbox/race; "
           "rm -f /sandbox/race; mv /sandbox/race.real /sandbox/race 2>/dev/null; done")


READ_ONLY_WORKSPACE = """version: 1
filesystem_policy:
  include_workdir: false
  read_only: [/usr, /lib, /lib64, /bin, /etc, /proc, /dev/urandom, /sandbox]
  read_write: [/tmp, /dev/null]
"""


def test_uploads_obey_the_agents_filesystem_policy(gw, tmp_path):
    """A policy that makes the workspace read-only for the agent makes it
    read-only for uploads too, although the directory's owner and mode
    would let the agent's uid write: the transfer runs in the agent's
    filesystem view (a read-only mount there) under its Landlock rules, not
    only as its uid. Downloads (reads) still work."""
    pol = tmp_path / "ro.yaml"
    pol.write_text(READ_ONLY_WORKSPACE)
    r = gw.cli("sandbox", "create", "--name", "robox", "--policy", str(pol), "--detach", "--",
               "/bin/sh", "-c", "exec sleep 600")
    assert r.returncode == 0, r
    try:
        gw.wait_phase("robox", "Ready", timeout=60)
        ws = gw.sandbox_dir(gw.sandbox("robox")["id"])
        ws = os.path.join(ws, "workspace")
        with open(os.path.join(ws, "present.txt"), "w") as f:
            f.write("from the host\n")
        os.chown(os.path.join(ws, "present.txt"), 65534, 65534)
        st = os.stat(ws)
        assert st.st_uid == 65534 and st.st_mode & 0o200, (st.st_uid, oct(st.st_mode))
        f = tmp_path / "f"
        f.write_text("x")
        r = run(gw, "sandbox", "upload", "robox", str(f))
        assert r.returncode != 0 and b"/sandbox/f" in r.stderr, r
        assert b"Read-only file system" in r.stderr or b"Permission denied" in r.stderr, r
        assert not os.path.exists(os.path.join(ws, "f"))
        # The agent itself is refused the same way (the rule is the policy's).
        r = run(gw, "sandbox", "exec", "robox", "--", "/bin/sh", "-c", "echo x > /sandbox/g")
        assert r.returncode != 0, r
        # Positive control: reading is allowed, so a download works.
        r = run(gw, "sandbox", "download", "robox", "present.txt", str(tmp_path / "got"))
        assert r.returncode == 0 and (tmp_path / "got").read_text() == "from the host\n", r
    finally:
        gw.cli("sandbox", "delete", "robox")


def test_a_directory_swapped_for_a_link_during_an_upload_leads_nowhere(gw, tmp_path):
    """The agent flips /sandbox/race between a directory and a link to
    /tmp/outside while many files are uploaded into it: the transfer holds
    the directory's fd and opens nothing through a link, so nothing lands
    outside (each attempt either lands inside or is refused). Positive
    control: a writer that goes by path, racing the same flipper, does land
    files outside, so the race is real."""
    tree = tmp_path / "many"
    tree.mkdir()
    for i in range(300):
        (tree / f"f{i:03d}").write_bytes(b"z" * 4096)
    flipper = subprocess.Popen(
        [CLI, "sandbox", "exec", "box", "--", "/bin/sh", "-c", FLIPPER.format(secs=20)],
        env=gw.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(8):
            r = upload(gw, str(tree), "race")
            if r.returncode != 0:
                assert b"symbolic link" in r.stderr or b"No such file" in r.stderr, r
    finally:
        flipper.kill()
        flipper.wait()
    r = sh(gw, "ls /tmp/outside")
    assert r.stdout == b"target\n", r  # nothing ever went through the link
    r = sh(gw, "(" + FLIPPER.format(secs=3) + ") & "
               "end=$(($(date +%s)+3)); i=0; while [ $(date +%s) -lt $end ]; do "
               "echo x > /sandbox/race/naive$i 2>/dev/null; i=$((i+1)); done; wait; "
               "ls /tmp/outside | grep -c naive; rm -f /tmp/outside/naive*")
    assert int(r.stdout) > 0, r


@skip_if_sanitized("ASan keeps freed memory in a quarantine and adds redzones, so RSS "
                   "measures the sanitizer; bounded in the plain build")
def test_a_large_file_streams_without_memory_growth(gw, tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(300 << 20)  # sparse: 300 MiB on read, little on disk
        f.seek(150 << 20)
        f.write(b"marker")
    sup = supervisors_for(gw.sandbox("box")["id"])[0]
    gwpid = gw.proc.pid
    peaks = {"sup": 0, "gw": 0, "relay": 0}
    done = threading.Event()

    def relays():
        try:
            with open(f"/proc/{sup}/task/{sup}/children") as c:
                return [("relay", int(p)) for p in c.read().split()]
        except OSError:
            return []

    def sample():
        while not done.is_set():
            for k, pid in [("sup", sup), ("gw", gwpid)] + relays():
                try:
                    with open(f"/proc/{pid}/status") as s:
                        for line in s:
                            if line.startswith("VmRSS:"):
                                peaks[k] = max(peaks[k], int(line.split()[1]))
                except OSError:
                    pass
            time.sleep(0.05)
    t = threading.Thread(target=sample)
    t.start()
    try:
        r = upload(gw, str(big), timeout=600)
        assert r.returncode == 0, r
        r = sh(gw, "stat -c %s /sandbox/big; tail -c +$((150*1024*1024+1)) /sandbox/big | head -c 6")
        assert r.stdout == b"%d\nmarker" % (300 << 20), r
        out = tmp_path / "big-back"
        r = download(gw, "big", str(out), timeout=600)
        assert r.returncode == 0 and out.stat().st_size == 300 << 20, r
    finally:
        done.set()
        t.join()
        sh(gw, "rm -f /sandbox/big")
    # Far below the file's size: nothing is held whole (KiB). The relay
    # (the supervisor's forked child) was seen, or the check would be empty.
    assert 0 < peaks["relay"] < 64 * 1024, peaks
    assert peaks["sup"] < 64 * 1024 and peaks["gw"] < 64 * 1024, peaks


def test_port_forward_reaches_the_agents_loopback_server(gw):
    port = free_port()
    p = subprocess.Popen([CLI, "sandbox", "port-forward", "box", f"{port}:7000"], env=gw.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: _connects(port), timeout=20, what="the local listener")
        for _ in range(3):  # several connections, one after the other and at once
            socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
            for i, s in enumerate(socks):
                s.sendall(b"hello %d" % i)
            for i, s in enumerate(socks):
                assert _recv_exactly(s, 7) == b"HELLO %d" % i
                s.close()
        # A big payload both ways, and a half-close that still gets its answer.
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        blob = os.urandom(2 << 20).hex().encode()[:3 << 20]
        threading.Thread(target=lambda: (s.sendall(blob), s.shutdown(socket.SHUT_WR)),
                         daemon=True).start()
        got = b""
        while len(got) < len(blob):
            d = s.recv(1 << 16)
            if not d:
                break
            got += d
        assert got == blob.upper()
        s.close()
        # A port nothing listens on: the connection closes, with a message.
        # (a port of its own: port + 1 may be anyone's, and was once in CI)
        port2 = free_port()
        p2 = subprocess.Popen([CLI, "sandbox", "port-forward", "box", f"{port2}:7999"],
                              env=gw.env, stderr=subprocess.PIPE)
        wait_for(lambda: p2.poll() is not None or _connects(port2), timeout=20,
                 what="the second listener")
        assert p2.poll() is None, p2.communicate()[1]
        s = socket.create_connection(("127.0.0.1", port2), timeout=10)
        assert s.recv(10) == b""
        p2.terminate()
        assert b"127.0.0.1:7999" in p2.communicate(timeout=10)[1]
    finally:
        p.send_signal(2)  # Ctrl-C stops it
        out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    assert not _connects(port)


def test_the_fence_still_refuses_inbound_to_the_agent(gw, tmp_path):
    """port-forward adds no inbound path: a server the agent binds on all
    addresses answers through the forward (positive control), and stays
    unreachable from the host on the sandbox's veth address while the
    forward runs: the fence still refuses everything inbound."""
    server = tmp_path / "server7100.py"
    server.write_text("import socket, time\n"
                      "s = socket.socket()\n"
                      "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                      "s.bind(('0.0.0.0', 7100)); s.listen()\n"
                      "while True:\n"
                      "    c, _ = s.accept(); c.sendall(b'hi7100'); c.close()\n")
    assert upload(gw, str(server)).returncode == 0
    sh(gw, "nohup /usr/bin/python3 /sandbox/server7100.py >/dev/null 2>&1 &")
    addr = sh(gw, "ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1"
              ).stdout.decode().split()
    assert addr, "the sandbox has a global IPv4 address on its veth"
    port = free_port()
    p = subprocess.Popen([CLI, "sandbox", "port-forward", "box", f"{port}:7100"], env=gw.env,
                         stderr=subprocess.PIPE)
    try:
        wait_for(lambda: _connects(port), timeout=20, what="the listener")
        # Positive control: through the forward, the server answers (once
        # it is up: it was started in the background).
        def greets():
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                return _recv_exactly(s, 6) == b"hi7100"
        wait_for(greets, timeout=20, what="the agent's server through the forward")
        for a in addr:
            with pytest.raises(OSError):
                socket.create_connection((a, 7100), timeout=3)
    finally:
        p.terminate()
        p.communicate(timeout=10)


def test_port_forward_closes_when_the_sandbox_stops(gw):
    port = free_port()
    p = subprocess.Popen([CLI, "sandbox", "port-forward", "box", f"{port}:7000"], env=gw.env,
                         stderr=subprocess.PIPE)
    wait_for(lambda: _connects(port), timeout=20, what="the listener")
    try:
        assert gw.cli("sandbox", "stop", "box").returncode == 0
        _, err = p.communicate(timeout=30)
        assert p.returncode == 1 and b"port-forward closed: sandbox box was stopped" in err, err
        assert not _connects(port)
    finally:
        if p.poll() is None:
            p.kill()
        gw.cli("sandbox", "start", "box")
        gw.wait_phase("box", "Ready", timeout=60)


def _connects(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _recv_exactly(s, n):
    got = b""
    while len(got) < n:
        d = s.recv(n - len(got))
        if not d:
            break
        got += d
    return got


@pytest.mark.parametrize("route,good", [("upload", {"path": "x"}), ("download", {"path": "x"}),
                                        ("port-forward", {"port": 7000})])
def test_the_api_refuses_what_it_must(gw, route, good):
    """Each route takes POST with the Upgrade headers, its one field checked,
    and the admin token only: a sandbox's own token (the supervisor's) is
    refused, so nothing inside a sandbox can move files or open ports."""
    path = f"/v1/sandboxes/box/{route}"
    up = {"Upgrade": "openshell-exec", "Connection": "Upgrade"}
    st, b = gw.request("POST", path, good)
    assert st == 400 and b["error"] == "upgrade_required", b
    st, b = gw.request("GET", path, headers=up)
    assert st == 405, b
    bad = {"path": ""} if "path" in good else {"port": 0}
    st, b = gw.request("POST", path, bad, headers=up)
    assert st == 400 and list(bad)[0] in b["message"], b
    st, b = gw.request("POST", path, dict(good, mode=1), headers=up)
    assert st == 400 and b["error"] == "unknown_field", b
    if "path" in good:
        st, b = gw.request("POST", path, {"path": "a" * 4097}, headers=up)
        assert st == 400 and "path" in b["message"], b
    st, b = gw.request("POST", f"/v1/sandboxes/nope/{route}", good, headers=up)
    assert st == 404, b
    st, b = gw.request("POST", path, good, token=None, headers=up)
    assert st == 401, b
    with open(os.path.join(gw.sandbox_dir(gw.sandbox("box")["id"]), "token")) as f:
        tok = f.read().strip()
    st, b = gw.request("POST", path, good, token=tok, headers=up)
    assert st == 403, b
