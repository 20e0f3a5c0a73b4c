"""The README's quick tour as a newcomer runs it, on a host with no `sandbox`
account: the example policy's `run_as_user: sandbox` runs the agent with a
stand-in id that needs no account (65533, said so on stderr), the account is
used when the host has one, and a host where the stand-in id is someone
else's gets an error that says what to do. Each host is this one with its
passwd and group files replaced by bind mounts in the gateway's own mount
namespace (the supervisors it starts inherit it)."""

import os

import pytest

from tests.lib import build
from tests.lib.gateway_util import Gateway

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor",
                         "openshell-sandbox")

DOCUMENTED = os.path.join(build.REPO, "examples", "policies", "documented.yaml")
AGENT = ["/bin/sh", "-c", "id -u; id -g; curl -s http://example.com/"]
BIND = ('mount --make-rprivate / && mount --bind "$1" /etc/passwd && '
        'mount --bind "$2" /etc/group && shift 2 && exec "$@"')


def host_files(tmp_path, passwd_extra="", group_extra=""):
    """/etc/passwd and /etc/group without any `sandbox` entry or id 65533, plus extras."""
    def strip(path, extra):
        keep = [l for l in open(path).read().splitlines()
                if l.split(":")[0] != "sandbox" and l.split(":")[2:3] != ["65533"]]
        out = tmp_path / os.path.basename(path)
        out.write_text("\n".join(keep) + "\n" + extra)
        return str(out)
    return strip("/etc/passwd", passwd_extra), strip("/etc/group", group_extra)


@pytest.fixture
def tour(tmp_path):
    made = []

    def start(passwd_extra="", group_extra=""):
        passwd, group = host_files(tmp_path, passwd_extra, group_extra)
        g = Gateway(argv_prefix=["unshare", "--mount", "--", "sh", "-c", BIND, "sh", passwd,
                                 group]).start()
        made.append(g)
        return g
    yield start
    for g in made:
        g.cleanup()


def test_example_policy_runs_without_a_sandbox_account(tour):
    gw = tour()
    r = gw.cli("sandbox", "create", "--name", "tour", "--policy", DOCUMENTED, "--", *AGENT)
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = r.stdout + r.stderr
    assert "65533\n65533\n" in r.stdout, out
    # A warning: shown on stderr without -v.
    assert "no `sandbox` user or group" in r.stderr and "useradd -r -U sandbox" in r.stderr
    # Not in the policy: the proxy's 403 answer, the agent did run confined;
    # a plain-HTTP request is not called a CONNECT.
    assert '"plain HTTP to example.com:80 not permitted by policy"' in r.stdout, out
    assert gw.sandbox("tour")["phase"] == "Succeeded"


def test_the_hosts_sandbox_account_is_used_when_there_is_one(tour):
    gw = tour("sandbox:x:1777:1778::/nonexistent:/usr/sbin/nologin\n", "sandbox:x:1778:\n")
    r = gw.cli("sandbox", "create", "--name", "tour", "--policy", DOCUMENTED, "--", *AGENT)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "1777\n1778\n" in r.stdout, r.stdout
    assert "no `sandbox`" not in r.stdout + r.stderr


def test_a_taken_stand_in_id_is_an_error_that_says_what_to_do(tour):
    gw = tour("someone:x:65533:65533::/nonexistent:/usr/sbin/nologin\n")
    r = gw.cli("sandbox", "create", "--name", "tour", "--policy", DOCUMENTED, "--", *AGENT)
    assert r.returncode != 0
    msg = gw.sandbox("tour")["message"]
    assert "id 65533, which would stand in for it, is someone's" in msg, msg
    assert "useradd -r -U sandbox" in msg
