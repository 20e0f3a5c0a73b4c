"""The `openshell` CLI end to end on the local driver: lifecycle, attach with
the agent's exit code, logs, workspace kept across stop/start and removed on
delete, policy set --wait exit codes (0 loaded, 1 failed, 124 timeout),
providers, JSON output, and auto-starting a gateway when none runs."""

import json
import os
import tempfile

import pytest

from tests.lib import build
from tests.lib.gateway_util import Gateway, remove_tree, supervisors_for, wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

POLICY_V1 = "version: 1\n"
POLICY_V2 = """version: 1
network_policies:
  local:
    endpoints:
      - { host: upstream.test, port: 8443 }
    binaries:
      - { path: /usr/bin/curl }
"""
# Changes the static part: the supervisor refuses it on a live sandbox.
POLICY_STATIC_CHANGE = """version: 1
filesystem_policy:
  read_only: [/usr, /lib, /etc]
  read_write: [/tmp]
"""


@pytest.fixture
def gw():
    g = Gateway().start()
    yield g
    g.cleanup()


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_full_lifecycle(gw):
    r = gw.cli("sandbox", "create", "--name", "life", "--detach", "--", "sleep", "300", check=0)
    assert "Ready" in r.stdout
    sid = gw.sandbox("life")["id"]
    r = gw.cli("sandbox", "list", check=0)
    assert r.stdout.splitlines()[0].split()[:2] == ["NAME", "PHASE"]
    assert any(l.split()[:2] == ["life", "Ready"] for l in r.stdout.splitlines()[1:])
    # The workspace survives stop/start ...
    marker = os.path.join(gw.sandbox_dir(sid), "workspace", "keep.txt")
    with open(marker, "w") as f:
        f.write("kept")
    r = gw.cli("sandbox", "stop", "life", check=0)
    assert "Stopped" in r.stdout
    assert not supervisors_for(sid)
    r = gw.cli("sandbox", "start", "life", check=0)
    assert "Ready" in r.stdout
    assert len(supervisors_for(sid)) == 1
    assert open(marker).read() == "kept"
    r = gw.cli("-o", "json", "sandbox", "get", "life", check=0)
    assert json.loads(r.stdout)["phase"] == "Ready"
    # ... and goes with the sandbox.
    r = gw.cli("sandbox", "delete", "life", check=0)
    assert "deleted" in r.stdout
    assert not os.path.exists(gw.sandbox_dir(sid))
    assert not supervisors_for(sid)
    r = gw.cli("sandbox", "get", "life", check=1)
    assert "no sandbox" in r.stderr


def test_create_attaches_and_returns_the_agent_exit_code(gw):
    r = gw.cli("sandbox", "create", "--name", "att", "--env", "GREETING=hi-there", "--",
               "/bin/sh", "-c", "echo agent says $GREETING; sleep 1; exit 7")
    assert r.returncode == 7, (r.stdout, r.stderr)
    assert "agent says hi-there" in r.stdout
    row = gw.sandbox("att")
    # The agent's own end, as a Pod's: Failed with its code, not Error.
    assert row["phase"] == "Failed" and row["exit_code"] == 7, row
    assert "the agent exited with code 7" in row["message"]
    # Positive control: exit 0 is 0, and Succeeded.
    r = gw.cli("sandbox", "create", "--name", "att0", "--", "/bin/true")
    assert r.returncode == 0, r.stderr
    row = gw.sandbox("att0")
    assert row["phase"] == "Succeeded" and row["exit_code"] == 0, row
    r = gw.cli("sandbox", "list", check=0)
    assert any(l.split()[:2] == ["att0", "Succeeded"] for l in r.stdout.splitlines()), r.stdout
    # A finished sandbox starts again, like a stopped one.
    r = gw.cli("sandbox", "start", "att0")
    assert r.returncode == 0, (r.stdout, r.stderr)
    gw.wait_phase("att0", "Succeeded")


def test_logs_show_agent_output(gw):
    gw.cli("sandbox", "create", "--name", "lg", "--detach", "--", "/bin/sh", "-c",
           "echo line-one; sleep 300", check=0)
    wait_for(lambda: "line-one" in gw.cli("sandbox", "logs", "lg").stdout, 10,
             what="log line")
    r = gw.cli("sandbox", "logs", "nosuch")
    assert r.returncode == 1 and "no sandbox" in r.stderr


def test_logs_audit_shows_the_supervisors_decisions(gw):
    gw.cli("sandbox", "create", "--name", "aud", "--detach", "--", "/bin/sh", "-c",
           "curl -s -o /dev/null https://denied.test/x; sleep 300", check=0)

    def denial():
        out = gw.cli("-o", "json", "sandbox", "logs", "aud", "--audit").stdout
        recs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        return [r for r in recs if r.get("host") == "denied.test" and r.get("decision") == "deny"]
    wait_for(denial, 15, what="the denial in the audit log")
    # The supervisor's own log is another stream: no decision records there.
    plain = gw.cli("sandbox", "logs", "aud").stdout
    assert '"decision":"deny"' not in plain.replace(" ", "")
    r = gw.cli("sandbox", "logs", "aud", "--audit", "--bogus")
    assert r.returncode == 2


def test_bad_input_errors_say_what_to_do(gw):
    r = gw.cli("sandbox", "create", "--name", "Bad_Name", "--detach", "--", "true")
    assert r.returncode == 1 and "DNS label" in r.stderr
    r = gw.cli("sandbox", "create", "--env", "NOEQUALS", "--", "true")
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr
    r = gw.cli("sandbox", "create", "--provider", "missing", "--detach", "--", "true")
    assert r.returncode == 1 and "openshell provider create" in r.stderr


def test_policy_set_wait_exit_codes(gw, tmp_path):
    gw.cli("sandbox", "create", "--name", "pol", "--policy", write(tmp_path, "a.yaml", POLICY_V1),
           "--detach", "--", "sleep", "300", check=0)
    # Loaded by the running supervisor (SIGHUP + audit record): 0.
    r = gw.cli("policy", "set", "pol", "--policy", write(tmp_path, "b.yaml", POLICY_V2), "--wait",
               "--timeout", "30")
    assert r.returncode == 0, r.stderr
    assert "loaded" in r.stdout
    r = gw.cli("policy", "get", "pol", check=0)
    assert "upstream.test" in r.stdout
    # Rejected by the gateway's validation: 1.
    r = gw.cli("policy", "set", "pol", "--policy", write(tmp_path, "c.yaml", "version: 9\n"),
               "--wait")
    assert r.returncode == 1 and "policy" in r.stderr
    # Valid, but refused by the supervisor (static part changed on a live sandbox): 1.
    r = gw.cli("policy", "set", "pol", "--policy",
               write(tmp_path, "d.yaml", POLICY_STATIC_CHANGE), "--wait", "--timeout", "30")
    assert r.returncode == 1 and "failed" in r.stderr, r.stderr
    # A stopped sandbox cannot confirm in time: 124.
    gw.cli("sandbox", "stop", "pol", check=0)
    r = gw.cli("policy", "set", "pol", "--policy", write(tmp_path, "e.yaml", POLICY_V2), "--wait",
               "--timeout", "1")
    assert r.returncode == 124, (r.stdout, r.stderr)
    r = gw.cli("-o", "json", "policy", "list", "pol", check=0)
    statuses = [x["status"] for x in json.loads(r.stdout)["revisions"]]
    assert statuses == ["pending", "failed", "failed", "loaded", "loaded"], statuses


def test_providers_through_the_cli(gw):
    env = {"MY_TOKEN": "tok-from-env-123456"}
    r = gw.cli("provider", "create", "--name", "svc", "--credential", "MY_TOKEN",
               "--credential", "OTHER=inline-secret-98765", "--endpoint", "api.example.com:443",
               env=env, check=0)
    assert "tok-from-env" not in r.stdout and "inline-secret" not in r.stdout
    r = gw.cli("provider", "list", check=0)
    assert "svc" in r.stdout and "MY_TOKEN" in r.stdout and "tok-from-env" not in r.stdout
    r = gw.cli("provider", "create", "--name", "svc", "--credential", "X=y")
    assert r.returncode == 1 and "already exists" in r.stderr
    gw.cli("provider", "delete", "svc", check=0)
    r = gw.cli("provider", "list", check=0)
    assert "svc" not in r.stdout


def test_cli_auto_starts_a_local_gateway(tmp_path):
    g = Gateway(state_dir=str(tmp_path / "auto"))
    try:
        r = g.cli("sandbox", "list", check=0)
        assert "starting a local one" in r.stderr
        assert r.stdout.startswith("NAME")
        r = g.cli("gateway", "status", check=0)
        assert "local" in r.stdout
        # Second call: the running gateway is reused.
        r = g.cli("sandbox", "list", check=0)
        assert "starting" not in r.stderr
        r = g.cli("gateway", "stop", check=0)
        assert "stopped" in r.stdout
        r = g.cli("gateway", "status")
        assert r.returncode == 1 and "not running" in r.stdout
    finally:
        g.cli("gateway", "stop")
        g.cleanup()


WORKSPACE_POLICY = """version: 1
filesystem_policy:
  include_workdir: true
  read_only: [/usr, /lib, /lib64, /bin, /etc, /proc, /dev/urandom]
  read_write: [/tmp, /dev/null]
network_policies: {}
"""


def test_agent_works_in_its_workspace_and_it_persists(gw, tmp_path):
    pol = write(tmp_path, "ws.yaml", WORKSPACE_POLICY)
    r = gw.cli("sandbox", "create", "--name", "ws", "--policy", pol, "--", "/bin/sh", "-c",
               'echo "cwd=$(pwd)"; echo "home=$HOME"; echo made-inside > note.txt; '
               "cat /etc/hostname >/dev/null; echo done")
    assert r.returncode == 0, (r.stdout, r.stderr)
    sid = gw.sandbox("ws")["id"]
    workspace = os.path.join(gw.sandbox_dir(sid), "workspace")
    # The workspace is bound on /sandbox, whatever its host path.
    assert "cwd=/sandbox" in r.stdout and "home=/sandbox" in r.stdout, r.stdout
    with open(os.path.join(workspace, "note.txt")) as f:
        assert f.read() == "made-inside\n"
    st = os.stat(workspace)
    assert st.st_uid == 65534 and (st.st_mode & 0o777) == 0o700  # the agent's, nobody else's
    # Negative control: outside the workspace and the policy, writing fails.
    r = gw.cli("sandbox", "create", "--name", "ws2", "--policy", pol, "--", "/bin/sh", "-c",
               "echo x > /etc/should-not-exist")
    assert r.returncode != 0 and not os.path.exists("/etc/should-not-exist")


def test_state_directory_under_tmp_still_binds_the_workspace(tmp_path):
    """The agent gets a private /tmp; a gateway state directory under the
    host's /tmp (mktemp -d, as first-time users and tests do) must still
    give it its workspace on /sandbox."""
    state = tempfile.mkdtemp(prefix="osgw-", dir="/tmp")
    g = Gateway(state_dir=state)
    try:
        g.start()
        pol = write(tmp_path, "ws.yaml", WORKSPACE_POLICY)
        r = g.cli("sandbox", "create", "--name", "intmp", "--policy", pol, "--", "/bin/sh",
                  "-c", 'echo "cwd=$(pwd)"; echo from-agent > note.txt; ls -a /tmp')
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert "cwd=/sandbox" in r.stdout, r.stdout
        sid = g.sandbox("intmp")["id"]
        with open(os.path.join(g.sandbox_dir(sid), "workspace", "note.txt")) as f:
            assert f.read() == "from-agent\n"
        # Its /tmp is still its own: the host's state directory is not in it.
        assert os.path.basename(state) not in r.stdout, r.stdout
    finally:
        g.cleanup()
        remove_tree(state)
