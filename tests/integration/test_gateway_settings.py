"""What a newcomer meets when starting a gateway goes wrong, each said at once
and with what to do: a state directory another gateway holds (a lock held for
the gateway's lifetime; the second names the holder and changes nothing), a
listen address another program holds, an OPENSHELL_GATEWAY_*/DRIVERS_*
variable that names no setting, a file setting whose file is missing or does
not parse (named with the setting at start, not at every create), and a
non-root user for whom a local gateway could not create sandboxes (nothing is
started). docs/settings.md lists every declared setting."""

import os
import re
import socket
import subprocess

import pytest

from tests.lib import build
from tests.lib.gateway_util import CLI, GATEWAY, Gateway, free_port

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")


def starts_healthy(extra_env):
    """Positive control: a gateway with these variables starts and answers."""
    g = Gateway(extra_env=extra_env)
    try:
        g.start()
        return g.healthy()
    finally:
        g.cleanup()


def run_gateway(state_dir, *args, env=None, timeout=30):
    e = {k: v for k, v in os.environ.items() if not k.startswith("OPENSHELL_")}
    e.update(env or {})
    return subprocess.run([GATEWAY, "--state-dir", state_dir, *args], env=e,
                          capture_output=True, text=True, timeout=timeout)


def test_second_gateway_on_a_state_dir_is_refused_and_names_the_holder(gw):
    r = run_gateway(gw.state_dir, "--listen", f"127.0.0.1:{free_port()}")
    assert r.returncode == 1
    assert f"state directory {gw.state_dir} is in use by another openshell-gateway " \
           f"(pid {gw.proc.pid} holds" in r.stderr, r.stderr
    # The first is untouched: its socket and pid file survive the second's exit.
    assert gw.healthy()
    assert os.path.exists(os.path.join(gw.state_dir, "gateway.sock"))
    with open(os.path.join(gw.state_dir, "gateway.pid")) as f:
        assert int(f.read()) == gw.proc.pid
    gw.cli("gateway", "status", check=0)
    # Positive control: once the first stops, the lock is free.
    gw.stop()
    gw.start()
    assert gw.healthy()


def test_lock_is_not_kept_by_running_sandboxes(gw):
    gw.cli("sandbox", "create", "--name", "keep", "--detach", "--", "sleep", "300", check=0)
    gw.stop()  # the sandbox and its monitor run on
    gw.start()
    gw.wait_phase("keep", "Ready")


def test_port_taken_is_said_at_once_with_how_to_choose_another(tmp_path):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    g = Gateway(state_dir=str(tmp_path / "state"))
    g.port = port
    try:
        r = g.cli("gateway", "start")
        assert r.returncode == 1
        assert f"listen_address 127.0.0.1:{port} is already in use by another program" \
            in r.stderr, r.stderr
        assert "OPENSHELL_GATEWAY_LISTEN_ADDRESS" in r.stderr
        assert "within 10 s" not in r.stderr
        # Positive control: a free port starts.
        holder.close()
        g.port = free_port()
        r = g.cli("gateway", "start")
        assert r.returncode == 0, r.stderr
    finally:
        holder.close()
        g.cli("gateway", "stop")
        g.cleanup()


def test_an_unknown_setting_variable_is_an_error(tmp_path):
    r = run_gateway(str(tmp_path / "s"), "--listen", f"127.0.0.1:{free_port()}",
                    env={"OPENSHELL_GATEWAY_LISTEN_ADRESS": "127.0.0.1:1"}, timeout=10)
    assert r.returncode == 2
    assert "environment variable OPENSHELL_GATEWAY_LISTEN_ADRESS names no setting " \
           "(closest: OPENSHELL_GATEWAY_LISTEN_ADDRESS" in r.stderr, r.stderr
    r = run_gateway(str(tmp_path / "s"), env={"OPENSHELL_DRIVERS_LOCL_HOSTS_FILE": "/x"},
                    timeout=10)
    assert r.returncode == 2 and "OPENSHELL_DRIVERS_LOCL_HOSTS_FILE names no setting" in r.stderr
    # Other programs' OPENSHELL_* variables are not settings and not errors.
    assert starts_healthy({"OPENSHELL_TOKEN": "x", "OPENSHELL_BUILD": "/nowhere"})


def make_ca(tmp_path):
    key, pem = tmp_path / "ca.key", tmp_path / "ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key), "-out", str(pem),
                    "-days", "1", "-subj", "/CN=settings test CA"], check=True,
                   capture_output=True)
    return str(pem)


@pytest.mark.parametrize("setting,content,expect", [
    ("HOSTS_FILE", None, "drivers.local.hosts_file: opening {path}: No such file"),
    ("HOSTS_FILE", "203.0.113.5 ok.test\nnot-an-address bad.test\n",
     "drivers.local.hosts_file: {path}:2"),
    ("HOSTS_FILE", "203.0.113.5\n",
     "drivers.local.hosts_file: {path}:1: 203.0.113.5 names no host"),
    ("UPSTREAM_CA_FILE", None, "drivers.local.upstream_ca_file: opening {path}: No such file"),
    ("UPSTREAM_CA_FILE", "not a certificate\n",
     "drivers.local.upstream_ca_file: {path}: no PEM certificate in it"),
    ("UPSTREAM_CA_FILE", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
     "drivers.local.upstream_ca_file: {path}: no PEM certificate in it"),
])
def test_a_bad_file_setting_fails_the_start_naming_setting_and_file(tmp_path, setting, content,
                                                                   expect):
    path = str(tmp_path / "the-file")
    if content is not None:
        with open(path, "w") as f:
            f.write(content)
    r = run_gateway(str(tmp_path / "s"), "--listen", f"127.0.0.1:{free_port()}",
                    env={f"OPENSHELL_DRIVERS_LOCAL_{setting}": path}, timeout=10)
    assert r.returncode == 1, r.stderr
    assert expect.format(path=path) in r.stderr, r.stderr


def test_good_file_settings_start(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("# a comment\n203.0.113.5 ok.test other.test\n\n")
    assert starts_healthy({"OPENSHELL_DRIVERS_LOCAL_HOSTS_FILE": str(hosts),
                           "OPENSHELL_DRIVERS_LOCAL_UPSTREAM_CA_FILE": make_ca(tmp_path)})


def test_non_root_user_is_told_what_is_needed_and_nothing_starts(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSHELL_")}
    env["HOME"] = str(home)
    r = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                        CLI, "sandbox", "list"], env=env, capture_output=True, text=True,
                       timeout=30, cwd="/")
    assert r.returncode == 1
    assert "the local driver needs root (or CAP_SYS_ADMIN, CAP_NET_ADMIN" in r.stderr, r.stderr
    assert "nothing was started" in r.stderr and "starting a local one" not in r.stderr
    assert os.listdir(home) == []  # no state dir, no gateway.log
    # Positive control: the same command as root starts one.
    g = Gateway(state_dir=str(tmp_path / "root"))
    try:
        r = g.cli("sandbox", "list", check=0)
        assert "starting a local one" in r.stderr
    finally:
        g.cli("gateway", "stop")
        g.cleanup()


def test_settings_page_lists_every_declared_setting():
    schema = open(os.path.join(build.REPO, "src", "lib", "config_schema.c")).read()
    page = open(os.path.join(build.REPO, "docs", "settings.md")).read()
    sections = {"gateway_keys": "OPENSHELL_GATEWAY_", "local_keys": "OPENSHELL_DRIVERS_LOCAL_",
                "kubernetes_keys": "OPENSHELL_DRIVERS_KUBERNETES_"}
    for array, prefix in sections.items():
        body = re.search(rf"{array}\[\] = \{{(.*?)\n\}};", schema, re.S).group(1)
        keys = re.findall(r'\.name = "(\w+)"', body)
        assert keys, array
        for k in keys:
            assert f"| `{k}` | `{prefix}{k.upper()}` |" in page, f"{prefix}{k.upper()} missing"
