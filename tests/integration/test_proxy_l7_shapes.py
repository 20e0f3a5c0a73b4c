"""Request shapes an upstream honours but the L7 judgement used not to see,
against real upstreams in the proxy test namespace: method overrides
(headers and `_method`), bodies on GET/HEAD/TRACE, and TLS server names that
differ from the CONNECT host of an L4 tunnel (domain fronting). Each refusal
sits beside the same request without the shape, which goes through, and the
upstream's log proves what reached it."""
import json
import ssl
import struct

import pytest

from tests.lib import build
from tests.lib.proxy_util import UPSTREAM_IP, Proxy, Upstream

pytestmark = build.needs("openshell-proxy")

NET = '["198.51.100.0/24"]'
POLICY = f"""
version: 1
network_policies:
  web:
    endpoints:
      - host: upstream.test
        port: 80
        allowed_ips: {NET}
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/**" }}
          - allow: {{ method: POST, path: "/upload/**" }}
      - host: upstream.test
        port: 443
        allowed_ips: {NET}
        protocol: rest
        access: read-only
      - host: api.test
        port: 80
        allowed_ips: {NET}
        protocol: rest
        enforcement: audit
        access: read-only
      - host: other.test
        port: 8443
        allowed_ips: {NET}
      - host: other.test
        port: 8000
        allowed_ips: {NET}
      - host: {UPSTREAM_IP}
        port: 8443
      - host: full.test
        port: 80
        allowed_ips: {NET}
        protocol: rest
        access: full
      - host: paths.test
        port: 80
        allowed_ips: {NET}
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/public/**" }}
        deny_rules:
          - {{ method: GET, path: "/public/search", query: {{ q: "*secret*" }} }}
    binaries:
      - {{ path: /usr/bin/curl }}
      - {{ path: "/usr/bin/python3*" }}
"""


@pytest.fixture(scope="module")
def upstream():
    up = Upstream().start()
    yield up
    up.stop()


@pytest.fixture(scope="module")
def proxy(upstream):
    with open(f"{upstream.dir}/hosts", "a") as f:
        f.write(f"{UPSTREAM_IP} full.test paths.test\n")
    p = Proxy(upstream, POLICY)
    yield p
    p.stop()


@pytest.fixture(autouse=True)
def clean_log(upstream):
    upstream.clear()


def reached(upstream, path):
    return [q for q in upstream.requests() if q["path"].split("?")[0] == path]


def http(proxy, head, body=b""):
    out = proxy.raw(head.encode() + body)
    status = int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else 0
    _, _, payload = out.partition(b"\r\n\r\n")
    return status, payload


def post(path, *headers, host="upstream.test", method="POST", body=b"{}"):
    extra = "".join(h + "\r\n" for h in headers)
    return (f"{method} http://{host}{path} HTTP/1.1\r\nHost: {host}\r\n{extra}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"), body


# ---- method overrides ----

OVERRIDES = [("X-HTTP-Method-Override: DELETE", ""), ("X-HTTP-Method: DELETE", ""),
             ("X-Method-Override: delete", ""), (None, "?_method=DELETE"),
             (None, "?a=1;%5Fmethod=DEL%45TE"),
             # CGI-style servers (PHP, WSGI, Rack) map '_' and '-' to one name
             ("X_HTTP_METHOD_OVERRIDE: DELETE", ""), ("x-http_method: DELETE", ""),
             # PHP registers `.method` and `[method` as `_method`
             (None, "?.method=DELETE"), (None, "?%5Bmethod=DELETE")]


@pytest.mark.parametrize("header,query", OVERRIDES,
                         ids=["x-http-method-override", "x-http-method", "x-method-override",
                              "query", "query-encoded", "underscores", "mixed-underscore",
                              "php-dot", "php-bracket"])
def test_method_override_judged_as_the_overridden_method(proxy, upstream, header, query):
    head, body = post("/upload/a")  # positive control: the plain POST is allowed
    assert http(proxy, head, body)[0] == 200
    assert len(reached(upstream, "/upload/a")) == 1
    upstream.clear()
    head, body = post("/upload/a" + query, *([header] if header else []))
    status, payload = http(proxy, head, body)
    assert status == 403
    j = json.loads(payload)
    assert j["reason"] == "method_override_denied" and j["method"] == "DELETE"
    assert not reached(upstream, "/upload/a")
    rec = proxy.last_audit(reason="method_override_denied")
    assert rec["decision"] == "deny" and rec["method"] == "DELETE"


def test_override_to_an_allowed_method_passes(proxy, upstream):
    head, body = post("/upload/a", "X-HTTP-Method-Override: GET")
    assert http(proxy, head, body)[0] == 200
    assert reached(upstream, "/upload/a")[0]["headers"]["x-http-method-override"] == "GET"


def test_override_must_be_allowed_as_the_real_method_too(proxy, upstream):
    # DELETE is not allowed; overriding it to GET does not make it so.
    head, body = post("/x", "X-HTTP-Method-Override: GET", method="DELETE")
    status, payload = http(proxy, head, body)
    assert status == 403 and json.loads(payload)["reason"] == "no_matching_rule"
    assert not reached(upstream, "/x")


@pytest.mark.parametrize("header", ["X-Original-URL: /admin", "X-Rewrite-URL: /admin",
                                    "x_original_url: /admin", "X-Original-URI: /admin"])
def test_path_override_headers_refused(proxy, upstream, header):
    """Symfony before 3.4.14, Zend and IIS URL Rewrite route the path these
    name instead of the request line's, which is the one judged."""
    req = (f"GET http://paths.test/public/x HTTP/1.1\r\nHost: paths.test\r\n{header}\r\n"
           "Connection: close\r\n\r\n")
    status, payload = http(proxy, req)
    assert status == 400 and json.loads(payload)["reason"] == "path_override_header"
    named = header.split(":")[0].replace("_", "-").lower()
    assert named in proxy.last_audit(reason="path_override_header")["detail"].lower()
    assert not reached(upstream, "/public/x")
    # Control: the same request without the header goes through.
    assert get(proxy, "/public/x")[0] == 200 and reached(upstream, "/public/x")


# ---- `_method` in form bodies (Rack / Laravel read it from POSTed forms) ----

URLENC = "Content-Type: application/x-www-form-urlencoded"


def multipart(fields, boundary="XyZ-b0undary"):
    parts = b"".join(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n"
                     .encode() + v + b"\r\n" for k, v in fields)
    return f"Content-Type: multipart/form-data; boundary={boundary}", \
        parts + f"--{boundary}--\r\n".encode()


@pytest.mark.parametrize("ctype,body", [
    (URLENC, b"title=x&_method=DELETE"),
    (URLENC, b"a=1;%5Fmethod=del%45te"),
    multipart([("title", b"x"), ("_method", b"DELETE")]),
    multipart([("file", b"A" * 100000), ("_method", b"DELETE")]),  # after a big part
    (URLENC, b"title=x&+_method=DELETE"),  # PHP drops leading spaces of names
    multipart([("title", b"x"), (".method", b"DELETE")]),  # PHP: `.` is `_`
    (None, b"_method=DELETE"),  # Rack reads a POST without Content-Type as a form
    ("Content-Type: application/json\r\nContent-Type: application/x-www-form-urlencoded",
     b"_method=DELETE"),  # two types: an upstream may take the form one
], ids=["urlencoded", "urlencoded-encoded", "multipart", "multipart-after-file",
        "php-leading-space", "php-multipart-dot",
        "no-content-type", "two-content-types"])
def test_form_body_method_override_judged(proxy, upstream, ctype, body):
    head, _ = post("/upload/f", *([ctype] if ctype else []), body=body)
    status, payload = http(proxy, head, body)
    assert status == 403, payload
    j = json.loads(payload)
    assert j["reason"] == "method_override_denied" and j["method"] == "DELETE"
    assert not reached(upstream, "/upload/f")


@pytest.mark.parametrize("ctype,body", [
    (URLENC, b"title=x&method=DELETE"),  # another field, not _method
    (URLENC, b"title=x&a.method=DELETE&_method[x]=DELETE"),  # a_method, an array
    (URLENC, b"_method=GET"),  # an override to an allowed method
    multipart([("title", b"_method=DELETE"), ("note", b"x")]),  # the words as data
    ("Content-Type: text/plain", b'{"_method":"DELETE"}'),  # neither a form nor JSON
], ids=["other-field", "php-other-names", "allowed-override", "multipart-data", "text"])
def test_form_bodies_without_a_denied_override_pass(proxy, upstream, ctype, body):
    head, _ = post("/upload/f", ctype, body=body)
    assert http(proxy, head, body)[0] == 200
    got = reached(upstream, "/upload/f")
    assert len(got) == 1 and got[0]["body"] == body.decode()


# ---- `_method` in JSON bodies (Laravel reads a JSON body as the form) ----

JSON = "Content-Type: application/json"


@pytest.mark.parametrize("ctype,body", [
    (JSON, b'{"title":"x","_method":"DELETE"}'),
    (JSON, b'{"\\u005fmethod":"DEL\\u0045TE"}'),  # escapes decoded
    (JSON, b'{"a":"}\\"{","_METHOD" : "delete"}'),  # brackets and quotes inside strings
    ("Content-Type: application/vnd.api+json", b'{"_method":"DELETE"}'),
    (JSON, b'{"big":"' + b"x" * 300000 + b'","_method":"DELETE"}'),  # after 300 KB
], ids=["plain", "escaped", "strings-with-brackets", "plus-json", "after-300k"])
def test_json_body_method_override_judged(proxy, upstream, ctype, body):
    head, _ = post("/upload/j", ctype, body=body)
    status, payload = http(proxy, head, body)
    assert status == 403, payload[:300]
    j = json.loads(payload)
    assert j["reason"] == "method_override_denied" and j["method"] == "DELETE"
    # The body streams unheld: a long one may have begun upstream, but the
    # upstream never had the override (the connection dropped before it).
    assert all("_method" not in q["body"].lower() and "u005f" not in q["body"]
               for q in reached(upstream, "/upload/j"))


def test_chunked_json_override_split_across_chunks_judged(proxy, upstream):
    body = b'{"t":"x","_met' , b'hod":"DEL', b'ETE"}'
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in body) + b"0\r\n\r\n"
    head = ("POST http://upstream.test/upload/j HTTP/1.1\r\nHost: upstream.test\r\n"
            f"{JSON}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    status, payload = http(proxy, head, chunks)
    assert status == 403 and json.loads(payload)["method"] == "DELETE"
    assert all("_method" not in q["body"] for q in reached(upstream, "/upload/j"))


@pytest.mark.parametrize("body", [
    b'{"a":{"_method":"DELETE"}}',  # nested: not a form parameter
    b'[{"_method":"DELETE"}]',  # not an object
    b'{"note":"_method DELETE","x":"\\"_method\\":\\"DELETE"}',  # the words as data
    b'{"_method":"GET"}',  # an override to an allowed method
], ids=["nested", "array", "as-data", "allowed-override"])
def test_json_bodies_without_a_denied_override_pass(proxy, upstream, body):
    head, _ = post("/upload/jok", JSON, body=body)
    assert http(proxy, head, body)[0] == 200
    got = reached(upstream, "/upload/jok")
    assert len(got) == 1 and got[0]["body"] == body.decode()


def test_json_override_that_is_not_a_method_refused(proxy, upstream):
    for body in (b'{"_method":["DELETE"]}', b'{"_method":1}', b'{"_method":"DE LETE"}'):
        head, _ = post("/upload/j", JSON, body=body)
        status, payload = http(proxy, head, body)
        assert status == 400 and json.loads(payload)["reason"] == "method_override_invalid"
    assert all("_method" not in q["body"] for q in reached(upstream, "/upload/j"))


def test_unreadable_or_unbounded_form_bodies_refused(proxy, upstream):
    ctype, body = multipart([("_method", b"DELETE")])
    bad = body.replace(b"--XyZ-b0undary--", b"")  # unterminated
    head, _ = post("/upload/f", ctype, body=bad)
    status, payload = http(proxy, head, bad)
    assert status == 400 and json.loads(payload)["reason"] == "method_override_invalid"
    big = b"a=" + b"x" * (128 * 1024)
    head, _ = post("/upload/f", URLENC, body=big)
    status, payload = http(proxy, head, big)
    assert status == 413 and json.loads(payload)["reason"] == "form_body_too_large"
    assert not reached(upstream, "/upload/f")
    # Control: the same big body as JSON is not a form: forwarded.
    head, _ = post("/upload/f", "Content-Type: application/json", body=big)
    assert http(proxy, head, big)[0] == 200


def test_form_bodies_are_not_held_where_every_method_is_allowed(proxy, upstream):
    """access: full: no override can change the decision, so a form of any
    size streams through as before (nothing is buffered or refused)."""
    big = b"_method=DELETE&a=" + b"x" * (300 * 1024)
    head, _ = post("/upload/f", URLENC, host="full.test", body=big)
    assert http(proxy, head, big)[0] == 200
    assert len(reached(upstream, "/upload/f")) == 1


@pytest.mark.parametrize("header", ["X-HTTP-Method-Override: DELETE, PUT",
                                    "X-HTTP-Method-Override:", "X-HTTP-Method: GET/1"])
def test_invalid_override_value_refused(proxy, upstream, header):
    head, body = post("/upload/a", header)
    status, payload = http(proxy, head, body)
    assert status == 400 and json.loads(payload)["reason"] == "method_override_invalid"
    assert not reached(upstream, "/upload/a")


def test_override_inside_tls_judged(proxy, upstream):
    assert proxy.curl("https://upstream.test/tls")[0] == 200  # positive control
    code, body = proxy.curl("https://upstream.test/tls", "-H", "X-HTTP-Method-Override: PUT")
    assert code == 403 and json.loads(body)["reason"] == "method_override_denied"
    assert len(reached(upstream, "/tls")) == 1


def test_override_under_audit_enforcement_forwarded_and_recorded(proxy, upstream):
    head, body = post("/aud", "X-HTTP-Method-Override: DELETE", host="api.test", method="GET",
                      body=b"")
    assert http(proxy, head, body)[0] == 200
    assert reached(upstream, "/aud")
    rec = proxy.last_audit(host="api.test", path="/aud")
    assert rec["decision"] == "audit" and rec["reason"] == "method_override_denied"


# ---- method case: judged upper-cased, so forwarded upper-cased ----

def test_lower_case_method_is_forwarded_as_judged(proxy, upstream):
    """`post` is judged as POST; sent on as `post`, a framework that
    upper-cases methods (Symfony) read the form's `_method` that only a
    POST is checked for."""
    head, body = post("/upload/f", URLENC, method="post", body=b"_method=DELETE")
    status, payload = http(proxy, head, body)
    assert status == 403 and json.loads(payload)["reason"] == "method_override_denied"
    assert not reached(upstream, "/upload/f")
    # Control: without the override it goes through, as the POST it was judged.
    head, body = post("/upload/f", URLENC, method="post", body=b"title=x")
    assert http(proxy, head, body)[0] == 200
    assert [q["method"] for q in reached(upstream, "/upload/f")] == ["POST"]


def test_lower_case_head_keeps_the_answers_framing(proxy, upstream):
    """A `head` the upstream treats as HEAD is answered without a body; the
    proxy must frame the answer as HEAD's too, or the next answer on the
    connection is read as this one's body."""
    req = ("head http://upstream.test/h1 HTTP/1.1\r\nHost: upstream.test\r\n\r\n"
           "GET http://upstream.test/h2 HTTP/1.1\r\nHost: upstream.test\r\n"
           "Connection: close\r\n\r\n")
    out = proxy.raw(req.encode())
    assert out.count(b"HTTP/1.1 200") == 2, out
    assert [q["method"] for q in upstream.requests()] == ["HEAD", "GET"]


def test_request_pipelined_behind_an_allowed_one_is_judged_itself(proxy, upstream):
    """One write: an allowed GET, then a DELETE the policy denies. The second
    is parsed and judged on its own once the first is answered."""
    req = ("GET http://upstream.test/pipe-ok HTTP/1.1\r\nHost: upstream.test\r\n"
           "Content-Length: 0\r\n\r\n"
           "DELETE http://upstream.test/pipe-no HTTP/1.1\r\nHost: upstream.test\r\n"
           "Connection: close\r\n\r\n")
    out = proxy.raw(req.encode())
    assert out.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 403" in out, out[:200]
    assert [q["path"] for q in upstream.requests()] == ["/pipe-ok"]


def test_http10_request_without_host_names_the_judged_host(proxy, upstream):
    """Forwarded as HTTP/1.1, a Host-less HTTP/1.0 request would be answered
    from whatever site is the default at a shared address."""
    out = proxy.raw(b"GET http://upstream.test/h10 HTTP/1.0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200"), out[:200]
    assert reached(upstream, "/h10")[0]["headers"]["host"] == "upstream.test"
    # Control: a Host the agent sent (it must agree with the URI) is kept.
    out = proxy.raw(b"GET http://upstream.test/h10b HTTP/1.0\r\nHost: UPSTREAM.test\r\n\r\n")
    assert reached(upstream, "/h10b")[0]["headers"]["host"] == "UPSTREAM.test"


# ---- paths and queries an upstream decodes further than the matcher ----

def get(proxy, target, host="paths.test"):
    return http(proxy, f"GET http://{host}{target} HTTP/1.1\r\nHost: {host}\r\n"
                       "Connection: close\r\n\r\n")


@pytest.mark.parametrize("target,why", [
    ("/public/%C0%AE%C0%AE/admin", "bad_utf8"),  # overlong '.': `..` to lenient decoders
    ("/public/%c0%af..%c0%afadmin", "bad_utf8"),  # overlong '/'
    ("/public/%E0%80%AE%E0%80%AE/admin", "bad_utf8"),
    ("/public/%252e%252e/admin", "double_encoded"),  # `..` after a second decoding
    ("/public/..%252fadmin", "double_encoded"),
    ("/public/%25%32%65%25%32%65/admin", "double_encoded"),
    ("/public/..%5cadmin", "encoded_slash"),
    ("/public/..%2fadmin", "encoded_slash"),
    ("/public/..;/admin", "matrix_param"),
    ("/public/%00/admin", "control_byte"),
    ("/public/..\\admin", "bad_byte"),
], ids=["overlong-dot", "overlong-slash", "overlong-3", "double-dot", "double-slash",
        "double-escaped-digits", "backslash-encoded", "slash-encoded", "matrix", "nul",
        "backslash"])
def test_path_an_upstream_could_read_otherwise_refused(proxy, upstream, target, why):
    status, payload = get(proxy, target)
    assert status == 403, payload
    assert json.loads(payload)["reason"] == "path_rejected"
    assert why in proxy.last_audit(reason="path_rejected")["detail"]
    assert not [q for q in upstream.requests() if "admin" in q["path"]]


def test_paths_that_mean_one_thing_pass_canonical(proxy, upstream):
    """Controls: valid UTF-8, a literal '%' and dot segments are forwarded in
    their canonical form; a `..` that leaves the allowed tree is judged there."""
    for target, sent in [("/public/caf%c3%a9", "/public/caf%C3%A9"),
                         ("/public/100%25", "/public/100%25"),
                         ("/public/a/%2e/./b//c", "/public/a/b/c")]:
        assert get(proxy, target)[0] == 200, target
        assert upstream.requests()[-1]["path"] == sent
    status, payload = get(proxy, "/public/%2e%2e/admin")
    assert status == 403 and json.loads(payload)["reason"] == "no_matching_rule"
    assert not [q for q in upstream.requests() if "admin" in q["path"]]


@pytest.mark.parametrize("query", ["q=secret", "q=top+secret", "q=a&q=secret", "x=1;q=secret",
                                   "q=%73ecret", "+q=secret", "q[]=secret"])
def test_query_deny_sees_every_reading(proxy, upstream, query):
    """`;` separates parameters for Rack < 3 and Python's parse_qs < 3.9.2,
    `+` is a space to frameworks, repeats are all judged, and PHP and Rack
    read ` q` and `q[]` as q."""
    status, payload = get(proxy, "/public/search?" + query)
    assert status == 403 and json.loads(payload)["reason"] == "deny_rule", (query, payload)
    assert not reached(upstream, "/public/search")


def test_query_without_the_denied_value_passes(proxy, upstream):
    for query in ("q=public", "x=secret", "q=a%3Bb", "q=a;x=b"):
        assert get(proxy, "/public/search?" + query)[0] == 200, query
    assert len(reached(upstream, "/public/search")) == 4


# ---- bodies on methods without body semantics ----

BODIES = [
    "GET http://upstream.test/b HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: 5\r\n\r\nhello",
    "GET http://upstream.test/b HTTP/1.1\r\nHost: upstream.test\r\nTransfer-Encoding: chunked\r\n"
    "\r\n5\r\nhello\r\n0\r\n\r\n",
    "HEAD http://upstream.test/b HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: 5\r\n\r\nhello",
    # the desync the rule is for: the "body" is a second request
    "GET http://upstream.test/b HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: 49\r\n\r\n"
    "DELETE /b HTTP/1.1\r\nHost: upstream.test\r\nX: y\r\n\r\n",
]


@pytest.mark.parametrize("req", BODIES, ids=["get-length", "get-chunked", "head", "get-desync"])
def test_body_on_bodyless_method_refused(proxy, upstream, req):
    status, payload = http(proxy, req)
    assert status == 400 and json.loads(payload)["reason"] == "body_without_semantics"
    assert not reached(upstream, "/b")
    assert proxy.last_audit(reason="body_without_semantics")["decision"] == "deny"


def test_bodyless_get_and_post_with_body_pass(proxy, upstream):
    req = "GET http://upstream.test/b HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: 0\r\n" \
          "Connection: close\r\n\r\n"
    assert http(proxy, req)[0] == 200
    head, body = post("/upload/b", body=b"hello")
    assert http(proxy, head, body)[0] == 200
    assert [q["method"] for q in upstream.requests()] == ["GET", "POST"]


# ---- TLS server names on L4 tunnels ----

def tunnel(proxy, target):
    s, head = proxy.connect(target)
    assert head.startswith(b"HTTP/1.1 200"), head
    return s


def tls_get(proxy, upstream, target, sni, path):
    """GET path through an L4 tunnel with this SNI: the echo's JSON or None."""
    ctx = ssl.create_default_context(cafile=f"{upstream.dir}/ca.pem")
    ctx.check_hostname = False  # the certificate names both; the SNI is the test
    s = tunnel(proxy, target)
    try:
        with ctx.wrap_socket(s, server_hostname=sni) as t:
            t.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            out = b""
            while chunk := t.recv(65536):
                out += chunk
            return json.loads(out.partition(b"\r\n\r\n")[2])
    except (ssl.SSLError, ConnectionError, OSError):
        return None


def test_tunnel_sni_must_name_the_connect_host(proxy, upstream):
    assert tls_get(proxy, upstream, "other.test:8443", "other.test", "/sni-ok")["path"] == "/sni-ok"
    assert tls_get(proxy, upstream, "other.test:8443", "upstream.test", "/sni-front") is None
    assert not reached(upstream, "/sni-front")
    rec = proxy.last_audit(reason="sni_mismatch")
    assert rec["decision"] == "deny" and rec["host"] == "other.test"
    assert "upstream.test" in rec["detail"]


def test_tunnel_without_sni_and_to_ip_literal_pass(proxy, upstream):
    assert tls_get(proxy, upstream, "other.test:8443", None, "/no-sni")["path"] == "/no-sni"
    got = tls_get(proxy, upstream, f"{UPSTREAM_IP}:8443", "upstream.test", "/ip")
    assert got["path"] == "/ip"


def test_tunnel_plain_bytes_pass(proxy, upstream):
    s = tunnel(proxy, "other.test:8000")
    with s:
        s.sendall(b"GET /plain HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    assert out.startswith(b"HTTP/1.1 200") and reached(upstream, "/plain")


def client_hello(sni):
    ctx = ssl.create_default_context()
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(i, o, server_hostname=sni)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return o.read()


def refragment(hello, size):
    hs = hello[5:]
    return b"".join(b"\x16\x03\x01" + struct.pack(">H", len(hs[i:i + size])) + hs[i:i + size]
                    for i in range(0, len(hs), size))


@pytest.mark.parametrize("sni,passes", [("upstream.test", False), ("other.test", True)])
def test_fragmented_client_hello_still_checked(proxy, upstream, sni, passes):
    wire = refragment(client_hello(sni), 3)
    s = tunnel(proxy, "other.test:8443")
    with s:
        for i in range(0, len(wire), 100):  # several writes as well as several records
            s.sendall(wire[i:i + 100])
        try:
            first = s.recv(5)
        except ConnectionError:
            first = b""
    # the upstream's ServerHello comes back only when the name was right
    assert first[:1] == (b"\x16" if passes else b"")


def with_extension(hello, ext_type, payload=b"\x00" * 40):
    """The ClientHello record with one more extension at the end of its list."""
    hs = hello[5:]
    body = hs[4:]
    pos = 2 + 32
    pos += 1 + body[pos]  # session id
    pos += 2 + struct.unpack(">H", body[pos:pos + 2])[0]  # cipher suites
    pos += 1 + body[pos]  # compression methods
    exts = body[pos + 2:] + struct.pack(">HH", ext_type, len(payload)) + payload
    body = body[:pos] + struct.pack(">H", len(exts)) + exts
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return hello[:3] + struct.pack(">H", len(hs)) + hs


def first_answer(proxy, target, wire):
    s = tunnel(proxy, target)
    with s:
        s.sendall(wire)
        try:
            return s.recv(5)
        except ConnectionError:
            return b""


@pytest.mark.parametrize("ext_type", [0xfe0d, 0xffce], ids=["ech", "esni"])
def test_encrypted_client_hello_refused_on_checked_tunnels(proxy, upstream, ext_type):
    """ECH's readable server name is only the outer one; the server acts on
    the encrypted inner name, which could be any name it serves."""
    wire = with_extension(client_hello("other.test"), ext_type)
    assert first_answer(proxy, "other.test:8443", wire) == b""
    rec = proxy.last_audit(reason="client_hello_encrypted")
    assert rec["decision"] == "deny" and rec["host"] == "other.test"
    # Control: the same hello with an extension the proxy does not know
    # reaches the upstream, which answers with its ServerHello.
    wire = with_extension(client_hello("other.test"), 0xfe0c)
    assert first_answer(proxy, "other.test:8443", wire)[:1] == b"\x16"


def test_operator_may_allow_sni_mismatch(upstream):
    p = Proxy(upstream, POLICY, extra=("--tunnel-sni", "allow-mismatch"))
    try:
        got = tls_get(p, upstream, "other.test:8443", "upstream.test", "/fronted")
        assert got["path"] == "/fronted"
        assert not p.last_audit(reason="sni_mismatch")
    finally:
        p.stop()
