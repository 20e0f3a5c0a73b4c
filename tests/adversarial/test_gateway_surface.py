"""The control plane seen from inside: an agent started through the real
gateway + local driver (and a command started with `sandbox exec`) tries to
reach the gateway's API, its state and its tokens, and to break out of the
exec path. Each refusal is asserted as the errno the agent sees, beside a
positive control from the host."""
import json
import os
import socket
import subprocess

import pytest

from tests.lib import build
from tests.lib.gateway_util import CLI, Gateway

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")

PROBE = r'''
import errno, json, os, socket, sys
gw_port, state, sid = int(sys.argv[1]), sys.argv[2], sys.argv[3]
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = 0
    except OSError as e:
        out[name] = e.errno
def tcp(host, port):
    s = socket.create_connection((host, port), timeout=3)
    s.close()
def unix(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    s.connect(path)
attempt("gateway_tcp_loopback", lambda: tcp("127.0.0.1", gw_port))
gw_host = os.environ["HTTPS_PROXY"].split("//")[1].split(":")[0]
attempt("gateway_tcp_veth_peer", lambda: tcp(gw_host, gw_port))
attempt("gateway_unix_socket", lambda: unix(state + "/gateway.sock"))
attempt("admin_token", lambda: open(state + "/admin.token").read())
attempt("own_sandbox_token", lambda: open(state + "/sandboxes/" + sid + "/token").read())
attempt("gateway_db", lambda: open(state + "/gateway.db", "rb").read(16))
attempt("secret_key", lambda: open(state + "/secret.key", "rb").read(16))
attempt("state_listing", lambda: os.listdir(state))
print("RESULT " + json.dumps(out))
'''


@pytest.fixture(scope="module")
def gw():
    g = Gateway().start()
    r = g.cli("sandbox", "create", "--name", "target", "--detach", "--", "sleep", "600")
    assert r.returncode == 0, (r.stdout, r.stderr)
    yield g
    g.cleanup()


def probe(gw, via_exec):
    sid = gw.sandbox("target")["id"]
    args = ["/usr/bin/python3", "-c", PROBE, str(gw.port), gw.state_dir, sid]
    if via_exec:
        r = subprocess.run([CLI, "sandbox", "exec", "target", "--", *args], env=gw.env,
                           capture_output=True, text=True, timeout=60)
    else:
        r = gw.cli("sandbox", "create", "--name", "prober", "--", *args)
        gw.cli("sandbox", "delete", "prober")
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    assert r.returncode == 0 and lines, (r.stdout, r.stderr)
    return json.loads(lines[-1][7:])


@pytest.mark.parametrize("via_exec", [False, True], ids=["agent", "exec"])
def test_the_control_plane_is_out_of_reach(gw, via_exec):
    got = probe(gw, via_exec)
    # The sandbox has its own loopback; the veth peer answers only the proxy port.
    assert got["gateway_tcp_loopback"] == 111, got  # ECONNREFUSED
    assert got["gateway_tcp_veth_peer"] == 111, got
    # State, tokens and the socket are root's, under a 0700 directory, and
    # outside the Landlock rules.
    for name in ("gateway_unix_socket", "admin_token", "own_sandbox_token", "gateway_db",
                 "secret_key", "state_listing"):
        assert got[name] in (13, 2), (name, got)  # EACCES (or ENOENT when not made)
    # Positive controls from the host: the same gateway answers, the files exist.
    assert gw.request("GET", "/v1/health", token=None)[0] == 200
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.path.join(gw.state_dir, "gateway.sock"))
    s.close()
    assert os.path.exists(os.path.join(gw.state_dir, "admin.token"))


def test_exec_cannot_be_turned_against_another_sandbox(gw):
    """A sandbox's own token (were it ever leaked) cannot drive exec: the
    client route is admin-only and the attach route needs the exec id of a
    client waiting for that same sandbox."""
    r = gw.cli("sandbox", "create", "--name", "victim", "--detach", "--", "sleep", "600")
    assert r.returncode == 0, r
    victim = gw.sandbox("victim")["id"]
    attacker = gw.sandbox("target")["id"]
    with open(os.path.join(gw.sandbox_dir(attacker), "token")) as f:
        tok = f.read().strip()
    up = {"Upgrade": "openshell-exec", "Connection": "Upgrade"}
    st, _ = gw.request("POST", "/v1/sandboxes/victim/exec", {"command": ["/bin/id"]},
                       token=tok, headers=up)
    assert st == 403
    st, _ = gw.request("POST", f"/v1/supervisor/sandboxes/{victim}/exec/{'0' * 32}", raw=b"",
                       token=tok, headers=up)
    assert st == 403
    # Positive control: the admin runs the same command in the victim.
    r = subprocess.run([CLI, "sandbox", "exec", "victim", "--", "/bin/id", "-u"], env=gw.env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "65534", r
    gw.cli("sandbox", "delete", "victim")


def test_an_exec_command_cannot_leave_the_sandbox_namespaces(gw):
    """setns/unshare are refused by the same seccomp filter as the agent's,
    and the host's namespaces are not even nameable from the sandbox /proc."""
    script = ("import ctypes, os\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "try:\n"
              "    os.open('/proc/1/ns/mnt', os.O_RDONLY)\n"
              "    print('open_pid1_ns 0')\n"
              "except OSError as e:\n"
              "    print('open_pid1_ns', e.errno)\n"
              "fd = os.open('/proc/self/ns/net', os.O_RDONLY)\n"
              "r = libc.setns(fd, 0)\n"
              "print('setns', r, ctypes.get_errno())\n"
              "r = libc.unshare(0x10000000)\n"  # CLONE_NEWUSER
              "print('unshare', r, ctypes.get_errno())\n"
              "print('pid1', open('/proc/1/cmdline').read().split(chr(0))[0])\n")
    r = subprocess.run([CLI, "sandbox", "exec", "target", "--", "/usr/bin/python3", "-c",
                        script], env=gw.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    lines = dict(l.split(" ", 1) for l in r.stdout.splitlines())
    assert lines["open_pid1_ns"] == "13", lines  # pid 1 is root's and not dumpable
    assert lines["setns"] == "-1 1", lines  # EPERM, even into its own namespace
    assert lines["unshare"] == "-1 1", lines
    # /proc/1 is the sandbox's own init (the launcher), never the host's.
    assert lines["pid1"].endswith("openshell-sandbox"), lines
