"""`openshell sandbox logs NAME --audit` and `--since` as a user reads them:
the supervisor's decision records as a table (TIME DECISION REASON HOST:PORT
METHOD PATH BINARY), -o json giving the raw JSON lines in the one audit
schema, and --since DURATION|TIME keeping only what is newer, for the audit
records and for the plain log; a bad --since is a usage error naming it."""

import datetime
import json

import pytest

from tests.lib import build, upstream_gateway
from tests.lib.gateway_util import wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor",
                         "openshell-sandbox")

# upstream.test may be read (L7: GET/HEAD/OPTIONS), nothing else is allowed.
POLICY = """version: 1
network_policies:
  web:
    endpoints:
      - { host: upstream.test, port: 80, protocol: rest, access: read-only }
    binaries:
      - { path: /usr/bin/curl }
"""
AGENT = ("echo agent-started; curl -s -o /dev/null https://denied.test/x; "
         "curl -s -o /dev/null -X POST http://upstream.test/some/path; "
         "curl -s -o /dev/null http://upstream.test/read; sleep 300")


@pytest.fixture
def aud(tmp_path):
    with upstream_gateway.running_sandbox(tmp_path, "aud", POLICY,
                                          ["/bin/sh", "-c", AGENT]) as gw:
        def all_three():
            recs = audit_json(gw)
            return (any(r.get("host") == "denied.test" for r in recs) and
                    any(r.get("method") == "POST" for r in recs) and
                    any(r.get("path") == "/read" for r in recs) and recs)
        wait_for(all_three, 20, what="the three requests in the audit log")
        yield gw


def audit_json(gw, *extra):
    out = gw.cli("-o", "json", "sandbox", "logs", "aud", "--audit", *extra, check=0).stdout
    return [json.loads(line) for line in out.splitlines()]  # every line is JSON


def rfc3339(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def test_audit_table_shows_each_decision_in_columns(aud):
    out = aud.cli("sandbox", "logs", "aud", "--audit", check=0).stdout.splitlines()
    assert out[0].split() == ["TIME", "DECISION", "REASON", "HOST:PORT", "METHOD", "PATH",
                              "BINARY"], out[0]
    tunnel = [l.split() for l in out if "denied.test:443" in l]
    assert tunnel and tunnel[0][1] == "deny" and tunnel[0][-1] == "/usr/bin/curl", out
    assert tunnel[0][0].endswith("Z") and tunnel[0][0][:2] == "20", tunnel  # an RFC 3339 time
    post = [l.split() for l in out if "/some/path" in l]
    assert post and post[0][1] == "deny" and post[0][3:6] == ["upstream.test:80", "POST",
                                                            "/some/path"], out
    read = [l.split() for l in out if "/read" in l]
    assert read and read[0][1] == "allow" and read[0][3:5] == ["upstream.test:80", "GET"], out
    assert any(l.split()[1:3] == ["allow", "policy_loaded"] for l in out[1:]), out


def test_audit_json_is_the_raw_lines_in_one_schema(aud):
    recs = audit_json(aud)
    for r in recs:
        assert {"ts", "sandbox", "event", "decision", "reason"} <= r.keys(), r
        assert isinstance(r["ts"], float), r
    assert {"policy", "http"} <= {r["event"] for r in recs}, recs


def test_since_keeps_only_newer_records(aud):
    recs = audit_json(aud)
    assert audit_json(aud, "--since", "1h") == recs  # everything is newer than an hour
    deny = next(r for r in recs if r.get("method") == "POST")
    newer = audit_json(aud, "--since", rfc3339(deny["ts"] - 0.0005))
    older = [r for r in recs if r["ts"] < deny["ts"] - 0.0005]
    assert deny in newer and not any(r in newer for r in older), (newer, older)
    assert older, "control: some records come before the POST's denial"
    # A time with an offset is the same instant as in UTC.
    later = datetime.datetime.fromtimestamp(deny["ts"] + 3600, datetime.timezone(
        datetime.timedelta(hours=2))).strftime("%Y-%m-%dT%H:%M:%S+02:00")
    assert audit_json(aud, "--since", later) == []
    table = aud.cli("sandbox", "logs", "aud", "--audit", "--since", "2099-01-01T00:00:00Z",
                    check=0).stdout.splitlines()
    assert len(table) == 1 and table[0].startswith("TIME"), table


def test_since_filters_the_plain_log_too(aud):
    assert "agent-started" in aud.cli("sandbox", "logs", "aud", "--since", "10m",
                                      check=0).stdout
    assert "agent-started" in aud.cli("sandbox", "logs", "aud", check=0).stdout  # control
    future = aud.cli("sandbox", "logs", "aud", "--since", "2099-01-01T00:00:00Z", check=0)
    assert future.stdout == "", future.stdout


@pytest.mark.parametrize("bad", ["5x", "10", "m", "2026-13-01T00:00:00Z",
                                 "2026-12-02T01:30:00", "yesterday"])
def test_a_bad_since_is_a_usage_error_naming_it(aud, bad):
    r = aud.cli("sandbox", "logs", "aud", "--audit", "--since", bad)
    assert r.returncode == 2 and f"--since {bad}: expected a duration" in r.stderr, r.stderr
    assert r.stdout == ""
