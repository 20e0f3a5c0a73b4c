"""`openshell sandbox exec` / `connect` end to end: the CLI, the gateway's
upgraded relay, the supervisor's exec relay and a launcher that joins the
running sandbox. Output streams stay apart, exit codes come back, stdin and
terminals work, the command is confined like the agent (same namespaces,
user, Landlock, egress fence, proxy identity), it dies with its client or its
sandbox, and the API refuses what it must."""

import json
import os
import pty
import select
import signal
import subprocess
import time

import pytest

from tests.lib import build
from tests.lib.gateway_util import CLI, Gateway, wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

WORKSPACE_POLICY = """version: 1
filesystem_policy:
  include_workdir: true
  read_only: [/usr, /lib, /lib64, /bin, /etc, /proc, /dev/urandom]
  read_write: [/tmp, /dev/null]
"""


def start_gateway(extra_env=None):
    g = Gateway(extra_env=extra_env).start()
    pol = os.path.join(g.state_dir, "ws.yaml")
    with open(pol, "w") as f:
        f.write(WORKSPACE_POLICY)
    r = g.cli("sandbox", "create", "--name", "box", "--policy", pol, "--detach", "--",
              "/bin/sh", "-c", "echo from-agent > /sandbox/agent.txt; exec sleep 600")
    assert r.returncode == 0, (r.stdout, r.stderr)
    return g


@pytest.fixture(scope="module")
def gw():
    g = start_gateway()
    yield g
    g.cleanup()


@pytest.fixture(scope="module")
def gw_cgroup():
    """With a process limit the sandbox has a cgroup, and the proxy looks for
    a socket's holders among its members only: an exec'd command must be
    one of them (its launcher joins the cgroup first)."""
    g = start_gateway({"OPENSHELL_DRIVERS_LOCAL_MAX_PROCESSES": "256"})
    yield g
    g.cleanup()


def exec_(gw, *cmd, tty=False, stdin=None, timeout=60):
    args = ["sandbox", "exec"] + (["--tty"] if tty else []) + ["box", "--", *cmd]
    return subprocess.run([CLI, *args], env=gw.env, input=stdin, capture_output=True,
                          timeout=timeout)


def test_streams_stay_apart_and_the_exit_code_comes_back(gw):
    r = exec_(gw, "/bin/sh", "-c", "echo out; echo err >&2; exit 3")
    assert (r.returncode, r.stdout, r.stderr) == (3, b"out\n", b"err\n")
    r = exec_(gw, "/bin/true")
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    # A signal death is 128+N, like a shell reports it.
    r = exec_(gw, "/bin/sh", "-c", "kill -TERM $$")
    assert r.returncode == 128 + signal.SIGTERM, r
    # A missing program is the launcher's 127, with its reason on stderr.
    r = exec_(gw, "/no/such/program")
    assert r.returncode == 127 and b"/no/such/program" in r.stderr, r


def test_stdin_reaches_the_command_whole(gw):
    r = exec_(gw, "/bin/cat", stdin=b"hello\n")
    assert (r.returncode, r.stdout) == (0, b"hello\n"), r
    blob = os.urandom(3 << 20)  # larger than any frame, pipe or relay buffer
    r = exec_(gw, "/bin/sh", "-c", "sha256sum | cut -d' ' -f1", stdin=blob)
    import hashlib
    assert r.returncode == 0 and r.stdout.decode().strip() == hashlib.sha256(blob).hexdigest()
    big = exec_(gw, "/bin/sh", "-c", "head -c 5000000 /dev/urandom | wc -c")
    assert big.stdout.strip() == b"5000000", big


def test_a_command_that_echoes_a_large_stdin_does_not_stall(gw):
    """Both directions full at once: the gateway's relay must keep reading a
    side while it owes that side bytes, or `cat` of a few MiB stalls for
    ever (each end blocked writing to the other)."""
    blob = os.urandom(8 << 20)
    r = exec_(gw, "/bin/cat", stdin=blob)
    assert r.returncode == 0 and r.stdout == blob, (r.returncode, len(r.stdout))


def test_the_command_runs_inside_the_agents_sandbox(gw):
    r = exec_(gw, "/bin/sh", "-c",
              "pwd; id -u; cat agent.txt; ls /proc | grep -c '^[0-9]'; "
              "cat /proc/2/cmdline | tr '\\0' ' '; echo; "
              "echo x > /etc/openshell-exec-escape 2>/dev/null && echo WROTE || echo refused")
    assert r.returncode == 0, r
    lines = r.stdout.decode().splitlines()
    assert lines[0] == "/sandbox" and lines[1] == "65534" and lines[2] == "from-agent", lines
    assert int(lines[3]) < 10, lines  # the sandbox's pids only
    assert lines[4].strip() == "sleep 600", lines  # pid 2 is the agent itself
    assert lines[5] == "refused" and not os.path.exists("/etc/openshell-exec-escape")
    # Same network namespace as the agent: only the veth and lo, and the fence
    # (8080: 80 and 443 are the transparent path's, docs/network.md).
    r = exec_(gw, "/usr/bin/python3", "-c",
              "import socket\n"
              "try:\n"
              "    socket.create_connection(('192.0.2.10', 8080), timeout=3); print('CONNECTED')\n"
              "except OSError as e:\n"
              "    print('refused', e.errno)\n")
    assert r.returncode == 0 and r.stdout.startswith(b"refused"), r


@pytest.mark.parametrize("which", ["gw", "gw_cgroup"])
def test_the_proxy_knows_the_command_as_a_sandbox_caller(request, which):
    """The exec relay is an identity root: the proxy resolves the command's
    binary instead of rejecting it as outside the sandbox."""
    gw = request.getfixturevalue(which)
    r = exec_(gw, "/usr/bin/python3", "-c",
              "import os, socket\n"
              "u = os.environ['HTTPS_PROXY'].split('//')[1]\n"
              "h, p = u.split(':')\n"
              "s = socket.create_connection((h, int(p)), timeout=5)\n"
              "s.sendall(b'CONNECT denied-by-policy.test:443 HTTP/1.1\\r\\n"
              "Host: denied-by-policy.test:443\\r\\n\\r\\n')\n"
              "print(s.recv(200).split(b'\\r\\n')[0].decode())\n")
    assert r.returncode == 0 and b" 403" in r.stdout, r
    sid = gw.sandbox("box")["id"]
    audit = os.path.join(gw.sandbox_dir(sid), "audit.log")

    def record():
        with open(audit) as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("host") == "denied-by-policy.test":
                    return rec
    rec = wait_for(record, 10, what="audit record")
    assert rec["decision"] == "deny", rec
    assert rec.get("binary", "").startswith("/usr/bin/python3"), rec
    assert "identity" not in rec["reason"], rec


def test_tty_mode_gives_a_terminal_with_the_callers_size(gw):
    pid, master = pty.fork()
    if pid == 0:
        import fcntl
        import struct
        import termios
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
        os.execve(CLI, [CLI, "sandbox", "exec", "--tty", "box", "--", "/bin/sh", "-c",
                        "tty; stty size; exit 7"], gw.env)
    out = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if not ready:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(master)
    assert os.WEXITSTATUS(status) == 7, out
    text = out.decode(errors="replace")
    assert "/dev/pts/" in text and "33 101" in text, text


def test_connect_opens_an_interactive_shell(gw):
    pid, master = pty.fork()
    if pid == 0:
        os.execve(CLI, [CLI, "sandbox", "connect", "box"], gw.env)
    os.write(master, b"echo marker-$((6*7)); exit 5\n")
    out = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and b"marker-42" not in out:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                out += os.read(master, 4096)
            except OSError:
                break
    _, status = os.waitpid(pid, 0)
    os.close(master)
    assert b"marker-42" in out and os.WEXITSTATUS(status) == 5, out


def processes_with(arg):
    """pids of `sleep ARG` processes (not the CLI that asked for them)."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                if argv[0].endswith(b"sleep") and arg.encode() in argv:
                    found.append(int(d))
            except OSError:
                pass
    return found


def test_the_command_dies_when_its_client_leaves(gw):
    p = subprocess.Popen([CLI, "sandbox", "exec", "box", "--", "/bin/sleep", "611.5"],
                         env=gw.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: processes_with("611.5"), 15, what="the exec'd sleep")
    p.kill()
    p.wait()
    wait_for(lambda: not processes_with("611.5"), 15, what="the exec'd sleep to die")


def test_the_api_refuses_what_it_must(gw):
    sid = gw.sandbox("box")["id"]
    body = {"command": ["/bin/true"]}
    # Not upgraded: a clear 400 that says how.
    st, b = gw.request("POST", "/v1/sandboxes/box/exec", body)
    assert st == 400 and b["error"] == "upgrade_required", b
    up = {"Upgrade": "openshell-exec", "Connection": "Upgrade"}
    st, b = gw.request("POST", "/v1/sandboxes/box/exec", {"command": []}, headers=up)
    assert st == 400 and "command" in b["message"], b
    st, b = gw.request("POST", "/v1/sandboxes/box/exec", {"command": ["x"], "shell": 1},
                       headers=up)
    assert st == 400 and b["error"] == "unknown_field", b
    st, b = gw.request("POST", "/v1/sandboxes/nope/exec", body, headers=up)
    assert st == 404, b
    st, b = gw.request("POST", "/v1/sandboxes/box/exec", body, token=None, headers=up)
    assert st == 401, b
    # A sandbox token cannot exec (admin route), and cannot attach to an exec
    # that is not waiting for its own sandbox.
    token_file = os.path.join(gw.sandbox_dir(sid), "token")
    with open(token_file) as f:
        tok = f.read().strip()
    st, b = gw.request("POST", "/v1/sandboxes/box/exec", body, token=tok, headers=up)
    assert st == 403, b
    st, b = gw.request("POST", f"/v1/supervisor/sandboxes/{sid}/exec/{'ab' * 16}", token=tok,
                       headers=up, raw=b"")
    assert st == 404, b
    st, b = gw.request("POST", f"/v1/supervisor/sandboxes/other/exec/{'ab' * 16}", token=tok,
                       headers=up, raw=b"")
    assert st == 403, b
    r = gw.cli("sandbox", "exec", "nope", "--", "/bin/true")
    assert r.returncode == 1 and "nope" in r.stderr, r
    r = gw.cli("sandbox", "exec", "box")
    assert r.returncode == 2 and "usage" in r.stderr, r


def test_exec_needs_a_ready_sandbox_and_dies_with_it(gw):
    r = gw.cli("sandbox", "create", "--name", "brief", "--detach", "--", "sleep", "600")
    assert r.returncode == 0, r
    p = subprocess.Popen([CLI, "sandbox", "exec", "brief", "--", "/bin/sleep", "622.5"],
                         env=gw.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: processes_with("622.5"), 15, what="the exec'd sleep")
    gw.cli("sandbox", "stop", "brief", check=0)
    p.wait(timeout=20)
    assert p.returncode != 0
    assert not processes_with("622.5")
    r = gw.cli("sandbox", "exec", "brief", "--", "/bin/true")
    assert r.returncode == 1 and "Stopped" in r.stderr, r
    gw.cli("sandbox", "delete", "brief", check=0)


def test_a_running_exec_holds_none_of_the_supervisors_descriptors(gw):
    """The relay is forked from the supervisor: it must shed the proxy's
    sockets, the audit log, the session and the event loop, keeping only
    its own connection to the gateway and the command's stdio."""
    from tests.lib.gateway_util import supervisors_for
    holder = subprocess.Popen([CLI, "sandbox", "exec", "box", "--", "/bin/sleep", "633.5"],
                              env=gw.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: processes_with("633.5"), 15, what="the holding exec")
        # The relay shares the supervisor's command line (a fork, no exec):
        # it is the one whose parent is the other.
        procs = supervisors_for(gw.sandbox("box")["id"])

        def ppid(pid):
            with open(f"/proc/{pid}/stat") as f:
                return int(f.read().rsplit(")", 1)[1].split()[1])
        relays = [p for p in procs if ppid(p) in procs]
        assert len(procs) == 2 and len(relays) == 1, procs
        fds = {n: os.readlink(f"/proc/{relays[0]}/fd/{n}")
               for n in os.listdir(f"/proc/{relays[0]}/fd")}
        sockets = [t for t in fds.values() if t.startswith("socket:")]
        assert len(sockets) == 1, fds  # the gateway connection, nothing of the supervisor's
        assert not any("audit" in t or "eventpoll" in t or "signalfd" in t
                       for t in fds.values()), fds
    finally:
        holder.kill()
        holder.wait()


def test_more_execs_than_relay_slots_are_refused_and_the_supervisor_lives(gw):
    # A client that opens exec after exec until the supervisor's relay table
    # is full: the one past it is told why (125), not written past the table.
    ps = [subprocess.Popen([CLI, "sandbox", "exec", "box", "--", "/bin/sleep", "644.5"],
                           env=gw.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL) for _ in range(32)]
    try:
        wait_for(lambda: len(processes_with("644.5")) == 32, 90, what="32 exec'd sleeps")
        for _ in range(3):
            r = gw.cli("sandbox", "exec", "box", "--", "/bin/true")
            assert r.returncode == 125 and "too many exec sessions" in r.stderr, r
    finally:
        for p in ps:
            p.kill()
            p.wait()
    wait_for(lambda: not processes_with("644.5"), 30, what="the sleeps gone with their clients")
    # The supervisor is whole: the next exec runs (positive control).
    wait_for(lambda: gw.cli("sandbox", "exec", "box", "--", "/bin/echo", "alive").stdout ==
             "alive\n", 30, what="an exec after the flood")
    assert gw.sandbox("box")["phase"] == "Ready"
