"""Proxy parsing, attacked from inside a real sandbox with raw bytes on the
proxy socket: request smuggling shapes, absolute-form vs Host confusion,
CONNECT to IP literals and loopback names, oversize and slow heads, and
requests across policy changes. Each refusal is checked in the agent's
answer, in the audit record and in the upstream's log (nothing reached it);
the allowed twin of each request goes through."""
import time

import pytest

from tests.lib.adv_util import NET, last

POLICY = f"""  web:
    endpoints:
      - {{ host: upstream.test, port: 80, allowed_ips: {NET} }}
      - {{ host: other.test, port: 8443, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""
AFTER = f"""  web:
    endpoints:
      - {{ host: api.test, port: 80, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""
PROBES = ["px_smuggling", "px_connect_targets", "px_oversize_header", "px_slow_headers",
          "px_invalid_reload_keeps_policy", "px_keepalive_across_reload"]


def bad_reload(sb):
    n = len(sb.find(reason="policy_invalid"))
    with open(sb.policy, "w") as f:
        f.write("version: 1\nnetwork_policies: [this is not a map\n")
    sb.proc.send_signal(1)
    end = time.monotonic() + 5
    while len(sb.find(reason="policy_invalid")) == n and time.monotonic() < end:
        time.sleep(0.02)


@pytest.fixture(scope="module")
def sb(run_sandbox):
    return run_sandbox("proxy", POLICY, PROBES,
                       on_barrier={"reload": lambda s: s.reload(AFTER), "bad-reload": bad_reload})


def reached(upstream, prefix):
    return [q for q in upstream.requests() if q["path"].startswith(prefix)]


def smuggled(upstream):
    """Smuggling-test requests that reached the upstream. /smuggled-o is the
    one whose head is valid: it is forwarded before its body turns out bad."""
    return [q for q in reached(upstream, "/smuggled") if q["path"] != "/smuggled-o"]


@pytest.mark.parametrize("shape,status,reason", [
    ("cl_te", 400, "cl-and-te"), ("te_cl", 400, "cl-and-te"),
    ("dup_cl", 400, "conflicting-content-length"), ("obs_fold", 400, None),
    ("bare_lf", 400, None), ("te_xchunked", 400, "bad-transfer-encoding"),
    ("space_colon", 400, "space-before-colon"), ("nul_header", 400, "nul-byte"),
    ("two_hosts", 400, "multiple-host")])
def test_smuggling_shapes_refused_before_forwarding(sb, upstream, shape, status, reason):
    r = sb.result("px_smuggling")[shape]
    assert r["status"] == status, r
    assert r["headers"].get("connection") == "close"
    if reason:
        assert sb.find(event="http", decision="deny", reason=reason) or \
            sb.find(event="connect", decision="deny", reason=reason)
    assert not smuggled(upstream)


def test_absolute_form_host_confusion_refused(sb, upstream):
    s = sb.result("px_smuggling")
    assert s["host_confusion"]["status"] == 400
    assert s["host_confusion"]["json"]["detail"] == "Host header disagrees with the request URI"
    assert s["https_absolute"]["status"] == 400 and sb.find(reason="https_absolute_form")
    assert s["origin_form"]["status"] == 400 and sb.find(reason="bad_target_form")
    assert not smuggled(upstream)


def test_userinfo_and_hostless_tricks_never_reach_the_canary(sb, canary):
    s = sb.result("px_smuggling")
    assert s["userinfo"]["status"] in (400, 403)
    assert s["http10_no_host"]["status"] in (400, 403)
    assert not [h for h in canary.poll(0.2) if "smuggled" in h["data"]]


def test_chunked_body_cannot_carry_a_second_request(sb, upstream):
    r = sb.result("px_smuggling")["chunk_smuggle"]
    assert r["status"] == 400  # bare LF after the chunk extension
    assert sb.find(event="http", reason="bad_request_body")
    # The valid head went upstream with its (bad) body cut off; the request
    # hidden after it never did.
    assert [q["body"] for q in reached(upstream, "/smuggled-o")] == [""]
    assert not reached(upstream, "/smuggled-p")


def test_pipelined_bytes_before_connect_answer_refused(sb):
    r = sb.result("px_smuggling")["pipelined_connect"]
    assert r["status"] == 400 and sb.find(reason="pipelined_connect")


@pytest.mark.parametrize("target", ["198.51.100.200:8443", "127.0.0.1:3128", "localhost:3128",
                                    "[::1]:80", "0x7f000001:80", "2130706433:80",
                                    "canary.test:8080", "203.0.113.1:8080",
                                    "other.test:8443.canary.test"])
def test_connect_to_ip_literals_and_loopback_names_refused(sb, canary, target):
    r = sb.result("px_connect_targets")[target]
    assert r["status"] in (400, 403), r
    assert r["json"]["error"] in ("policy_denied", "bad_request")
    assert not canary.hits_from(sb.host_addr) and not canary.hits_from(sb.agent_addr)


def test_connect_to_allowed_name_works_positive_control(sb):
    assert sb.result("px_connect_targets")["other.test:8443"]["status"] == 200
    assert last(sb.records(), event="connect", decision="allow", host="other.test")


def test_ip_literal_of_allowed_host_is_not_the_host(sb):
    rec = last(sb.records(), event="connect", decision="deny", host="198.51.100.200")
    assert rec and rec["reason"] == "no_matching_endpoint"


def test_oversize_heads_answered_431_414(sb, upstream):
    r = sb.result("px_oversize_header")
    assert r["big"]["status"] == 431 and r["many"]["status"] == 431
    assert r["long_target"]["status"] in (414, 431)
    assert sb.find(reason="head-too-large") or sb.find(reason="line-too-long")
    assert not reached(upstream, "/big") and not reached(upstream, "/many")


def test_slowloris_heads_time_out_with_408_while_others_are_served(sb):
    r = sb.result("px_slow_headers")
    assert r["during"]["status"] == 200, "a normal request is served during the attack"
    assert r["statuses"] == [408]
    assert len(sb.find(reason="head_timeout")) >= 20


def test_invalid_reload_keeps_running_policy(sb, upstream):
    r = sb.result("px_invalid_reload_keeps_policy")
    assert sb.find(event="policy", reason="policy_invalid")
    assert r["allowed"]["status"] == 200 and reached(upstream, "/after-bad-reload")
    assert r["denied"]["status"] == 403


def test_kept_alive_connection_judged_by_new_policy(sb, upstream):
    r = sb.result("px_keepalive_across_reload")
    assert r["first"]["status"] == 200, "control: allowed before the change"
    assert r["second"]["status"] == 403
    assert r["second"]["json"]["reason"] == "no_matching_endpoint"
    assert reached(upstream, "/keepalive-1") and not reached(upstream, "/keepalive-2")


def test_open_tunnel_closed_by_policy_update(sb):
    r = sb.result("px_keepalive_across_reload")
    assert r["tunnel_before"] == 200
    assert r["tunnel_after"] in ("eof", "ECONNRESET", "EPIPE")
    assert sb.find(detail="tunnel closed by a policy update")

