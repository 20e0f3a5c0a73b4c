"""A foreground `sandbox create` carries the agent's own stdio, as `docker
run` does: its stdout on the CLI's stdout and its stderr on the CLI's stderr
(byte-exact, each in order, also for MiBs and binary bytes), stdin forwarded
with its EOF, `-t` a terminal (the caller's size and TERM, isatty inside,
Ctrl-C reaching the agent), the agent's exit code as the CLI's. A stdin left
open does not hold the CLI once the agent is done; a CLI that is killed
takes the agent with it; nobody else can take the agent's stdio over.
`sandbox logs` still shows both streams."""

import fcntl
import hashlib
import os
import signal
import socket
import struct
import subprocess
import termios

import pytest

from tests.lib import build
from tests.lib.cli_terminal import Terminal
from tests.lib.gateway_util import CLI, supervisors_for, wait_for
from tests.lib.http_util import read_head

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor",
                         "openshell-sandbox")


def create(gw, *argv, stdin=None, timeout=120):
    return subprocess.run([CLI, "sandbox", "create", *argv], env=gw.env, input=stdin,
                          capture_output=True, timeout=timeout)


def test_stdout_and_stderr_stay_apart_byte_exact(gw):
    # 4 MiB of random bytes through the agent's stdout (every byte value, no
    # lines), while its stderr counts up at the same time.
    data = os.urandom(4 << 20)
    r = create(gw, "--name", "split", "--", "/bin/sh", "-c",
               "seq 1 200000 >&2 & cat; wait; printf 'err-tail\\0\\377' >&2", stdin=data)
    assert r.returncode == 0, r.stderr[-2000:]
    assert hashlib.sha256(r.stdout).hexdigest() == hashlib.sha256(data).hexdigest(), \
        (len(r.stdout), len(data))
    expected = "".join(f"{i}\n" for i in range(1, 200001)).encode() + b"err-tail\0\377"
    assert r.stderr == expected, (len(r.stderr), r.stderr[:200], r.stderr[-200:])


def test_the_exit_code_and_both_streams_in_the_log(gw):
    r = create(gw, "--name", "coded", "--", "/bin/sh", "-c",
               "echo out-line; echo err-line >&2; exit 3")
    assert (r.returncode, r.stdout, r.stderr) == (3, b"out-line\n", b"err-line\n"), r
    logs = gw.cli("sandbox", "logs", "coded", check=0).stdout
    assert "out-line\n" in logs and "err-line\n" in logs, logs[-2000:]
    assert gw.sandbox("coded")["phase"] == "Failed"


def test_echo_into_cat_as_a_user_types_it(gw):
    r = subprocess.run(f"echo hi | {CLI} sandbox create -- cat", shell=True, env=gw.env,
                       capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (0, "hi\n", ""), r


def test_a_stdin_never_closed_does_not_hold_the_cli(gw):
    p = subprocess.Popen([CLI, "sandbox", "create", "--name", "open-in", "--", "/bin/sh", "-c",
                          "read line; echo got-$line; exit 6"], env=gw.env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(b"first\n")
    p.stdin.flush()
    try:
        assert p.wait(timeout=60) == 6, p.stderr.read()
        assert p.stdout.read() == b"got-first\n"
    finally:
        p.kill()
        p.stdin.close()


def test_a_child_holding_stdout_does_not_hold_the_cli(gw):
    # An agent that leaves a child behind with its stdout open: the sandbox
    # ends with its pid 1, so the output ends too and the CLI returns.
    r = create(gw, "--name", "daemon", "--", "/bin/sh", "-c",
               "sleep 655.5 & echo bye; exit 2", timeout=60)
    assert (r.returncode, r.stdout) == (2, b"bye\n"), r
    assert not [p for p in os.listdir("/proc") if p.isdigit() and
                b"655.5" in open(f"/proc/{p}/cmdline", "rb").read()]


def test_without_tty_the_agent_has_no_terminal(gw):
    r = create(gw, "--name", "notty", "--", "/bin/sh", "-c",
               "if test -t 0 || test -t 1 || test -t 2; then echo some-tty; "
               "else echo no-tty; fi")
    assert r.stdout == b"no-tty\n", r


def test_tty_gives_the_agent_this_terminal(gw):
    env = dict(gw.env, TERM="xterm-256color")
    t = Terminal(["sandbox", "create", "-t", "--name", "tty1", "--", "/bin/sh", "-c",
                  "tty; stty size; echo TERM=$TERM; "
                  "test -t 0 && test -t 1 && test -t 2 && echo all-a-tty; exit 9"], env,
                 rows=31, cols=97)
    t.read_until(b"all-a-tty")
    assert t.finish() == 9, t.out
    text = t.out.decode(errors="replace")
    assert "/dev/pts/" in text and "31 97" in text and "TERM=xterm-256color" in text, text


def test_a_resized_terminal_is_followed(gw):
    t = Terminal(["sandbox", "create", "-t", "--name", "tty3", "--", "/bin/sh", "-c",
                  "trap 'stty size; exit 4' WINCH; echo ready; "
                  "while :; do sleep 0.1; done"], gw.env, rows=31, cols=97)
    t.read_until(b"ready")
    # The caller's terminal changes size: the CLI gets SIGWINCH from its
    # kernel and passes the size on; the agent's terminal then signals it.
    fcntl.ioctl(t.master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    t.read_until(b"40 120")
    assert t.finish() == 4, t.out


def test_ctrl_c_with_tty_reaches_the_agent(gw):
    t = Terminal(["sandbox", "create", "--tty", "--name", "tty2", "--", "/bin/sh", "-c",
                  "trap 'echo got-int; exit 7' INT; echo ready; "
                  "while :; do sleep 0.2; done"], gw.env)
    t.read_until(b"ready")
    t.type(b"\x03")
    t.read_until(b"got-int")
    assert t.finish() == 7, t.out
    # The agent ended itself: its sandbox was not stopped from outside.
    sb = gw.wait_phase("tty2", "Failed")
    assert sb["exit_code"] == 7, sb


def test_a_killed_cli_takes_the_agent_with_it(gw):
    p = subprocess.Popen([CLI, "sandbox", "create", "--name", "orphan", "--", "/bin/sh", "-c",
                          "while :; do echo tick; sleep 0.1; done"], env=gw.env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"tick\n"
    sid = gw.sandbox("orphan")["id"]
    assert supervisors_for(sid)  # positive control: it runs
    p.kill()
    p.wait()
    sb = gw.wait_phase("orphan", "Failed", "Error", timeout=30)
    assert sb["phase"] == "Failed" and sb["exit_code"] == 137, sb
    wait_for(lambda: not supervisors_for(sid), 20, what="the supervisor and its relay gone")
    assert "the foreground client is gone: stopping the agent" in \
        gw.cli("sandbox", "logs", "orphan", check=0).stdout


def test_a_killed_cli_with_rm_leaves_nothing(gw):
    p = subprocess.Popen([CLI, "sandbox", "create", "--rm", "--name", "gone", "--", "/bin/sh",
                          "-c", "while :; do echo tick; sleep 0.1; done"], env=gw.env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"tick\n"
    sid = gw.sandbox("gone")["id"]
    p.kill()
    p.wait()
    # The CLI cannot delete it any more: the gateway does, once the agent ended.
    wait_for(lambda: gw.sandbox("gone") is None, 30, what="the sandbox deleted")
    wait_for(lambda: not supervisors_for(sid), 20, what="its supervisor gone")
    assert not os.path.exists(gw.sandbox_dir(sid))


def attach_raw(gw, name, token=None):
    """POST /v1/sandboxes/NAME/attach by hand: (status, frames)."""
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
    s.sendall((f"POST /v1/sandboxes/{name}/attach HTTP/1.1\r\nHost: x\r\n"
               f"Authorization: Bearer {token or gw.token}\r\nUpgrade: openshell-exec\r\n"
               "Connection: Upgrade\r\nContent-Length: 0\r\n\r\n").encode())
    status, head, rest = read_head(s)
    frames = []
    while status == 101:
        while len(rest) >= 5 and len(rest) >= 5 + struct.unpack(">I", rest[1:5])[0]:
            n = struct.unpack(">I", rest[1:5])[0]
            frames.append((chr(rest[0]), rest[5:5 + n]))
            rest = rest[5 + n:]
        if frames and frames[-1][0] in "xE":
            break
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    s.close()
    return status, frames


def test_nobody_else_can_take_the_agents_stdio(gw):
    p = subprocess.Popen([CLI, "sandbox", "create", "--name", "mine", "--", "cat"],
                         env=gw.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        p.stdin.write(b"one\n")
        p.stdin.flush()
        assert p.stdout.readline() == b"one\n"
        # A second client (the admin token, the one route there is) is told
        # no and gets none of the agent's output.
        status, frames = attach_raw(gw, "mine")
        assert status == 101, status
        assert frames and frames[-1][0] == "E" and b"already attached" in frames[-1][1], frames
        assert not [f for f in frames if f[0] in "oe"], frames
        # The sandbox's own token (what its supervisor holds) may not attach at all.
        with open(os.path.join(gw.sandbox_dir(gw.sandbox("mine")["id"]), "token")) as f:
            status, _ = attach_raw(gw, "mine", token=f.read().strip())
        assert status == 403, status
        # The first client still has it (positive control), EOF included.
        p.stdin.write(b"two\n")
        p.stdin.close()
        assert p.stdout.read() == b"two\n"
        assert p.wait(timeout=60) == 0
    finally:
        p.kill()


def test_a_detached_agent_cannot_be_attached(gw):
    gw.cli("sandbox", "create", "--detach", "--name", "bg", "--", "sleep", "300", check=0)
    status, frames = attach_raw(gw, "bg")
    assert status == 101, status
    assert frames == [("E", frames[0][1])] and b"runs detached" in frames[0][1], frames
    # Its output still goes to its log, and it keeps running.
    assert gw.sandbox("bg")["phase"] == "Ready"


@pytest.mark.parametrize("flags", [["--detach", "-t"], ["-d", "--tty"]])
def test_tty_with_detach_is_a_usage_error(gw, flags):
    r = gw.cli("sandbox", "create", *flags, "--", "sleep", "1")
    assert r.returncode == 2 and "--tty gives the agent this terminal" in r.stderr, r
    assert gw.request("GET", "/v1/sandboxes")[1]["sandboxes"] == []


def test_the_api_checks_attach(gw):
    up = {"Upgrade": "openshell-exec", "Connection": "Upgrade"}
    bad = [({"tty": False, "rows": 3}, "rows, cols and term only with"),
           ({"tty": True, "term": "x;rm"}, "spec.attach.term"),
           ({"tty": "yes"}, "spec.attach"),
           ({"remove": 1}, "remove"),
           ({"size": 1}, "size")]
    for attach, said in bad:
        st, b = gw.request("POST", "/v1/sandboxes", {"command": ["true"], "attach": attach})
        assert st == 400 and said in b["message"], (attach, b)
    gw.cli("sandbox", "create", "--detach", "--name", "bg2", "--", "sleep", "300", check=0)
    st, b = gw.request("POST", "/v1/sandboxes/bg2/attach", {})
    assert st == 400 and b["error"] == "upgrade_required", b
    st, b = gw.request("POST", "/v1/sandboxes/bg2/attach", {"command": ["sh"]}, headers=up)
    assert st == 400 and b["error"] == "unknown_field", b
    gw.cli("sandbox", "stop", "bg2", check=0)
    st, b = gw.request("POST", "/v1/sandboxes/bg2/attach", {}, headers=up)
    assert st == 409 and b["error"] == "not_ready", b
    # Ctrl-C without a terminal still stops the sandbox (the signal is the CLI's).
    p = subprocess.Popen([CLI, "sandbox", "create", "--name", "fg", "--", "/bin/sh", "-c",
                          "echo started; exec sleep 300"], env=gw.env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"started\n"
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=60) == 130
    assert gw.sandbox("fg")["phase"] == "Stopped"


def test_a_restart_runs_the_agent_detached(gw):
    r = create(gw, "--name", "again", "--", "/bin/sh", "-c", "echo run-$$; sleep 0.5")
    assert r.returncode == 0 and r.stdout.startswith(b"run-"), r
    gw.cli("sandbox", "start", "again", check=0)
    # No client waits for a restart: it runs on its log and ends by itself,
    # well before the 30 s an attached agent would wait for its client.
    gw.wait_phase("again", "Succeeded", timeout=20)
    logs = gw.cli("sandbox", "logs", "again", check=0).stdout
    assert logs.count("run-") == 2, logs[-2000:]
    assert "no foreground client attached" not in logs
