"""`openshell policy propose NAME [--apply]` as a user runs it: the
sandbox's denials, aggregated (one rule per host/port/binary/method/path,
with its count in the rule's comment), become the smallest policy change that
allows them: an allow rule on the endpoint that judged an L7 denial (the
one the request routes to, whose rules also judge JSON-RPC, GraphQL and
WebSocket messages), a new policy for an L4 denial. --apply shows the diff and loads it through
the revision path; the denied requests then succeed, and others stay denied."""

import pytest
import yaml

from tests.lib import build, upstream_gateway
from tests.lib.gateway_util import wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor",
                         "openshell-sandbox")

POLICY = """version: 1
network_policies:
  site:
    endpoints:
      - host: upstream.test
        port: 80
        protocol: rest
        access: read-only
        allowed_ips: ["198.51.100.0/24"]
    binaries:
      - { path: /usr/bin/curl }
"""


@pytest.fixture
def box(tmp_path):
    with upstream_gateway.running_sandbox(tmp_path, "box", POLICY, ["sleep", "600"]) as gw:
        yield gw


def status(gw, *curl_args):
    """The HTTP status curl gets inside the sandbox (403: the proxy refused)."""
    r = gw.cli("sandbox", "exec", "box", "--", "/usr/bin/curl", "-s", "-o", "/dev/null",
               "-w", "%{http_code}", *curl_args)
    return r.stdout


DENIED = [("-X", "POST", "http://upstream.test/items/1"),
          ("-X", "POST", "http://upstream.test/items/1"),
          ("-X", "PUT", "http://upstream.test/items/2"),
          ("http://198.51.100.10:8000/new",)]
# Never asked for: they must stay denied after --apply.
OTHERS = [("-X", "POST", "http://upstream.test/items/3"),
          ("-X", "DELETE", "http://upstream.test/items/1"),
          ("http://198.51.100.10/",)]


def deny_all(gw):
    for args in DENIED:
        assert status(gw, *args) == "403", args
    assert status(gw, "http://upstream.test/read") == "200"  # control: reads are allowed

    def recorded():
        out = gw.cli("-o", "json", "sandbox", "logs", "box", "--audit").stdout
        return out.count('"decision":"deny"') >= len(DENIED)
    wait_for(recorded, 15, what="the denials in the audit log")


def test_propose_prints_the_smallest_change_with_its_denials(box):
    deny_all(box)
    r = box.cli("policy", "propose", "box")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "# 2 denials (no_matching_rule): POST /items/1 by /usr/bin/curl" in out, out
    assert '- allow: { method: "POST", path: "/items/1" }' in out, out
    assert "# 1 denial (no_matching_rule): PUT /items/2 by /usr/bin/curl" in out, out
    assert out.count("- allow:") == 2, out  # the two POSTs are one rule
    assert "# 1 denial (no_matching_endpoint): 198.51.100.10:8000 by /usr/bin/curl" in out
    doc = yaml.safe_load(out)  # the proposal is YAML
    web = doc["network_policies"]["site"]["endpoints"][0]
    assert (web["host"], web["port"]) == ("upstream.test", 80)
    new = doc["network_policies"]["proposed_198_51_100_10_8000"]
    assert new == {"endpoints": [{"host": "198.51.100.10", "port": 8000}],
                   "binaries": [{"path": "/usr/bin/curl"}]}, new
    # Nothing was applied: still denied.
    assert status(box, *DENIED[0]) == "403"


def test_apply_shows_the_diff_and_then_the_denied_requests_succeed(box):
    deny_all(box)
    r = box.cli("policy", "propose", "box", "--apply")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "--- policy in force\n+++ proposed\n" in r.stdout, r.stdout
    diff = r.stdout[r.stdout.index("--- policy in force"):].splitlines()
    assert "-      access: read-only" in diff, diff  # the preset becomes rules beside the new
    assert "+          path: /items/1" in diff and "+          method: POST" in diff, diff
    assert any(l.startswith("+  proposed_198_51_100_10_8000:") for l in diff), diff
    assert "policy revision 2 loaded" in r.stdout, r.stdout
    for args in DENIED:
        assert status(box, *args) == "200", args
    for args in OTHERS:
        assert status(box, *args) == "403", args
    assert status(box, "http://upstream.test/read") == "200"  # reads still allowed
    # Proposed again: the old denials are allowed by now and not proposed twice;
    # the new ones (made after the apply) are.
    wait_for(lambda: "items/3" in box.cli("-o", "json", "sandbox", "logs", "box",
                                          "--audit").stdout, 15, what="the new denials")
    again = box.cli("policy", "propose", "box", check=0).stdout
    assert "# not proposed: 4 denials the policy in force allows by now" in again, again
    assert '{ method: "POST", path: "/items/1" }' not in again, again
    assert "proposed_198_51_100_10_8000" not in again, again
    assert '- allow: { method: "POST", path: "/items/3" }' in again, again


def test_nothing_to_propose_and_bad_input(box):
    r = box.cli("policy", "propose", "box")
    assert r.returncode == 0 and "nothing to propose" in r.stdout, r.stdout
    r = box.cli("policy", "propose", "box", "--apply")
    assert r.returncode == 0 and "policy revision" not in r.stdout, r.stdout
    r = box.cli("policy", "propose", "nosuch")
    assert r.returncode == 1 and "nosuch" in r.stderr, r.stderr
    r = box.cli("policy", "propose")
    assert r.returncode == 2 and "usage" in r.stderr, r.stderr
    r = box.cli("policy", "propose", "box", "--aply")
    assert r.returncode == 2 and "--aply" in r.stderr, r.stderr


# The same site, with a second endpoint for /api/ (more specific) after it.
ROUTED = POLICY.replace("    binaries:", """      - host: upstream.test
        port: 80
        protocol: rest
        path: "/api/**"
        access: read-only
        allowed_ips: ["198.51.100.0/24"]
    binaries:""")


def test_a_rule_goes_to_the_endpoint_the_request_is_routed_to(tmp_path):
    # Two endpoints of one policy on one host:port, told apart by path: the
    # denial of POST /api/x was judged by the /api/ one (more specific), so
    # the rule goes there, not to the first endpoint listed (whose REST rules
    # would also count, but not for the JSON-RPC, GraphQL or WebSocket
    # messages that only the routed endpoint's rules judge).
    with upstream_gateway.running_sandbox(tmp_path, "box", ROUTED, ["sleep", "600"]) as gw:
        assert status(gw, "-X", "POST", "http://upstream.test/api/x") == "403"
        wait_for(lambda: "/api/x" in gw.cli("-o", "json", "sandbox", "logs", "box",
                                            "--audit").stdout, 15, what="the denial")
        r = gw.cli("policy", "propose", "box", "--apply")
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert "policy revision 2 loaded" in r.stdout, r.stdout
        assert status(gw, "-X", "POST", "http://upstream.test/api/x") == "200"
        assert status(gw, "-X", "POST", "http://upstream.test/x") == "403"  # not widened


# A websocket endpoint's read-write preset: GET (the upgrade) and client
# messages, none of the REST writes.
WEBSOCKET = POLICY.replace("protocol: rest\n        access: read-only",
                           "protocol: websocket\n        access: read-write")


def test_a_websocket_preset_becomes_its_own_rules_not_the_rest_ones(tmp_path):
    with upstream_gateway.running_sandbox(tmp_path, "box", WEBSOCKET, ["sleep", "600"]) as gw:
        assert status(gw, "-X", "POST", "http://upstream.test/hook") == "403"
        assert status(gw, "http://upstream.test/read") == "200"  # control: GET is in it
        wait_for(lambda: "/hook" in gw.cli("-o", "json", "sandbox", "logs", "box",
                                           "--audit").stdout, 15, what="the denial")
        r = gw.cli("policy", "propose", "box", "--apply")
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert "WEBSOCKET_TEXT" in r.stdout, r.stdout  # the preset, spelled out
        assert status(gw, "-X", "POST", "http://upstream.test/hook") == "200"
        # not widened to the REST read-write preset
        assert status(gw, "-X", "PUT", "http://upstream.test/hook") == "403"
        assert status(gw, "-X", "POST", "http://upstream.test/other") == "403"
