"""Foreground `sandbox create` as a user runs it: the agent's output on
stdout and nothing of the supervisor's unless asked (-v, on stderr) or the
sandbox failed or they are warnings (then on stderr); Ctrl-C stops the sandbox
(exit 130) instead of leaving it running; --rm deletes it when the agent
ends; --rm with --detach is refused."""

import signal
import subprocess

from tests.lib import build
from tests.lib.gateway_util import CLI, wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor",
                         "openshell-sandbox")

SUPERVISOR_RECORD = '"component":"openshell-supervisor"'


def test_only_the_agents_output_by_default(gw):
    r = gw.cli("sandbox", "create", "--name", "quiet", "--", "/bin/sh", "-c",
               "echo line-one; printf 'no-newline'")
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip("\n") == "line-one\nno-newline", r.stdout
    assert SUPERVISOR_RECORD not in r.stderr and r.stderr == "", r.stderr
    # The messages were there to hide: logs shows them (positive control).
    assert SUPERVISOR_RECORD in gw.cli("sandbox", "logs", "quiet", check=0).stdout


def test_verbose_shows_the_supervisor_on_stderr(gw):
    r = gw.cli("sandbox", "create", "-v", "--name", "loud", "--", "/bin/echo", "agent-line")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "agent-line\n"
    assert SUPERVISOR_RECORD in r.stderr and "running (backend inpod" in r.stderr


def test_a_failed_sandbox_shows_why_on_stderr(gw):
    r = gw.cli("sandbox", "create", "--name", "broken", "--", "/nonexistent-program")
    assert r.returncode == 1
    assert r.stdout == "", r.stdout
    assert "execve /nonexistent-program: No such file or directory" in r.stderr, r.stderr
    assert "openshell: sandbox broken:" in r.stderr


def test_ctrl_c_stops_the_sandbox(gw):
    p = subprocess.Popen([CLI, "sandbox", "create", "--name", "fg", "--", "/bin/sh", "-c",
                          "echo started; exec sleep 300"], env=gw.env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "started\n"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    assert "stopping the sandbox" in err
    assert gw.sandbox("fg")["phase"] == "Stopped"


def test_detach_leaves_it_running(gw):
    r = gw.cli("sandbox", "create", "--name", "bg", "--detach", "--", "sleep", "300")
    assert r.returncode == 0
    assert gw.sandbox("bg")["phase"] == "Ready"


def test_rm_deletes_the_sandbox_when_the_agent_ends(gw):
    r = gw.cli("sandbox", "create", "--rm", "--name", "gone", "--", "/bin/sh", "-c",
               "echo bye; exit 4")
    assert r.returncode == 4 and r.stdout == "bye\n", (r.stdout, r.stderr)
    wait_for(lambda: gw.sandbox("gone") is None, 30, what="deleted")
    # Without --rm it stays (positive control).
    gw.cli("sandbox", "create", "--name", "kept", "--", "/bin/true", check=0)
    assert gw.sandbox("kept")["phase"] == "Succeeded"


def test_rm_with_detach_is_a_usage_error(gw):
    r = gw.cli("sandbox", "create", "--rm", "--detach", "--", "sleep", "1")
    assert r.returncode == 2 and "--rm deletes the sandbox when its agent ends" in r.stderr
    assert gw.request("GET", "/v1/sandboxes")[1]["sandboxes"] == []

