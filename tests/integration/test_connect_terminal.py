"""`sandbox connect` / `exec -t` as a terminal user meets them: the shell
gets the caller's TERM; when the gateway goes away mid-session the message
starts on a line of its own (the terminal was raw: a bare newline would not
return the cursor); a sandbox deleted or stopped under a session says so
instead of "connection lost". The API refuses a TERM it would not pass on."""

import os
import signal
import subprocess

import pytest

from tests.lib import build
from tests.lib.cli_terminal import Terminal
from tests.lib.gateway_util import CLI, wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor",
                         "openshell-sandbox")


def sleeping(arg):
    """Whether a `sleep ARG` runs (the exec'd command, not the CLI asking for it)."""
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"sleep") and arg.encode() in argv:
            return True
    return False


@pytest.fixture
def box(gw):
    r = gw.cli("sandbox", "create", "--name", "box", "--detach", "--", "sleep", "600")
    assert r.returncode == 0, (r.stdout, r.stderr)
    return gw


def test_connect_passes_the_callers_term(box):
    for term in ("xterm-256color", "vt100"):  # whatever the caller has, not a constant
        t = Terminal(["sandbox", "connect", "box"], dict(box.env, TERM=term))
        t.type("echo term-is-$TERM.; exit 3\n")
        t.read_until(f"term-is-{term}.".encode())
        assert t.finish() == 3, t.out
    # Without a terminal nothing is passed: the agent's environment stands.
    r = box.cli("sandbox", "exec", "box", "--", "/bin/sh", "-c", 'echo "term-is-$TERM."',
                env={"TERM": "xterm-256color"})
    assert r.returncode == 0 and "term-is-xterm-256color." not in r.stdout, r.stdout


def test_the_api_refuses_a_term_it_would_not_pass_on(box):
    up = {"Upgrade": "openshell-exec", "Connection": "Upgrade"}
    st, b = box.request("POST", "/v1/sandboxes/box/exec",
                        {"command": ["/bin/true"], "tty": True, "term": "xterm;rm -rf /"},
                        headers=up)
    assert st == 400 and b["message"].startswith("term: expected a terminal type"), b
    st, b = box.request("POST", "/v1/sandboxes/box/exec",
                        {"command": ["/bin/true"], "term": "xterm"}, headers=up)
    assert st == 400 and "term: only with" in b["message"], b
    st, b = box.request("POST", "/v1/sandboxes/box/exec",
                        {"command": ["/bin/true"], "tty": True, "term": "x" * 65},
                        headers=up)
    assert st == 400 and "1..64" in b["message"], b
    # A caller whose TERM the gateway would refuse still connects (TERM left out).
    t = Terminal(["sandbox", "connect", "box"], dict(box.env, TERM="bad term"))
    t.type("echo connected-$((2+3)); exit 0\n")
    t.read_until(b"connected-5")
    assert t.finish() == 0, t.out


def test_losing_the_gateway_says_so_on_a_fresh_line(box):
    t = Terminal(["sandbox", "connect", "box"], box.env)
    # An unfinished last line: the shell prints without a newline and waits.
    t.type("printf 'part%s' ial-line; sleep 600\n")
    t.read_until(b"partial-line")
    box.stop(signal.SIGKILL)
    code = t.finish()
    assert code == 1, t.out
    tail = t.out[t.out.rindex(b"partial-line"):]
    assert tail.startswith(b"partial-line\r\nopenshell: lost the gateway at "), tail


@pytest.mark.parametrize("action,said", [("delete", "deleted"), ("stop", "stopped")])
def test_a_sandbox_deleted_or_stopped_under_a_session_says_so(box, action, said):
    p = subprocess.Popen([CLI, "sandbox", "exec", "box", "--", "/bin/sleep", "633.5"],
                         env=box.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    wait_for(lambda: sleeping("633.5"), 15, what="the exec'd sleep")
    box.cli("sandbox", action, "box", check=0)
    out, err = p.communicate(timeout=60)
    # The command was killed with its sandbox: its status, and why.
    assert p.returncode == 137, err
    assert f"sandbox box was {said} while this session ran" in err, err


def test_a_command_killed_in_a_running_sandbox_gets_no_such_message(box):
    # Control: a signal death with the sandbox still running is the status alone.
    r = box.cli("sandbox", "exec", "box", "--", "/bin/sh", "-c", "kill -9 $$")
    assert r.returncode == 137 and r.stderr == "", r.stderr
