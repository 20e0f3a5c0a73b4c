"""Stdlib-only helpers for tests against the real control plane of
tools/kube-testenv: start/stop the environment (once per process, shared by
the kube and helm layers) and a small client-cert REST client, KubeClient."""
import base64, http.client, json, os, ssl, subprocess, sys, tempfile, threading, urllib.parse, uuid

from tests.lib.build import REPO

TESTENV = os.path.join(REPO, "tools", "kube-testenv", "kube-testenv")


class TestEnvError(RuntimeError):
    """The environment could not be built or started (never a reason to skip)."""
    __test__ = False  # not a pytest test class


class KubeEnv:
    """A running environment: paths from `kube-testenv env` plus a client."""
    __test__ = False

    def __init__(self, state_path, env_lines):
        self.state_path = state_path
        self.vars = dict(l.split("=", 1) for l in env_lines.splitlines() if "=" in l)
        self.kubeconfig = self.vars["KUBECONFIG"]
        self.server = self.vars["OPENSHELL_KUBE_SERVER"]
        self.etcd_url = self.vars["OPENSHELL_ETCD_URL"]
        self.bin_dir = self.vars["OPENSHELL_TESTENV_BIN"]
        self.helm = os.path.join(self.bin_dir, "helm")
        self.client = KubeClient(self.kubeconfig)

    def environ(self):
        """os.environ plus KUBECONFIG etc., for running helm/kubectl-like tools."""
        return {**os.environ, **self.vars}


def start_env(with_controller_manager=True, timeout=600 * 6, apiserver_args=()):
    """Build (cached) and start an environment; raise TestEnvError on any failure.
    `timeout` covers a cold build of the binaries (about 17 minutes on 2 cores);
    apiserver_args are extra kube-apiserver flags (a test's own environment)."""
    state = os.path.join(tempfile.mkdtemp(prefix="openshell-kube-state-"), "state.json")
    cmd = [sys.executable, TESTENV, "--state", state, "up"]
    if with_controller_manager:
        cmd.append("--with-controller-manager")
    cmd += [f"--apiserver-arg={a}" for a in apiserver_args]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TestEnvError(f"kube-testenv up failed: {e}") from e
    if r.returncode != 0:
        _rmdir_quiet(os.path.dirname(state))  # empty unless 'up' left a state file
        hint = ("\n(the build needs Go >= 1.26 and the Go module proxy)"
                if "build failed" in r.stderr or "Go toolchain" in r.stderr else "")
        raise TestEnvError(f"kube-testenv up failed (exit {r.returncode}){hint}:\n{r.stderr[-6000:]}")
    return KubeEnv(state, r.stdout)


def stop_env(env):
    subprocess.run([sys.executable, TESTENV, "--state", env.state_path, "down"], check=False)
    _rmdir_quiet(os.path.dirname(env.state_path))


def _rmdir_quiet(path):
    try:
        os.rmdir(path)
    except OSError:
        pass


_shared = {"env": None, "refs": 0}
_lock = threading.Lock()


def acquire_shared_env():
    """One environment per test process, however many conftests ask for it."""
    with _lock:
        if _shared["env"] is None:
            _shared["env"] = start_env(with_controller_manager=True)
        _shared["refs"] += 1
        return _shared["env"]


def release_shared_env():
    with _lock:
        _shared["refs"] -= 1
        if _shared["refs"] == 0 and _shared["env"] is not None:
            stop_env(_shared["env"])
            _shared["env"] = None


class ApiError(Exception):
    """An HTTP error from the apiserver; .status is the HTTP code, .body the Status object."""

    def __init__(self, status, body):
        self.status, self.body = status, body
        msg = body.get("message", "") if isinstance(body, dict) else str(body)
        self.reason = body.get("reason", "") if isinstance(body, dict) else ""
        super().__init__(f"HTTP {status} {self.reason}: {msg}")


PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


class KubeClient:
    """Minimal REST client using the kubeconfig's client certificate. Paths are
    raw API paths, e.g. '/api/v1/namespaces/x/configmaps'."""

    def __init__(self, kubeconfig, timeout=30):
        with open(kubeconfig) as f:
            cfg = json.load(f)  # kube-testenv writes JSON (valid YAML) kubeconfigs
        ctx_name = cfg["current-context"]
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
        u = urllib.parse.urlsplit(cluster["server"])
        self.host, self.port, self.timeout = u.hostname, u.port or 443, timeout
        self.ca_file = self._file(cluster, "certificate-authority")
        self.ssl = ssl.create_default_context(cafile=self.ca_file)
        self.ssl.load_cert_chain(self._file(user, "client-certificate"), self._file(user, "client-key"))

    @staticmethod
    def _file(section, key):
        if key in section:
            return section[key]
        fd, path = tempfile.mkstemp(prefix="kubelib-")  # *-data: materialise for ssl
        os.write(fd, base64.b64decode(section[key + "-data"]))
        os.close(fd)
        return path

    def _conn(self, timeout=None):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ssl,
                                           timeout=timeout or self.timeout)

    @staticmethod
    def _url(path, params):
        return path + ("?" + urllib.parse.urlencode(params) if params else "")

    def _send(self, method, path, body, params, content_type):
        """(response, raw body) of one request."""
        conn = self._conn()
        try:
            data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
            headers = {"Accept": "application/json"}
            if data is not None:
                headers["Content-Type"] = content_type
            conn.request(method, self._url(path, params), body=data, headers=headers)
            r = conn.getresponse()
            return r, r.read()
        finally:
            conn.close()

    def text(self, path, **params):
        """GET a plain-text resource (a Pod's log): its body as a string."""
        r, raw = self._send("GET", path, None, params, None)
        if r.status >= 400:
            raise ApiError(r.status, {"message": raw.decode(errors="replace")})
        return raw.decode(errors="replace")

    def request(self, method, path, body=None, params=None, content_type="application/json"):
        r, raw = self._send(method, path, body, params, content_type)
        try:
            out = json.loads(raw) if raw else {}
        except ValueError:
            out = {"message": raw.decode(errors="replace")}
        if r.status >= 400:
            raise ApiError(r.status, out)
        return out

    def get(self, path, **params):
        return self.request("GET", path, params=params)

    def list(self, path, **params):
        return self.request("GET", path, params=params)

    def post(self, path, body, **params):
        return self.request("POST", path, body, params)

    def put(self, path, body, **params):
        return self.request("PUT", path, body, params)

    def patch(self, path, body, patch_type="merge", **params):
        return self.request("PATCH", path, body, params, PATCH_TYPES[patch_type])

    def delete(self, path, body=None, **params):
        return self.request("DELETE", path, body, params)

    def watch(self, path, resource_version=None, timeout_seconds=10, **params):
        """Yield watch events ({'type', 'object'}) until the server ends the watch
        (after timeout_seconds) or the caller stops iterating. An HTTP error
        status raises ApiError; an in-stream error arrives as type 'ERROR'."""
        params = {**params, "watch": "true", "timeoutSeconds": str(timeout_seconds)}
        if resource_version is not None:
            params["resourceVersion"] = str(resource_version)
        conn = self._conn(timeout=timeout_seconds + 15)
        try:
            conn.request("GET", self._url(path, params), headers={"Accept": "application/json"})
            r = conn.getresponse()
            if r.status >= 400:
                raw = r.read()
                raise ApiError(r.status, json.loads(raw) if raw else {})
            while True:
                line = r.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()

    def create_namespace(self, prefix="t", labels=None):
        """Create a uniquely named namespace and its 'default' ServiceAccount (the
        ServiceAccount admission plugin rejects Pods until it exists; the
        controller-manager would create it too, but maybe not yet)."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.post("/api/v1/namespaces",
                  {"metadata": {"name": name, "labels": labels or {}}})
        try:
            self.post(f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}})
        except ApiError as e:
            if e.status != 409:  # AlreadyExists: the controller-manager won the race
                raise
        return name
