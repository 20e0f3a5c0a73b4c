"""The transparent path under attack (tests/integration/transparent_agent.py
runs inside a real sandbox and knows how it works): a direct connection is
judged by the name the agent asks for, that name must resolve to the
address it dialled, the proxy connects to that address only, and what does
not fit (SNI != Host, a name for another address, non-TLS bytes on 443, a
ClientHello that never completes, a connection to the listener itself) is
refused with an audit record, the reason readable by the agent where a
protocol is known. DNS is answered by the supervisor (A only), over UDP and
TCP."""
import os
import socket
import struct
import sys
import threading

import pytest

from tests.lib import agent_sandbox, build
from tests.lib.adv_util import UPSTREAM_IP, Upstream

pytestmark = build.needs("openshell-supervisor", "openshell-sandbox")
AGENT = os.path.join(build.TESTS, "integration", "transparent_agent.py")
OTHER_IP = "198.51.100.201"  # in the upstream's /25, no name points at it

NETWORK = f"""
  web:
    endpoints:
      - host: upstream.test
        port: 443
        allowed_ips: ["{UPSTREAM_IP}/32", "{OTHER_IP}/32"]
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/allowed/**" }}
      - host: upstream.test
        port: 80
        allowed_ips: ["{UPSTREAM_IP}/32", "{OTHER_IP}/32"]
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/allowed/**" }}
      - host: upstream.test
        port: 8443
        allowed_ips: ["{UPSTREAM_IP}/32"]
      - host: creds.test
        port: 443
        allowed_ips: ["{UPSTREAM_IP}/32", "{OTHER_IP}/32"]
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/allowed/**" }}
      - host: api.test
        port: 443
        allowed_ips: ["{UPSTREAM_IP}/32"]
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/allowed/**" }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


class FakeDns:
    """The supervisor's upstream DNS server (--dns), on this test's loopback:
    it answers every A question with the upstream's address (creds.test:
    the upstream's and OTHER_IP in turn, TTL 0, as a name behind rotating
    addresses) and keeps the names it was asked, so a test sees which
    lookups were made at all."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.names = []
        self.rotated = 0  # A questions for creds.test so far
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            q, peer = self.sock.recvfrom(4096)
            pos, labels = 12, []
            while q[pos]:
                labels.append(q[pos + 1:pos + 1 + q[pos]].decode())
                pos += 1 + q[pos]
            self.names.append(".".join(labels).lower())
            qtype = struct.unpack(">H", q[pos + 1:pos + 3])[0]
            head = q[:2] + b"\x81\x80" + q[4:6] + struct.pack(">HHH", qtype == 1, 0, 0)
            addr, ttl = UPSTREAM_IP, b"\x00\x00\x00\x1e"
            if self.names[-1] == "creds.test" and qtype == 1:
                ttl = b"\x00\x00\x00\x00"
                self.rotated += 1
                if self.rotated % 2 == 0:
                    addr = OTHER_IP
            rr = (b"\xc0\x0c\x00\x01\x00\x01" + ttl + b"\x00\x04" +
                  socket.inet_aton(addr)) if qtype == 1 else b""
            self.sock.sendto(head + q[12:pos + 5] + rr, peer)


@pytest.fixture(scope="module")
def run():
    up = Upstream().start()
    dns = FakeDns()
    try:
        out, records = agent_sandbox.run(
            NETWORK, [sys.executable, AGENT, UPSTREAM_IP, OTHER_IP],
            read_only=[os.path.dirname(AGENT)], names=("upstream.test", "other.test"),
            tag="tp", extra=["--upstream-ca", f"{up.dir}/ca.pem",
                             "--transparent-ports", "80,443,8443",
                             "--dns", f"127.0.0.1:{dns.port}"])
        probes = {}
        for o in out:
            probes.setdefault(o["probe"], []).append(o)
        yield probes, records, [r["path"] for r in up.requests()], dns.names
    finally:
        up.stop()


def denied(records, reason):
    return [r for r in records if r.get("decision") == "deny" and r.get("reason") == reason]


def test_allowed_direct_connection(run):
    probes, records, seen, _ = run
    assert probes["allowed"][0]["text"] == "HTTP/1.1 200 OK"
    assert "/allowed/x" in seen


def test_sni_and_host_must_agree(run):
    probes, records, _, _ = run
    assert "403" in probes["sni_host"][0]["text"] and "host_mismatch" in probes["sni_host"][0]["text"]
    assert denied(records, "host_mismatch")


def test_the_name_asked_for_is_judged(run):
    """other.test is served at the same address but no policy names it."""
    probes, records, _, _ = run
    text = probes["sni_other_name"][0]["text"]
    assert "403 Forbidden by policy" in text and "other.test" in text, text


def test_a_name_must_resolve_to_the_address_dialled(run):
    probes, records, seen, _ = run
    for p in ("address_mismatch", "http_address_mismatch"):
        assert "transparent_address_mismatch" in probes[p][0]["text"], probes[p]
    recs = denied(records, "transparent_address_mismatch")
    assert {r["dport"] for r in recs} == {80, 443} and all(r["dst"] == OTHER_IP for r in recs)


def test_host_header_port_must_be_the_dialled_one(run):
    probes, _, _, _ = run
    assert "host_mismatch" in probes["http_host_port"][0]["text"]


def test_non_tls_bytes_on_443_are_refused(run):
    probes, records, seen, _ = run
    assert probes["plain_on_443"][0]["text"] == "", probes["plain_on_443"]
    assert denied(records, "transparent_not_tls")
    assert "/allowed/plain" not in seen


def test_operator_listed_port_tunnels_after_the_sni_check(run):
    probes, records, seen, _ = run
    assert probes["tunnel_8443"][0]["text"] == "HTTP/1.1 200 OK"
    assert "/allowed/tunnel" in seen


def test_unlisted_ports_stay_fenced(run):
    probes, records, _, _ = run
    assert probes["unlisted_port"][0]["error"] == "ConnectionRefusedError"
    assert [r for r in records if r.get("event") == "bypass" and r.get("dport") == 8000]


def test_the_listener_itself_names_no_destination(run):
    probes, records, _, _ = run
    tries = probes.get("listener_direct", [])
    assert tries, "the agent found no loopback listener to try"
    assert all("error" in t for t in tries), tries
    assert denied(records, "transparent_no_destination")


def test_dns_answers_a_only(run):
    probes, _, _, _ = run
    a, aaaa, txt = probes["dns_a"][0], probes["dns_aaaa"][0], probes["dns_txt"][0]
    assert (a["rcode"], a["addrs"], a["id"]) == (0, [UPSTREAM_IP], 0x1234)
    assert a["peer"] == "192.0.2.53"  # the answer seems to come from the server asked
    assert (aaaa["rcode"], aaaa["an"]) == (0, 0)
    assert txt["rcode"] == 5
    assert probes["getaddrinfo"][0]["addrs"] == [UPSTREAM_IP]


def test_slowloris_is_cut_at_the_head_timeout(run):
    probes, records, _, _ = run
    s = probes["slowloris"][0]
    assert s["how"] in ("closed", "ConnectionResetError") and s["took"] < 25, s
    assert denied(records, "head_timeout")


def test_dns_looks_up_only_names_a_policy_allows(run):
    """A name is data the agent chose: the stub asks the real resolver only
    for names some endpoint allows (here api.test, not in the hosts file: through the
    supervisor's --dns server), never for one that could only carry data
    out, which gets NXDOMAIN and a record."""
    probes, records, seen, asked = run
    assert probes["dns_allowed"][0]["rcode"] == 0
    assert probes["dns_allowed"][0]["addrs"] == [UPSTREAM_IP]
    assert probes["allowed_by_dns"][0]["text"] == "HTTP/1.1 200 OK"
    assert "api.test" in asked
    assert probes["dns_exfil"][0]["rcode"] == 3
    assert not [n for n in asked if "exfil" in n], asked
    recs = denied(records, "dns_name_not_allowed")
    assert recs and recs[0]["host"] == "c2vjcmv0.exfil.canary.test"  # as asked, lower case


def test_a_trickled_http_head_does_not_buy_time(run):
    probes, records, seen, _ = run
    t = probes["trickle"][0]
    assert t["text"].startswith("HTTP/1.1 408") and t["took"] < 20, t
    assert "/allowed/trickle" not in seen


def test_a_clienthello_cut_short_is_refused_at_once(run):
    probes, records, _, _ = run
    h = probes["hello_cut"][0]
    assert h["text"] == "" and h["took"] < 5, h
    assert denied(records, "client_hello_incomplete")


def test_an_address_the_stub_handed_out_stays_the_names(run):
    """creds.test resolves to another address each time: the agent got the
    upstream's, the proxy's own lookup then says OTHER_IP, and the address
    the stub handed the agent for that name is still accepted."""
    probes, records, seen, asked = run
    assert probes["rotating"][0]["addrs"] == [UPSTREAM_IP]
    assert probes["rotating"][0]["text"] == "HTTP/1.1 200 OK"
    assert asked.count("creds.test") >= 2 and "/allowed/rotating" in seen


def test_dns_over_tcp_answers_like_udp(run):
    """TCP/53, whatever the server, reaches the stub (RFC 7766 framing):
    pipelined questions answered in order (A, empty AAAA, TXT refused), the
    answer seeming to come from the server asked, a client that half-closed
    after its question still answered, nothing fenced."""
    probes, records, _, _ = run
    t = probes["dns_tcp"][0]
    assert t.get("peer") == "192.0.2.53", t
    got = [(a["id"], a["rcode"], a["addrs"]) for a in t["answers"]]
    assert got == [(0x2001, 0, [UPSTREAM_IP]), (0x2002, 0, []), (0x2003, 5, [])], got
    h = probes["dns_tcp_half_closed"][0]
    assert [a["addrs"] for a in h.get("answers", [])] == [[UPSTREAM_IP]], h
    assert not [r for r in records if r.get("event") == "bypass" and r.get("dport") == 53]


def test_dns_over_tcp_looks_up_only_names_a_policy_allows(run):
    probes, records, _, asked = run
    assert probes["dns_tcp_allowed"][0]["answers"][0]["addrs"] == [UPSTREAM_IP]
    assert probes["dns_tcp_exfil"][0]["answers"][0]["rcode"] == 3
    assert not [n for n in asked if "exfil-tcp" in n], asked
    recs = [r for r in denied(records, "dns_name_not_allowed") if "exfil-tcp" in r["host"]]
    assert recs and recs[0]["proto"] == "tcp", recs


def test_getaddrinfo_over_tcp_only(run):
    """glibc told to use TCP only (options use-vc): A and AAAA over TCP."""
    g = run[0]["dns_tcp_getaddrinfo"][0]
    assert g["rc"] == 0 and g["out"] == f"['{UPSTREAM_IP}']", g


def test_dns_over_tcp_is_bounded(run):
    """A length over 512 closes the connection unanswered; half a length and
    then nothing is cut at the idle bound (10 s), however long the client
    waits; at most 32 connections at once are served, the rest closed."""
    probes, _, _, _ = run
    big = probes["dns_tcp_oversized"][0]
    assert big.get("got") == "" and big["took"] < 5, big
    idle = probes["dns_tcp_idle"][0]
    assert idle.get("got") == "" and 9 <= idle["took"] < 20, idle
    assert probes["dns_tcp_limit"][0]["answered"] == 32, probes["dns_tcp_limit"]
