"""`sandbox exec` right after a gateway restart, as a user meets it: the
running sandbox's supervisor has not redialled yet, so the gateway says
not_ready; the CLI waits for the session (with a progress line) instead of
failing at once, also when exec itself started the gateway. A sandbox that
was Ready and lost its session says so. The supervisor is held with SIGSTOP
so that "not redialled yet" lasts as long as the test needs, then released."""

import os
import signal
import subprocess

import pytest

from tests.lib import build
from tests.lib.gateway_util import CLI, supervisors_for, wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor",
                         "openshell-sandbox")

WAITING = "waiting for sandbox box's supervisor session"


def running_box(gw):
    gw.cli("sandbox", "create", "--name", "box", "--detach", "--", "sleep", "600", check=0)
    sid = gw.sandbox("box")["id"]
    pids = supervisors_for(sid)
    assert pids, "no supervisor process for the sandbox"
    return pids


def freeze(pids, sig):
    for p in pids:
        os.kill(p, sig)


def start_exec(gw):
    return subprocess.Popen([CLI, "sandbox", "exec", "box", "--", "echo", "from-exec"],
                            env=gw.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def read_stderr_until(p, text):
    seen = ""
    while text not in seen:
        line = p.stderr.readline()
        assert line, f"exec ended before saying {text!r}: {seen!r}"
        seen += line
    return seen


@pytest.fixture
def frozen():
    held = []
    yield held
    freeze(held, signal.SIGCONT)  # never leave a stopped supervisor behind


def test_exec_waits_for_the_session_after_a_gateway_restart(gw, frozen):
    pids = running_box(gw)
    gw.stop()
    frozen.extend(pids)
    freeze(pids, signal.SIGSTOP)
    gw.start()
    p = start_exec(gw)
    read_stderr_until(p, WAITING)
    # The sandbox names what happened, not a bare Provisioning.
    row = gw.wait_phase("box", "Provisioning", timeout=20)
    assert row["session"] == "lost" and "session lost" in row["message"], row
    listing = gw.cli("sandbox", "list", check=0).stdout
    assert "Provisioning (session lost)" in listing, listing
    assert p.poll() is None  # still waiting, not failed
    freeze(pids, signal.SIGCONT)
    out, err = p.communicate(timeout=90)
    assert p.returncode == 0, err
    assert out == "from-exec\n", out
    row = gw.wait_phase("box", "Ready", timeout=20)
    assert row.get("session") in (None, "live"), row


def test_exec_that_started_the_gateway_waits_too(gw, frozen):
    pids = running_box(gw)
    gw.stop()
    frozen.extend(pids)
    freeze(pids, signal.SIGSTOP)
    p = start_exec(gw)  # no gateway runs: this exec starts one
    try:
        seen = read_stderr_until(p, WAITING)
        assert "starting a local one" in seen, seen
        freeze(pids, signal.SIGCONT)
        out, err = p.communicate(timeout=90)
        assert p.returncode == 0, seen + err
        assert out == "from-exec\n", out
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        gw.cli("gateway", "stop")


def test_exec_into_a_stopped_sandbox_fails_at_once(gw):
    running_box(gw)
    gw.cli("sandbox", "stop", "box", check=0)
    gw.wait_phase("box", "Stopped")
    r = gw.cli("sandbox", "exec", "box", "--", "echo", "x", timeout=30)
    assert r.returncode == 1 and "sandbox box is Stopped" in r.stderr, r.stderr
    assert WAITING not in r.stderr
    # Positive control: started again, exec works (waiting if it must).
    gw.cli("sandbox", "start", "box", check=0)
    r = gw.cli("sandbox", "exec", "box", "--", "echo", "back")
    assert r.returncode == 0 and r.stdout == "back\n", r.stderr


def test_exec_into_no_such_sandbox_does_not_wait(gw):
    r = gw.cli("sandbox", "exec", "nosuch", "--", "true", timeout=30)
    assert r.returncode == 1 and "nosuch" in r.stderr and WAITING not in r.stderr, r.stderr
