"""GraphQL inspection from inside a real sandbox: the agent's own HTTP
client sends GraphQL over TLS (terminated by the proxy) and plain HTTP.
Allowed operations reach the upstream; a denied field hidden behind an
alias or a fragment, an operationName selecting the denied operation of a
document, duplicate JSON keys, an over-deep document and an oversized body
are refused with a GraphQL error response and never reach it; a field name
inside a comment or a string changes nothing."""
import json

import pytest

from tests.lib.adv_util import NET

POLICY = f"""  github_graphql:
    endpoints:
      - host: api.test
        port: 443
        allowed_ips: {NET}
        protocol: graphql
        path: /graphql
        graphql_max_body_bytes: 4096
        rules:
          - allow: {{ operation_type: query, fields: [viewer] }}
          - allow: {{ operation_type: mutation, operation_name: "Issue*", fields: [createIssue] }}
        deny_rules:
          - {{ operation_type: mutation, fields: [deleteRepository] }}
      - host: upstream.test
        port: 80
        allowed_ips: {NET}
        protocol: graphql
        rules:
          - allow: {{ operation_type: query, fields: [viewer] }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


@pytest.fixture(scope="module")
def sb(run_sandbox):
    return run_sandbox("graphql", POLICY, ["gq_operations"])


def reached(upstream, prefix="/graphql"):
    return [q for q in upstream.requests() if q["path"].startswith(prefix)]


def graphql_error(r):
    assert r["status"] == 403, r
    return r["json"]["errors"][0]


def test_allowed_operations_reach_the_upstream(sb, upstream):
    r = sb.result("gq_operations")
    for k in ("allowed", "mutation_ok", "comment", "plain_get"):
        assert r[k]["status"] == 200, (k, r[k])
    bodies = [q["body"] for q in reached(upstream) if q["method"] == "POST"]
    assert any("query Viewer" in b for b in bodies)
    assert any("createIssue(title" in b for b in bodies)
    assert any(q["method"] == "GET" for q in reached(upstream))


@pytest.mark.parametrize("case,needle", [
    ("unlisted", "not permitted"),
    ("alias", "blocked"),
    ("fragment", "blocked"),
    ("name_mismatch", "blocked"),
    ("duplicate_keys", "duplicate"),
    ("deep", "deeper than 128"),
    ("plain_get_denied", "not permitted"),
])
def test_refused_operations_never_reach_the_upstream(sb, upstream, case, needle):
    e = graphql_error(sb.result("gq_operations")[case])
    assert needle in e["message"], e
    assert e["extensions"]["code"] == "POLICY_DENIED"
    sent = json.dumps([q["body"] for q in reached(upstream)]) + json.dumps(
        [q["path"] for q in reached(upstream)])
    assert "deleteRepository(id: 1)" not in sent and "organization" not in sent


def test_oversized_body_refused(sb, upstream):
    r = sb.result("gq_operations")["oversized"]
    assert r["status"] == 413 and r["json"]["reason"] == "graphql_body_too_large", r


def test_each_decision_audited(sb):
    assert sb.find(event="graphql", decision="deny", reason="deny_rule")
    assert sb.find(event="graphql", decision="allow", method="query Viewer")
    assert sb.find(event="graphql", decision="deny", reason="graphql_invalid")
