"""GraphQL endpoints (`protocol: graphql`) through the proxy, against the echo
upstream in the proxy test namespace: each operation is judged by its type,
name and real root fields (aliases and fragments seen through), GET and POST
alike, batches as a whole, persisted queries by their registry entry. The
upstream's log proves a refused request never reached it while its allowed
control did. Refusals are HTTP 403 with a GraphQL error response
({"errors": [...]}) and an audit record."""
import json
import socket
import urllib.parse

import pytest

from tests.lib import build
from tests.lib.proxy_util import module_fixtures

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  github:
    endpoints:
      - host: upstream.test
        port: 80
        allowed_ips: {NET}
        protocol: graphql
        path: /graphql
        graphql_max_body_bytes: 2048
        persisted_queries: allow_registered
        graphql_persisted_queries:
          abc123: {{ operation_type: query, operation_name: Viewer, fields: [viewer] }}
          bad999: {{ operation_type: mutation, fields: [deleteRepository] }}
        rules:
          - allow: {{ operation_type: query, fields: [viewer, "repository*"] }}
          - allow: {{ operation_type: mutation, operation_name: "Issue*", fields: [createIssue] }}
        deny_rules:
          - operation_type: mutation
            fields: [deleteRepository]
      - host: api.test
        port: 80
        allowed_ips: {NET}
        protocol: graphql
        enforcement: audit
        rules:
          - allow: {{ operation_type: query, fields: [viewer] }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


upstream, proxy, clean_log = module_fixtures(POLICY)


def head(body, target="/graphql", host="upstream.test", method="POST", extra=""):
    return (f"{method} http://{host}{target} HTTP/1.1\r\nHost: {host}\r\n"
            f"Content-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()


def parse(out):
    status = int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else 0
    hdrs, _, payload = out.partition(b"\r\n\r\n")
    return status, hdrs.decode("latin-1"), payload


def post(proxy, body, **kw):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return parse(proxy.raw(head(body, **kw) + body))


def get(proxy, params, host="upstream.test"):
    q = params if isinstance(params, str) else urllib.parse.urlencode(params)
    return parse(proxy.raw(f"GET http://{host}/graphql?{q} HTTP/1.1\r\nHost: {host}\r\n"
                           f"Connection: close\r\n\r\n".encode()))


def reached(upstream):
    return [q for q in upstream.requests() if q["path"].startswith("/graphql")]


def denied(status, payload, needle=None):
    assert status == 403, payload
    err = json.loads(payload)
    msg = err["errors"][0]["message"]
    assert needle is None or needle in msg, msg
    return err["errors"][0]


def test_allowed_query_reaches_upstream_byte_for_byte(proxy, upstream):
    body = json.dumps({"query": "query Viewer { viewer { login } }",
                       "operationName": "Viewer", "variables": {}}).encode()
    status, _, _ = post(proxy, body)
    assert status == 200
    [q] = reached(upstream)
    assert q["method"] == "POST" and q["body"].encode() == body
    rec = proxy.last_audit(event="graphql", method="query Viewer")
    assert rec and rec["decision"] == "allow" and rec["policy"] == "github"


def test_denied_mutation_answered_with_graphql_error_and_audited(proxy, upstream):
    status, hdrs, payload = post(proxy, {"query": "mutation { addStar(id: 1) { id } }"})
    e = denied(status, payload, "not permitted")
    assert "X-OpenShell-Policy: github" in hdrs
    assert e["extensions"]["code"] == "POLICY_DENIED"
    assert e["extensions"]["reason"] == "no_matching_rule"
    assert reached(upstream) == []
    rec = proxy.last_audit(event="graphql", method="mutation -")
    assert rec and rec["decision"] == "deny" and rec["reason"] == "no_matching_rule"
    # positive control: the mutation the rules name
    status, _, _ = post(proxy, {"query": "mutation IssueNew { createIssue(t: 1) { id } }"})
    assert status == 200 and len(reached(upstream)) == 1


@pytest.mark.parametrize("query", [
    # an alias named like an allowed field
    "mutation IssueNew { createIssue: deleteRepository(id: 1) { id } }",
    # a named fragment, a fragment chain, inline fragments
    "mutation IssueNew { ...F } fragment F on Mutation { createIssue deleteRepository }",
    "mutation IssueNew { ...A } fragment A on Mutation { ...B } "
    "fragment B on Mutation { x: deleteRepository }",
    "mutation IssueNew { ... on Mutation { ... @skip(if: false) { deleteRepository } } }",
])
def test_aliases_and_fragments_cannot_hide_a_denied_field(proxy, upstream, query):
    status, _, payload = post(proxy, {"query": query})
    e = denied(status, payload, "blocked")
    assert e["extensions"]["rule"] == "deny_rules[0]"
    assert reached(upstream) == []


def test_names_in_comments_and_strings_are_not_fields(proxy, upstream):
    q = ('query Viewer {\n  # deleteRepository\n  viewer(note: "deleteRepository }") '
         '{ login }\n  repository(d: """ mutation { deleteRepository } """) { id }\n}')
    status, _, _ = post(proxy, {"query": q})
    assert status == 200 and len(reached(upstream)) == 1


def test_an_unlisted_field_beside_an_allowed_one_is_refused(proxy, upstream):
    status, _, payload = post(proxy, {"query": "{ viewer { login } organization { id } }"})
    denied(status, payload, "not permitted")
    assert reached(upstream) == []


def test_operation_name_selects_the_judged_operation(proxy, upstream):
    doc = "query Ok { viewer { id } } mutation Bad { deleteRepository(id: 1) { id } }"
    status, _, payload = post(proxy, {"query": doc, "operationName": "Bad"})
    denied(status, payload, "blocked")
    status, _, payload = post(proxy, {"query": doc})  # ambiguous: which one runs?
    denied(status, payload, "no operationName")
    status, _, payload = post(proxy, {"query": doc, "operationName": "Missing"})
    denied(status, payload, "was not found")
    assert reached(upstream) == []
    status, _, _ = post(proxy, {"query": doc, "operationName": "Ok"})
    assert status == 200 and len(reached(upstream)) == 1


@pytest.mark.parametrize("body,needle", [
    (b'{"query":"{ viewer { id } }","query":"mutation { deleteRepository }"}', "duplicate"),
    (b'{"query":"query Ok { viewer }","operationName":"Ok","operationName":"Bad"}',
     "duplicate"),
    (b'{"query":"{ viewer }","variables":{"a":1,"a":2}}', "duplicate"),
    (b'{"query":"{ viewer }","mutation":"x"}', "mutation"),
    (b'{"query":7}', "'query' must be a string"),
    (b'{"query":"{ viewer }","variables":[1]}', "'variables' must be an object"),
    (b'{"query":"{ viewer( }"}', "line 1, column"),
    (b'{"query":"type Query { viewer: Int }"}', "not executable"),
    (b'{}', "no query document"),
    (b'[]', "batch request is empty"),
    (b'"{ viewer }"', "object or array"),
    (b'{"query":"{ viewer }"} {"query":"mutation { deleteRepository }"}', "not valid JSON"),
])
def test_malformed_requests_refused_before_the_rules(proxy, upstream, body, needle):
    status, _, payload = post(proxy, body)
    e = denied(status, payload, needle)
    assert e["extensions"]["reason"] == "graphql_invalid"
    assert reached(upstream) == []


def test_batch_with_one_denied_operation_sends_nothing(proxy, upstream):
    batch = [{"query": "{ viewer { id } }"},
             {"query": "mutation IssueX { deleteRepository(id: 1) { id } }"}]
    status, _, payload = post(proxy, batch)
    assert status == 403
    errs = json.loads(payload)
    assert len(errs) == 2 and "not sent" in errs[0]["errors"][0]["message"]
    assert "blocked" in errs[1]["errors"][0]["message"]
    assert reached(upstream) == []
    status, _, _ = post(proxy, [batch[0], {"query": "mutation IssueX { createIssue { id } }"}])
    assert status == 200 and len(reached(upstream)) == 1


def test_get_queries_judged_like_posts(proxy, upstream):
    status, _, _ = get(proxy, {"query": "{ viewer { id } }"})
    assert status == 200 and len(reached(upstream)) == 1
    upstream.clear()
    status, _, payload = get(proxy, {"query": "{ organization { id } }"})
    denied(status, payload, "not permitted")
    status, _, payload = get(proxy, {"query": "mutation IssueNew { createIssue { id } }"})
    denied(status, payload, "must be sent with POST")
    # a second query parameter smuggling another document
    status, _, payload = get(proxy, "query=%7B+viewer+%7D&query=mutation+%7B+deleteRepository+%7D")
    denied(status, payload, "more than once")
    status, _, payload = get(proxy, "query=%7B+viewer+%7Z")
    denied(status, payload, "percent-escape")
    assert reached(upstream) == []


def test_persisted_queries_judged_by_their_registry_entry(proxy, upstream):
    ext = {"persistedQuery": {"version": 1, "sha256Hash": "abc123"}}
    status, _, _ = post(proxy, {"operationName": "Viewer", "extensions": ext})
    assert status == 200 and len(reached(upstream)) == 1
    upstream.clear()
    status, _, payload = post(proxy, {"extensions": {"persistedQuery": {"sha256Hash": "zzz"}}})
    e = denied(status, payload, "not registered")
    assert e["extensions"]["reason"] == "graphql_persisted_query_unregistered"
    status, _, payload = post(proxy, {"id": "bad999"})  # registered, but its field is denied
    denied(status, payload, "blocked")
    status, _, payload = get(proxy, {"id": "abc123", "queryId": "bad999"})
    denied(status, payload, "must not be combined")
    assert reached(upstream) == []
    status, _, _ = get(proxy, {"documentId": "abc123"})
    assert status == 200 and len(reached(upstream)) == 1


def test_deeply_nested_documents_refused(proxy, upstream):
    deep = "{ viewer " + "{ a " * 140 + "}" * 141
    status, _, payload = post(proxy, {"query": deep})
    denied(status, payload, "deeper than 128")
    ok = "{ viewer " + "{ a " * 60 + "}" * 61
    status, _, _ = post(proxy, {"query": ok})
    assert status == 200


def test_body_over_the_cap_refused(proxy, upstream):
    pad = " " * 2100
    status, _, payload = post(proxy, {"query": "{ viewer { id } }" + pad})
    assert status == 413 and b"exceeds graphql_max_body_bytes 2048" in payload
    assert reached(upstream) == []
    status, _, _ = post(proxy, {"query": "{ viewer { id } }" + " " * 1500})
    assert status == 200


def test_other_methods_chunked_and_compressed_bodies_refused(proxy, upstream):
    status, _, _ = post(proxy, {"query": "{ viewer }"}, method="PUT")
    assert status == 403
    body = json.dumps({"query": "{ viewer }"}).encode()
    out = proxy.raw(b"POST http://upstream.test/graphql HTTP/1.1\r\nHost: upstream.test\r\n"
                    b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                    + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    assert out.startswith(b"HTTP/1.1 411")
    status, _, payload = post(proxy, body, extra="Content-Encoding: gzip\r\n")
    denied(status, payload, "content-encoding")
    status, _, _ = post(proxy, body, target="/admin")
    assert status == 403
    assert upstream.requests() == []


def test_audit_enforcement_forwards_and_records(proxy, upstream):
    status, _, _ = post(proxy, {"query": "mutation { deleteRepository(id: 1) }"},
                        host="api.test", target="/")
    assert status == 200
    rec = proxy.last_audit(event="graphql", method="mutation -")
    assert rec and rec["decision"] == "audit"
    # a malformed document is refused even under audit
    status, _, _ = post(proxy, {"query": "mutation { "}, host="api.test", target="/")
    assert status == 403


def test_every_request_on_a_kept_alive_connection_is_judged(proxy, upstream):
    ok = json.dumps({"query": "{ viewer { id } }"}).encode()
    bad = json.dumps({"query": "mutation IssueX { deleteRepository(id: 1) { id } }"}).encode()
    keep = (lambda b: f"POST http://upstream.test/graphql HTTP/1.1\r\nHost: upstream.test\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(b)}\r\n\r\n".encode() + b)
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    s.sendall(keep(ok))
    first = b""
    while b"\r\n\r\n" not in first:
        first += s.recv(65536)
    assert first.startswith(b"HTTP/1.1 200")
    s.sendall(keep(bad))
    rest = b""
    while b"HTTP/1.1 403" not in rest:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    s.close()
    assert b"HTTP/1.1 403" in rest and b"blocked" in rest
    assert [json.loads(q["body"])["query"] for q in reached(upstream)] == ["{ viewer { id } }"]
