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

from tests.lib import agent_sandbox, build, matrix_packages
from tests.lib.adv_util import UPSTREAM_IP, Upstream

pytestmark = build.needs("openshell-supervisor", "openshell-sandbox")
HERE = os.path.join(build.TESTS, "integration")
CLIENTS = os.path.join(HERE, "clients")
AGENT = os.path.join(HERE, "client_matrix_agent.py")
PY = "/usr/bin/python3"
REASON = "no_matching_rule"
GIT_PORT = 9443
GIT_SERVER = os.path.join(HERE, "git_http_server.py")
PKG_PORT = 9444  # the PEP 503 index and the npm registry (static files)
PKG_SERVER = os.path.join(HERE, "package_index_server.py")
PKG_URL = f"https://upstream.test:{PKG_PORT}"
# Clients whose upstream is a server of this test's own (git, the package
# index) rather than the echo servers: the proxy's records say what passed.
OWN_SERVER = ("git-clone", "git-push", "pip-install", "npm-install")
# A push to /denied/git-push is refused by a deny rule (reads there are
# allowed), every other denial by the absence of an allow rule.
REASONS = {"git-push": "deny_rule"}

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
          - allow: {{ method: GET, path: "/denied/git-push/**" }}
          - allow: {{ method: POST, path: "/denied/git-push/**" }}
        deny_rules:
          - {{ method: POST, path: "/denied/git-push/**/git-receive-pack" }}
      - host: upstream.test
        port: {PKG_PORT}
        allowed_ips: ["{UPSTREAM_IP}/32"]
        protocol: rest
        rules:
          - allow: {{ method: GET, path: "/allowed/**" }}
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
        # git prints a refused discovery's text/plain body as "remote: ..."
        "git-clone": (lambda p: ["sh", "-c",
                                 f"git clone -q {URL}:{GIT_PORT}{p}/repo.git /tmp/clone{p.replace('/', '-')}"
                                 f" && cat /tmp/clone{p.replace('/', '-')}/README"],
                      None if built.get("git") else "git absent"),
        "git-push": (git_push, None if built.get("git") else "git absent"),
        "pip-install": (pip_install, None if py_module("pip") else "python3-pip absent"),
        "npm-install": (npm_install, None if have("npm") else "npm absent"),
    }
    return c


def kind(p):
    """'allowed' or 'denied': the first component of a case's path."""
    return p.split("/")[1]


def git_push(p):
    """Clone, commit, push back to main and clone again to show it landed; a
    refused push asks policy.local why: git shows no body of a refused POST
    (only "RPC failed; HTTP 403"), whatever its type."""
    d = "/tmp/push-" + kind(p)
    return ["sh", "-c",
            f"git clone -q {URL}:{GIT_PORT}{p}/repo.git {d} && cd {d} && echo {p} > PUSHED"
            " && git add PUSHED && git -c user.name=agent -c user.email=agent@sandbox"
            " commit -qm 'from the sandbox'"
            f" && if git push -q origin HEAD:main; then git clone -q {URL}:{GIT_PORT}{p}/repo.git"
            f" {d}-again && cat {d}-again/PUSHED; else"
            " curl -sS http://policy.local/v1/denials?last=1; exit 1; fi"]


def pip_install(p):
    """pip from the local simple index: the allowed package's wheel is under
    /allowed/pip-install/files, the denied one's under /denied/pip-install."""
    k = kind(p)
    return ["sh", "-c",
            f"{PY} -m pip install --disable-pip-version-check --no-cache-dir -q"
            f" --target /tmp/pip-{k} --index-url {PKG_URL}/allowed/pip-install/simple/"
            f" osmatrix-{k} && PYTHONPATH=/tmp/pip-{k} {PY} -c"
            f" 'import osmatrix_{k} as m; print(m.WHERE)'"]


def npm_install(p):
    """npm from the local registry, likewise (metadata allowed, the denied
    package's tarball under /denied/npm-install)."""
    k = kind(p)
    return ["sh", "-c",
            f"npm install --no-audit --no-fund --no-update-notifier --cache /tmp/npm-cache-{k}"
            f" --prefix /tmp/npm-{k} --registry {PKG_URL}/allowed/npm-install/ osmatrix-{k}"
            f" && node -p 'require(\"/tmp/npm-{k}/node_modules/osmatrix-{k}\")'"]


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
    for name in ("allowed", "denied"):  # pushed to: receive-pack on for anonymous pushes
        subprocess.run(git + ["clone", "-q", "--bare", os.path.join(root, "work-" + name),
                              push_repo(up, name)], check=True)
        subprocess.run(["git", "-C", push_repo(up, name), "config", "http.receivepack", "true"],
                       check=True)
    serve(up, GIT_SERVER, GIT_PORT, root)


def push_repo(up, name):
    return os.path.join(up.dir, "git", name, "git-push", "repo.git")


def pushed(up, name):
    """What main of the push repository holds now: its PUSHED file or None."""
    r = subprocess.run(["git", "-C", push_repo(up, name), "show", "main:PUSHED"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def package_server(up):
    """The simple index and the npm registry on upstream.test:PKG_PORT: for
    each client an allowed and a denied package whose metadata is under
    /allowed and whose artifact is under /allowed or /denied."""
    root = os.path.join(up.dir, "packages")
    for k in ("allowed", "denied"):
        matrix_packages.add_pip_package(root, "/allowed/pip-install/simple",
                                        f"/{k}/pip-install/files", PKG_URL, f"osmatrix_{k}",
                                        f"/{k}/pip-install")
        matrix_packages.add_npm_package(root, "/allowed/npm-install", f"/{k}/npm-install/files",
                                        PKG_URL, f"osmatrix-{k}", f"/{k}/npm-install")
    serve(up, PKG_SERVER, PKG_PORT, root)


def serve(up, server, port, root):
    p = subprocess.Popen(["ip", "netns", "exec", up.ns, PY, server, UPSTREAM_IP, str(port),
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
        package_server(up)
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
               "upstream": seen,
               "pushed": {k: pushed(up, k) for k in ("allowed", "denied")} if have("git") else {}}
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
    assert REASONS.get(client, REASON) in no["out"], no
    if client == "git-clone":  # in git's own words, not from policy.local
        assert f"remote: Forbidden by policy: {REASON}" in no["out"], no
    records = matrix["records"]
    if client in OWN_SERVER:  # the proxy's records say what passed
        assert [r for r in records if r.get("path", "").startswith(f"/allowed/{client}/") and
                r["decision"] == "allow"], client
    else:
        assert f"/allowed/{client}" in matrix["upstream"]
        assert f"/denied/{client}" not in matrix["upstream"]
    if client == "git-push":
        # Cloning from /denied/git-push is allowed; only the push is refused,
        # and it did not land.
        assert matrix["pushed"] == {"allowed": "/allowed/git-push", "denied": None}
        denied = [r for r in records if r.get("path", "").startswith("/denied/git-push/") and
                  r.get("path", "").endswith("/git-receive-pack")]
        assert denied and all(r["decision"] == "deny" and r.get("reason") == "deny_rule"
                              for r in denied), denied
    else:
        denied = [r for r in records if r.get("path", "").startswith(f"/denied/{client}/") or
                  r.get("path") == f"/denied/{client}"]
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
