"""Host-gateway aliases (issue 19; upstream crates/openshell-sandbox/src/proxy.rs
HOST_GATEWAY_ALIASES): host.openshell.internal and its aliases name the
sandbox's host. With --host-gateway (the local driver passes `proxy`: the
host side of the sandbox's veth) they resolve to that address, ahead of any
hosts pin or DNS, and the address is still judged by the policy's
allowed_ips and the SSRF rules (upstream exempts only a link-local gateway;
ours is private, which upstream does not exempt either). Here the gateway is
the test upstream's address."""
import json

import pytest

from tests.lib import build
from tests.lib.proxy_util import UPSTREAM_IP, Proxy, Upstream

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  host_services:
    endpoints:
      - {{ host: host.openshell.internal, port: 8000, allowed_ips: {NET} }}
      - {{ host: host.containers.internal, port: 8000, allowed_ips: {NET} }}
      - {{ host: host.docker.internal, port: 8000 }}
      - {{ host: gateway.docker.internal, port: 6443, allowed_ips: {NET} }}
    binaries:
      - {{ path: /usr/bin/curl }}
"""


@pytest.fixture(scope="module")
def upstream():
    up = Upstream().start()
    # An operator's pin for the alias: the configured gateway wins over it,
    # and without a gateway it is what the name means.
    with open(f"{up.dir}/hosts", "a") as f:
        f.write("127.0.0.1 host.openshell.internal host.containers.internal\n")
    yield up
    up.stop()


@pytest.fixture
def gateway_proxy(upstream):
    p = Proxy(upstream, POLICY, extra=("--host-gateway", UPSTREAM_IP))
    upstream.clear()
    yield p
    p.stop()


def test_aliases_reach_the_host_gateway(gateway_proxy, upstream):
    for name in ("host.openshell.internal", "host.containers.internal"):
        code, body = gateway_proxy.curl(f"http://{name}:8000/from-sandbox")
        assert code == 200, (name, body)
        assert json.loads(body)["headers"]["host"] == f"{name}:8000"
    # The echo came from the gateway's address: the pin (loopback) and DNS
    # (unreachable here) were not used.
    assert len([r for r in upstream.requests() if r["path"] == "/from-sandbox"]) == 2


def test_the_gateway_address_is_still_judged(gateway_proxy, upstream):
    # No allowed_ips: the host's address is internal, so refused as upstream does.
    code, body = gateway_proxy.curl("http://host.docker.internal:8000/x")
    assert code == 403 and json.loads(body)["error"] == "ssrf_denied", body
    # Control-plane ports stay closed even inside allowed_ips.
    code, body = gateway_proxy.curl("http://gateway.docker.internal:6443/x")
    assert code == 403 and json.loads(body)["error"] == "ssrf_denied", body
    assert not [r for r in upstream.requests() if r["path"] == "/x"]


def test_without_a_gateway_the_name_is_looked_up_like_any_other(upstream):
    p = Proxy(upstream, POLICY)
    try:
        code, body = p.curl("http://host.openshell.internal:8000/pinned")
        # The pin says loopback: always blocked.
        assert code == 403 and json.loads(body)["error"] == "ssrf_denied", body
    finally:
        p.stop()
    assert not [r for r in upstream.requests() if r["path"] == "/pinned"]


def test_a_bad_gateway_is_refused_at_start(upstream):
    with pytest.raises(AssertionError, match="host-gateway"):
        Proxy(upstream, POLICY, extra=("--host-gateway", "not-an-address"))
