"""Helpers for the helm test layer: run the real helm (from kube-testenv) on
deploy/helm/openshell with isolated HELM_* homes, split its output into
objects, extract gateway.toml, and run our own TOML decoder and config
loader on it. Nothing here talks to anything but the local test apiserver."""
import json, os, re, shutil, subprocess, tempfile

from tests.lib import build
from tests.lib.build import REPO

CHART = os.path.join(REPO, "deploy", "helm", "openshell")
SEED_VALUES = os.path.join(CHART, "ci", "kata-two-classes-values.yaml")


def build_dir():
    return build.BUILD


def build_binary(name):
    """A binary of ours by its name in tests/lib/build.py; missing, it fails
    the test (never a skip)."""
    path = build.binary(name)
    if not os.access(path, os.X_OK):
        raise AssertionError(f"{path} is missing: build first (OPENSHELL_BUILD={build_dir()})")
    return path


class Helm:
    """The real helm binary with its own cache/config/data homes (never the
    user's) and the test apiserver's kubeconfig."""

    def __init__(self, kube):
        self.bin = kube.helm
        self.home = tempfile.mkdtemp(prefix="openshell-helm-")
        self.env = {**kube.environ(), "KUBECONFIG": kube.kubeconfig,
                    "HELM_CACHE_HOME": f"{self.home}/cache", "HELM_CONFIG_HOME": f"{self.home}/config",
                    "HELM_DATA_HOME": f"{self.home}/data"}

    def close(self):
        shutil.rmtree(self.home, ignore_errors=True)

    def run(self, *args, timeout=120):
        return subprocess.run([self.bin, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=self.env, timeout=timeout)

    def values_args(self, values, values_files=()):
        """-f arguments: each file, then `values` (a dict) written as JSON (valid YAML)."""
        args = []
        for f in values_files:
            args += ["-f", f]
        if values:
            fd, path = tempfile.mkstemp(prefix="values-", suffix=".json", dir=self.home)
            with os.fdopen(fd, "w") as f:
                json.dump(values, f)
            args += ["-f", path]
        return args

    def template(self, values=None, values_files=(), release="t", namespace="osh"):
        r = self.run("template", release, CHART, "--namespace", namespace,
                     *self.values_args(values, values_files))
        assert r.returncode == 0, f"helm template failed:\n{r.stderr}"
        return r.stdout

    def template_error(self, values=None, values_files=()):
        """helm template must fail; returns its stderr."""
        r = self.run("template", "t", CHART, "--namespace", "osh",
                     *self.values_args(values, values_files))
        assert r.returncode != 0, f"helm template accepted {values!r}:\n{r.stdout[:2000]}"
        return r.stderr


def split_docs(rendered):
    """The objects of `helm template` output: dicts with api_version, kind,
    name, namespace (None for cluster-scoped) and the YAML text itself. Our
    templates put these fields at fixed places, which is all this relies on."""
    docs = []
    for text in re.split(r"^---\s*$", rendered, flags=re.M):
        kind = re.search(r"^kind: (\S+)$", text, re.M)
        if not kind:
            continue
        meta = re.search(r"^metadata:\n((?:  .*\n)+)", text, re.M).group(1)
        name = re.search(r"^  name: (\S+)$", meta, re.M).group(1)
        ns = re.search(r"^  namespace: (\S+)$", meta, re.M)
        docs.append({"api_version": re.search(r"^apiVersion: (\S+)$", text, re.M).group(1),
                     "kind": kind.group(1), "name": name,
                     "namespace": ns.group(1) if ns else None, "text": text})
    return docs


def gateway_toml(rendered):
    """gateway.toml from the ConfigMap: the `|` block scalar, de-indented."""
    cm = [d for d in split_docs(rendered) if d["kind"] == "ConfigMap"]
    assert len(cm) == 1, f"expected one ConfigMap, found {len(cm)}"
    lines = cm[0]["text"].splitlines()
    start = lines.index("  gateway.toml: |") + 1
    out = []
    for line in lines[start:]:
        if line.strip() and not line.startswith("    "):
            break
        out.append(line[4:])
    return "\n".join(out).rstrip("\n") + "\n"


def _untag(v):
    """toml-test tagged JSON -> plain Python values."""
    if isinstance(v, list):
        return [_untag(x) for x in v]
    if set(v) == {"type", "value"} and isinstance(v["type"], str):
        conv = {"integer": int, "float": float, "bool": lambda s: s == "true"}
        return conv.get(v["type"], str)(v["value"])
    return {k: _untag(x) for k, x in v.items()}


def toml_decode(text):
    """Decode with our own TOML parser (tools/toml-decoder)."""
    r = subprocess.run([build_binary("toml-decoder")], input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert r.returncode == 0, f"toml-decoder rejected:\n{text}\n{r.stderr.decode()}"
    return _untag(json.loads(r.stdout))


def check_config(toml_text, kubeconfig):
    """Load the file as the gateway does (`openshell-gateway --check-config`:
    its config loader and the Kubernetes driver's settings), which then asks
    the apiserver whether the namespace and configured RuntimeClasses exist.
    Returns (exit code, the report's kubernetes part plus the overall "ok",
    or None, stderr). No OPENSHELL_* variable is passed, so only the file
    speaks."""
    fd, path = tempfile.mkstemp(prefix="gateway-", suffix=".toml")
    with os.fdopen(fd, "w") as f:
        f.write(toml_text)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OPENSHELL_") and not k.startswith("KUBERNETES_")}
    env["KUBECONFIG"] = kubeconfig
    try:
        r = subprocess.run([build_binary("openshell-gateway"), "--check-config", path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                           timeout=60)
    finally:
        os.unlink(path)
    try:
        rep = json.loads(r.stdout) if r.stdout.strip() else None
    except ValueError:
        rep = None
    out = None if rep is None else {**rep.get("kubernetes", {}), "ok": rep["ok"]}
    return r.returncode, out, r.stderr


# kind -> (group/version path prefix, plural). Cluster-scoped when the
# object has no namespace.
PLURALS = {"ConfigMap": "configmaps", "ServiceAccount": "serviceaccounts", "Service": "services",
           "PersistentVolumeClaim": "persistentvolumeclaims", "Deployment": "deployments",
           "NetworkPolicy": "networkpolicies", "Role": "roles", "RoleBinding": "rolebindings",
           "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
           "Secret": "secrets"}


def collection_path(doc):
    prefix = "/api/v1" if doc["api_version"] == "v1" else f"/apis/{doc['api_version']}"
    ns = f"/namespaces/{doc['namespace']}" if doc["namespace"] else ""
    return f"{prefix}{ns}/{PLURALS[doc['kind']]}"


def post_yaml(client, path, yaml_text, **params):
    """POST a YAML body (the apiserver parses YAML itself)."""
    return client.request("POST", path, yaml_text, params or None, "application/yaml")


def as_user(client, user, method, path, body=None, **params):
    """One request impersonating `user` (the admin client may impersonate).
    Returns (HTTP status, decoded body)."""
    conn = client._conn()
    try:
        headers = {"Accept": "application/json", "Impersonate-User": user}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        conn.request(method, client._url(path, params or None), body=data, headers=headers)
        r = conn.getresponse()
        raw = r.read()
    finally:
        conn.close()
    return r.status, (json.loads(raw) if raw else {})
