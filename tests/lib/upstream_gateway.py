"""A gateway whose sandboxes reach local upstream servers by name: the proxy
tests' upstream namespace (tests/lib/proxy_util.py: echo servers on
198.51.100.10, HTTP :80 and :8000, HTTPS :443 and :8443, a test CA) with the
local driver's hosts_file and upstream_ca_file pointing at it. Run inside a
private network namespace (TEST-NET-2 is shared by every test that uses it)."""
import contextlib
import os

from tests.lib.gateway_util import Gateway
from tests.lib.proxy_util import Upstream


def start():
    """(gateway, upstream), both started; stop with stop(gw, up)."""
    up = Upstream().start()
    gw = Gateway(extra_env={
        "OPENSHELL_DRIVERS_LOCAL_HOSTS_FILE": os.path.join(up.dir, "hosts"),
        "OPENSHELL_DRIVERS_LOCAL_UPSTREAM_CA_FILE": os.path.join(up.dir, "ca.pem"),
    })
    try:
        gw.start()
    except BaseException:
        up.stop()
        raise
    return gw, up


def stop(gw, up):
    try:
        gw.cleanup()
    finally:
        up.stop()


@contextlib.contextmanager
def running_sandbox(tmp_path, name, policy_text, argv):
    """A gateway with the upstream, and sandbox NAME running argv under
    policy_text (detached); yields the gateway, stops both after."""
    gw, up = start()
    try:
        pol = tmp_path / f"{name}-policy.yaml"
        pol.write_text(policy_text)
        r = gw.cli("sandbox", "create", "--name", name, "--policy", str(pol), "--detach",
                   "--", *argv)
        assert r.returncode == 0, (r.stdout, r.stderr)
        yield gw
    finally:
        stop(gw, up)
