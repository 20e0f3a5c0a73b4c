"""The clients agents use, each inside a real sandbox (openshell-supervisor,
inpod backend, the launcher's filesystem view, Landlock and seccomp, an
unprivileged uid) against a local TLS upstream (TEST-NET-2, in a namespace
of this test: nothing leaves the machine) under a policy that allows GET
/allowed/** and nothing else: for each client the allowed request works with
nothing set up by the agent (the supervisor's environment and view give the
proxy and the trust), and the denied one fails with the reason
(no_matching_rule) in what the client shows.

Clients that honour the proxy variables go through CONNECT; Node 20's fetch
and https (and every client here told to ignore proxies) connect straight
to the address DNS gave them, which the transparent path judges. A client
whose binary is absent is skipped, naming it."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.lib import agent_sandbox, build
from tests.lib.adv_util import UPSTREAM_IP, Upstream

pytestmark = build.needs("openshell-supervisor", "openshell-sandbox")
HERE = os.path.join(build.TESTS, "integration")
CLIENTS = os.path.join(HERE, "clients")
AGENT = os.path.join(HERE, "client_matrix_agent.py")
PY = "/usr/bin/python3"
REASON = "no_matching_rule"
GIT_PORT = 9443
GIT_SERVER = os.path.join(HERE, "git_http_server.py")

NETWORK = f"""
  web:
    endpoints:
      - host: upstream.test
        port: 443
        allowed_ips: ["{UPSTREAM_IP}/32"]
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/allowed/**" }}
      - host: upstream.test
        port: 80
        allowed_ips: ["{UPSTREAM_IP}/32"]
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/allowed/**" }}
      - host: upstream.test
        port: {GIT_PORT}
        allowed_ips: ["{UPSTREAM_IP}/32"]
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/allowed/**" }}
          - allow: {{ method: POST, path: "/allowed/**" }}
    binaries:
      - {{ path: "/usr/bin/curl" }}
      - {{ path: "/usr/bin/git" }}
      - {{ path: "/usr/lib/git-core/**" }}
      - {{ path: "/usr/bin/wget" }}
      - {{ path: "/usr/bin/python3*" }}
      - {{ path: "/usr/bin/node" }}
      - {{ path: "/usr/lib/jvm/**" }}
      - {{ path: "/var/tmp/osmatrix-bin/**" }}
"""

URL = "https://upstream.test"
PY_URLLIB = ("import sys, urllib.request, urllib.error\n"
             "h = [urllib.request.ProxyHandler({})] if sys.argv[2] == 'direct' else []\n"
             "try:\n"
             "    r = urllib.request.build_opener(*h).open(sys.argv[1], timeout=20)\n"
             "    print(r.status, r.read().decode())\n"
             "except urllib.error.HTTPError as e:\n"
             "    print(e.code, e.reason, e.read().decode()); sys.exit(1)\n")
PY_REQUESTS = ("import sys, requests\n"
               "s = requests.Session()\n"
               "s.trust_env = sys.argv[2] != 'direct'\n"
               "if not s.trust_env:\n"
               "    import os; s.verify = os.environ['REQUESTS_CA_BUNDLE']\n"
               "r = s.get(sys.argv[1], timeout=20)\n"
               "print(r.status_code, r.reason, r.text); sys.exit(0 if r.ok else 1)\n")
PY_HTTPX = ("import sys, httpx\n"
            "r = httpx.get(sys.argv[1], timeout=20, trust_env=sys.argv[2] != 'direct',\n"
            "              verify=__import__('os').environ['SSL_CERT_FILE'])\n"
            "print(r.status_code, r.reason_phrase, r.text); sys.exit(0 if r.is_success else 1)\n")
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
BIN = "/var/tmp/osmatrix-bin"  # compiled clients, readable by the agent's uid


def have(binary):
    return shutil.which(binary) is not None


def py_module(name):
    return subprocess.run([PY, "-c", f"import {name}"], capture_output=True).returncode == 0


def compile_clients():
    """Java and Go clients built here (outside the sandbox, caches outside
    the checkout, no downloads); None for a toolchain that is absent."""
    os.makedirs(BIN, exist_ok=True)
    os.chmod(BIN, 0o755)
    built = {}
    if have("javac") and have("java"):
        subprocess.run(["javac", "-d", BIN, os.path.join(CLIENTS, "MatrixClient.java")],
                       check=True, capture_output=True)
        built["java"] = True
    if have("go"):
        env = dict(os.environ, GOCACHE="/var/tmp/osmatrix-gocache", GOPATH="/var/tmp/osmatrix-gopath",
                   GOPROXY="off", GOFLAGS="-mod=mod", GOTOOLCHAIN="local", CGO_ENABLED="0")
        subprocess.run(["go", "build", "-o", os.path.join(BIN, "matrix-client-go"),
                        os.path.join(CLIENTS, "matrix_client.go")],
                       check=True, capture_output=True, env=env, cwd=CLIENTS)
        built["go"] = True
    if have("git"):
        built["git"] = True
    for root, dirs, files in os.walk(BIN):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755)
    return built


def cases(built):
    """name -> (argv builder for a path, why it is skipped or None)."""
    node = os.path.join(CLIENTS, "node_client.js")
    c = {
        "curl": (lambda p: ["curl", "-sS", URL + p], None),
        "curl-direct": (lambda p: ["curl", "-sS", "--noproxy", "*", URL + p], None),
        "curl-http-direct": (lambda p: ["curl", "-sS", "--noproxy", "*",
                                        "http://upstream.test" + p], None),
        "wget": (lambda p: ["wget", "-q", "--content-on-error", "-O", "-", URL + p],
                 None if have("wget") else "wget absent"),
        "wget-direct": (lambda p: ["wget", "-q", "--no-proxy", "--content-on-error", "-O", "-",
                                   URL + p], None if have("wget") else "wget absent"),
        "python-urllib": (lambda p: [PY, "-c", PY_URLLIB, URL + p, "proxy"], None),
        "python-urllib-direct": (lambda p: [PY, "-c", PY_URLLIB, URL + p, "direct"], None),
        "python-requests": (lambda p: [PY, "-c", PY_REQUESTS, URL + p, "proxy"],
                            None if py_module("requests") else "python3-requests absent"),
        "python-requests-direct": (lambda p: [PY, "-c", PY_REQUESTS, URL + p, "direct"],
                                   None if py_module("requests") else "python3-requests absent"),
        "python-httpx": (lambda p: [PY, "-c", PY_HTTPX, URL + p, "proxy"],
                         None if py_module("httpx") else "python3-httpx absent"),
        "python-httpx-direct": (lambda p: [PY, "-c", PY_HTTPX, URL + p, "direct"],
                                None if py_module("httpx") else "python3-httpx absent"),
        "node-fetch": (lambda p: ["node", node, "fetch", URL + p],
                       None if have("node") else "node absent"),
        "node-https": (lambda p: ["node", node, "https", URL + p],
                       None if have("node") else "node absent"),
        "java-httpclient": (lambda p: ["java", "-cp", BIN, "MatrixClient", URL + p],
                            None if built.get("java") else "javac/java absent"),
        # Told to ignore the proxy (later -D flags win over JAVA_TOOL_OPTIONS);
        # the trust store stays.
        "java-httpclient-direct": (lambda p: ["java", "-Dhttps.proxyHost=", "-Dhttp.proxyHost=",
                                              "-cp", BIN, "MatrixClient", URL + p],
                                   None if built.get("java") else "javac/java absent"),
        "go-net-http": (lambda p: [os.path.join(BIN, "matrix-client-go"), URL + p],
                        None if built.get("go") else "go absent"),
        "go-net-http-direct": (lambda p: ["env", *[f"-u{v}" for v in PROXY_VARS],
                                          os.path.join(BIN, "matrix-client-go"), URL + p],
                               None if built.get("go") else "go absent"),
        # git shows only the status of a refusal ("returned error: 403"); the
        # reason is one request away, at policy.local (the agent's harness).
        "git-clone": (lambda p: ["sh", "-c",
                                 f"git clone -q {URL}:{GIT_PORT}{p}/repo.git /tmp/clone{p.replace('/', '-')}"
                                 f" && cat /tmp/clone{p.replace('/', '-')}/README"
                                 " || { curl -sS http://policy.local/v1/denials?last=1; exit 1; }"],
                      None if built.get("git") else "git absent"),
    }
    return c


def git_server(up):
    """Bare repositories /allowed/git-clone/repo.git and /denied/git-clone/repo.git
    (one commit, a README naming the path) behind git http-backend on
    upstream.test:GIT_PORT."""
    root = os.path.join(up.dir, "git")
    for name in ("allowed", "denied"):
        work = os.path.join(root, "work-" + name)
        bare = os.path.join(root, name, "git-clone", "repo.git")
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@test", "-c", "init.defaultBranch=main"]
        subprocess.run(git + ["init", "-q", work], check=True)
        with open(os.path.join(work, "README"), "w") as f:
            f.write(f"/{name}/git-clone\n")
        subprocess.run(git + ["-C", work, "add", "README"], check=True)
        subprocess.run(git + ["-C", work, "commit", "-qm", "one"], check=True)
        subprocess.run(git + ["clone", "-q", "--bare", work, bare], check=True)
    p = subprocess.Popen(["ip", "netns", "exec", up.ns, PY, GIT_SERVER, UPSTREAM_IP, str(GIT_PORT),
                          root, f"{up.dir}/srv.pem", f"{up.dir}/srv.key"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert p.stdout.readline().strip() == "ready"
    up.procs.append(p)


@pytest.fixture(scope="module")
def matrix():
    up = Upstream().start()
    try:
        if have("git"):
            git_server(up)
        built = compile_clients()
        table = cases(built)
        runs = []
        for name, (argv, skip) in table.items():
            if skip:
                continue
            runs.append({"name": name + ":allowed", "argv": argv(f"/allowed/{name}")})
            runs.append({"name": name + ":denied", "argv": argv(f"/denied/{name}")})
        out, records = agent_sandbox.run(
            NETWORK, [PY, AGENT, json.dumps(runs)],
            read_only=[HERE, BIN], tag="mx",
            extra=["--upstream-ca", f"{up.dir}/ca.pem"])
        seen = [r["path"] for r in up.requests()]
        yield {"table": table, "out": {o["name"]: o for o in out}, "records": records,
               "upstream": seen}
    finally:
        up.stop()


NAMES = list(cases({"java": True, "go": True}))


@pytest.mark.parametrize("client", NAMES)
def test_client_allowed_and_denied(matrix, client):
    argv, skip = matrix["table"][client]
    if skip:
        pytest.skip(skip)
    ok, no = matrix["out"][client + ":allowed"], matrix["out"][client + ":denied"]
    assert ok["rc"] == 0 and f"/allowed/{client}" in ok["out"], ok
    # Refused before the upstream, and the client shows why.
    assert no["rc"] != 0 or client.startswith("curl"), no  # curl -sS shows the 403's body
    assert REASON in no["out"], no
    if client == "git-clone":  # its own server: the proxy's records say what passed
        path = "/allowed/git-clone/repo.git/info/refs"
        assert [r for r in matrix["records"] if r.get("path") == path and
                r["decision"] == "allow"]
        prefix = "/denied/git-clone/"
    else:
        assert f"/allowed/{client}" in matrix["upstream"]
        assert f"/denied/{client}" not in matrix["upstream"]
        prefix = f"/denied/{client}"
    denied = [r for r in matrix["records"] if r.get("path", "").startswith(prefix)]
    assert denied and all(r["decision"] == "deny" for r in denied), denied
    # Which way it came: clients told to ignore the proxy, and Node 20 (which
    # does), took the transparent path; the others the proxy's CONNECT.
    allowed = [r for r in matrix["records"] if r.get("event") == "http" and
               (r.get("path") == f"/allowed/{client}" or
                r.get("path", "").startswith(f"/allowed/{client}/"))]
    direct = client.endswith("-direct") or client.startswith("node-")
    assert allowed and all((r.get("detail") == "transparent path (direct connection)") == direct
                           for r in allowed), allowed


def test_no_client_was_fenced(matrix):
    """Every client reached the boundary's proxy: none of them hit the fence
    (a bypass record), DNS included."""
    bypass = [r for r in matrix["records"] if r.get("event") == "bypass"]
    assert bypass == [], bypass
