# The driver's REST client against the real apiserver: client-certificate and
# bearer-token kubeconfigs (YAML and JSON), in-cluster credentials, and API
# errors (403 RBAC, 401, 422 validation) reaching the CLI readably.
import base64, json, os, subprocess, urllib.parse

from tests.lib.driver_util import poll, uid


def env_dir(kube):
    return os.path.dirname(kube.client.ca_file)


def b64(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def user_cert(kube, tmp_path, cn):
    """A client certificate for user `cn` (no groups), signed by the testenv CA."""
    d = env_dir(kube)
    key, crt = tmp_path / f"{cn}.key", tmp_path / f"{cn}.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out", str(crt),
                    "-days", "1", "-subj", f"/CN={cn}", "-CA", f"{d}/ca.crt", "-CAkey", f"{d}/ca.key",
                    "-addext", "extendedKeyUsage=clientAuth"], check=True, capture_output=True)
    return str(crt), str(key)


def yaml_kubeconfig(path, server, ca, user_lines):
    """A YAML (not JSON) kubeconfig with inline base64 data, as kubectl writes."""
    path.write_text(f"""apiVersion: v1
kind: Config
current-context: drv
clusters:
- name: c
  cluster:
    server: {server}
    certificate-authority-data: {b64(ca)}
contexts:
- name: drv
  context:
    cluster: c
    user: u
users:
- name: u
  user:
{user_lines}""")
    return str(path)


def bind_admin(kube, ns, subject):
    """Grants `admin` in ns and waits until the authorizer applies it."""
    kube.client.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", {
        "metadata": {"name": f"drv-{uid()}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [subject]})
    if subject["kind"] == "User":
        who = {"user": subject["name"]}
    else:
        sa_ns = subject["namespace"]
        who = {"user": f"system:serviceaccount:{sa_ns}:{subject['name']}",
               "groups": ["system:serviceaccounts", f"system:serviceaccounts:{sa_ns}"]}

    def allowed():
        review = kube.client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {**who, "resourceAttributes": {"namespace": ns, "verb": "create",
                                                   "resource": "pods"}}})
        return review["status"].get("allowed")
    poll(allowed, 30, f"RBAC binding for {subject['name']} in effect")


def test_client_certificate_kubeconfig_and_rbac_denial(kube, drv, tmp_path):
    cn = f"nobody-{uid()}"
    crt, key = user_cert(kube, tmp_path, cn)
    drv.kubeconfig = yaml_kubeconfig(tmp_path / "cert.yaml", kube.server, kube.client.ca_file,
                                     f"    client-certificate-data: {b64(crt)}\n"
                                     f"    client-key-data: {b64(key)}\n")
    r = drv.create("rb1")
    assert r.rc == 1, r
    assert "HTTP 403 Forbidden" in r.stderr and f'User "{cn}" cannot create resource' in r.stderr, r
    assert "anchor Secret" in r.stderr, r
    # Control: the same certificate works once RBAC grants it the namespace.
    bind_admin(kube, drv.ns, {"kind": "User", "name": cn, "apiGroup": "rbac.authorization.k8s.io"})
    r = drv.create("rb2")
    assert r.rc == 0, r
    assert set(drv.pods("rb2")) == {"workload", "supervisor"}


def service_account_token(kube, ns, sa):
    kube.client.post(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": sa}})
    tr = kube.client.post(f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token",
                          {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                           "spec": {"expirationSeconds": 3600}})
    return tr["status"]["token"]


def test_bearer_token_kubeconfig(kube, drv, tmp_path):
    token = service_account_token(kube, drv.ns, "gateway")
    bind_admin(kube, drv.ns, {"kind": "ServiceAccount", "name": "gateway", "namespace": drv.ns})
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "t",
           "clusters": [{"name": "c", "cluster": {"server": kube.server,
                                                  "certificate-authority": kube.client.ca_file}}],
           "contexts": [{"name": "t", "context": {"cluster": "c", "user": "u"}}],
           "users": [{"name": "u", "user": {"token": token}}]}
    (tmp_path / "token.json").write_text(json.dumps(cfg))
    drv.kubeconfig = str(tmp_path / "token.json")
    r = drv.create("tk1")
    assert r.rc == 0, r
    assert set(drv.pods("tk1")) == {"workload", "supervisor"}
    # A token the apiserver does not accept: 401, said plainly.
    cfg["users"][0]["user"]["token"] = "not-a-valid-token"
    (tmp_path / "bad.json").write_text(json.dumps(cfg))
    drv.kubeconfig = str(tmp_path / "bad.json")
    r = drv.create("tk2")
    assert r.rc == 1 and "HTTP 401 Unauthorized" in r.stderr, r


def test_in_cluster_credentials_come_first(kube, drv, tmp_path):
    token = service_account_token(kube, drv.ns, "incluster")
    bind_admin(kube, drv.ns, {"kind": "ServiceAccount", "name": "incluster", "namespace": drv.ns})
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text(token + "\n")
    (sa / "ca.crt").write_text(open(kube.client.ca_file).read())
    (sa / "namespace").write_text(drv.ns)
    u = urllib.parse.urlsplit(kube.server)
    env = {"KUBERNETES_SERVICE_HOST": u.hostname, "KUBERNETES_SERVICE_PORT": str(u.port),
           "OPENSHELL_K8S_SERVICEACCOUNT_DIR": str(sa), "HOME": str(tmp_path),
           # in-cluster wins over an ambient kubeconfig (here: an unreadable one)
           "KUBECONFIG": str(tmp_path / "missing")}
    r = drv.run("create", "--id", "ic1", "--name", "ic1", env=env, kubeconfig=False)
    assert r.rc == 0, r
    assert set(drv.pods("ic1")) == {"workload", "supervisor"}
    # Control: without the in-cluster variables there is nothing to use.
    env.pop("KUBERNETES_SERVICE_HOST")
    r = drv.run("create", "--id", "ic2", "--name", "ic2", env=env, kubeconfig=False)
    assert r.rc == 1 and "no Kubernetes credentials" in r.stderr, r


def test_validation_error_reaches_cli(kube, drv):
    # Not checked by the driver: the apiserver's validation says what is wrong.
    drv.configure(workspace_storage_size="1Gi", workspace_storage_class="Not_A_Valid_Class")
    r = drv.create("v1")
    assert r.rc == 1, r
    assert "HTTP 422 Invalid" in r.stderr and "spec.storageClassName" in r.stderr, r
    assert "PersistentVolumeClaim (workspace) os-v1-workspace" in r.stderr, r
    assert all(not v for v in drv.all_objects("v1").values()), "rolled back"
    drv.configure(workspace_storage_size="1Gi", workspace_storage_class="valid-class")  # control
    assert drv.create("v2").rc == 0


def test_unsupported_kubeconfig_auth_is_refused(kube, drv, tmp_path):
    drv.kubeconfig = yaml_kubeconfig(tmp_path / "exec.yaml", kube.server, kube.client.ca_file,
                                     "    exec:\n      command: /bin/true\n")
    r = drv.create("e1")
    assert r.rc == 1 and "'exec' authentication is not supported" in r.stderr, r
    cfg = (tmp_path / "exec.yaml").read_text().replace("server:", "insecure-skip-tls-verify: true\n    server:")
    (tmp_path / "skip.yaml").write_text(cfg)
    drv.kubeconfig = str(tmp_path / "skip.yaml")
    r = drv.create("e2")
    assert r.rc == 1 and "insecure-skip-tls-verify is not supported" in r.stderr, r


def test_config_precedence_cli_over_env_over_file(kube, drv, tmp_path):
    other = kube.client.create_namespace("prec")
    # file says drv.ns; env overrides it; --set overrides env.
    env = {"OPENSHELL_DRIVERS_KUBERNETES_NAMESPACE": "does-not-exist"}
    r = drv.run("check-config", env=env)
    assert r.rc == 1 and r.json["namespace_exists"] is False, r
    r = drv.run("--set", f"drivers.kubernetes.namespace={other}", "check-config", env=env)
    assert r.rc == 0 and r.json["namespace_exists"] is True, r
    r = drv.run("--set", "drivers.kubernetes.no_such_key=1", "check-config")
    assert r.rc == 1 and "no_such_key" in r.stderr, r
    drv.configure(no_such_key="x")  # unknown keys in the file are refused, never ignored
    r = drv.run("check-config")
    assert r.rc == 1 and "no_such_key" in r.stderr and "configuration" in r.stderr, r


def test_watch_streams_events_and_reports_expiry(kube, drv):
    """k8s_watch on a collection that etcd serves (Events are not watch-cached):
    events stream with their resourceVersion; a compacted one is 410 -> GONE."""
    import urllib.request
    c = kube.client
    path = f"/api/v1/namespaces/{drv.ns}/events"
    ev = c.post(path, {"metadata": {"name": "e"}, "type": "Normal", "reason": "T", "message": "1",
                       "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": drv.ns,
                                          "name": "x"}})
    rv = int(ev["metadata"]["resourceVersion"])
    req = urllib.request.Request(f"{kube.etcd_url}/v3/kv/compaction", method="POST",
                                 data=json.dumps({"revision": str(rv), "physical": True}).encode())
    urllib.request.urlopen(req, timeout=10).read()
    c.patch(f"{path}/e", {"message": "2"})

    ok = drv.run("watch-raw", path, "--for", "2", "--resource-version", str(rv))
    assert ok.rc == 0, ok
    lines = ok.stdout.splitlines()
    assert lines[0] == "MODIFIED e" and lines[-1].startswith("END "), ok
    assert int(lines[-1].split()[1]) > rv  # the resourceVersion moved on with the event

    gone = drv.run("watch-raw", path, "--for", "2", "--resource-version", str(rv - 2))
    assert gone.rc == 0 and gone.stdout.strip() == "GONE", gone
