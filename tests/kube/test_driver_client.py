# The driver's REST client against the real apiserver, as the gateway hosts
# it: client-certificate and bearer-token kubeconfigs (YAML and JSON),
# in-cluster credentials, API errors (403 RBAC, 401, 422 validation) reaching
# the API caller readably, configuration precedence (--check-config) and the
# Pod watch.
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


def bind_role(kube, ns, user, verbs):
    """A Role in ns with only `verbs` on the sandbox kinds, bound to user."""
    name = f"drv-ro-{uid()}"
    kube.client.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", {
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["pods", "services", "secrets", "events",
                                                    "persistentvolumeclaims"], "verbs": verbs},
                  {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
                   "verbs": verbs}]})
    kube.client.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]})

    def allowed():
        review = kube.client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "resourceAttributes": {"namespace": ns, "verb": verbs[0],
                                                          "resource": "pods"}}})
        return review["status"].get("allowed")
    poll(allowed, 30, f"Role for {user} in effect")


def test_client_certificate_kubeconfig_and_rbac_denial(kube, drv, tmp_path):
    cn = f"nobody-{uid()}"
    crt, key = user_cert(kube, tmp_path, cn)
    drv.kubeconfig = yaml_kubeconfig(tmp_path / "cert.yaml", kube.server, kube.client.ca_file,
                                     f"    client-certificate-data: {b64(crt)}\n"
                                     f"    client-key-data: {b64(key)}\n")
    # No rights at all: the start-up reconcile cannot list, and the gateway
    # refuses to start with the API's words.
    rc, out = drv.g.start_fails(kubeconfig=drv.kubeconfig)
    assert rc != 0 and "HTTP 403 Forbidden" in out, out
    assert f'User "{cn}" cannot list resource "pods"' in out, out
    # Read-only rights: the gateway runs; a create ends in Error with the
    # API's words for the first call it may not make (the supervisor Secret's
    # patch runs off the loop and only logs; the anchor Secret's create fails).
    bind_role(kube, drv.ns, cn, ["get", "list", "watch"])
    st, b = drv.create("rb1")
    assert st == 201, b
    row = poll(lambda: (r := drv.get("rb1")) and r["phase"] == "Error" and r, 30, "rb1 in Error")
    assert "HTTP 403 Forbidden" in row["message"], row
    assert f'User "{cn}" cannot create resource "secrets"' in row["message"], row
    assert "anchor Secret" in row["message"], row
    assert all(not v for v in drv.all_objects("rb1").values())
    # With patch too, the first object it may not create: the anchor.
    bind_role(kube, drv.ns, cn, ["patch"])
    st, b = drv.create("rb1b")
    assert st == 201 and b["phase"] == "Error", b
    assert f'User "{cn}" cannot create resource' in b["message"], b
    assert "anchor Secret" in b["message"], b
    assert all(not v for v in drv.all_objects("rb1b").values())
    # Control: the same certificate works once RBAC grants it the namespace.
    bind_admin(kube, drv.ns, {"kind": "User", "name": cn, "apiGroup": "rbac.authorization.k8s.io"})
    st, b = drv.create("rb2")
    assert st == 201 and b["phase"] == "Provisioning", b
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
    st, b = drv.create("tk1")
    assert st == 201 and b["phase"] == "Provisioning", b
    assert set(drv.pods("tk1")) == {"workload", "supervisor"}
    # A token the apiserver does not accept: 401, said plainly.
    cfg["users"][0]["user"]["token"] = "not-a-valid-token"
    (tmp_path / "bad.json").write_text(json.dumps(cfg))
    drv.stop_gateway()
    rc, out = drv.g.start_fails(kubeconfig=str(tmp_path / "bad.json"))
    assert rc != 0 and "HTTP 401 Unauthorized" in out, out
    rc, _, err = drv.g.check_config(kubeconfig=str(tmp_path / "bad.json"))
    assert rc == 1 and "HTTP 401 Unauthorized" in err, err


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
    drv.extra_env = env
    st, b = drv.create("ic1")
    assert st == 201 and b["phase"] == "Provisioning", b
    assert set(drv.pods("ic1")) == {"workload", "supervisor"}
    assert drv.request("GET", "/v1/gateway/status")[1]["kubernetes"]["runtime_classes"] == []
    # Control: without the in-cluster variables there is nothing to use, and
    # the gateway refuses to start rather than run without its driver.
    drv.stop_gateway()
    env.pop("KUBERNETES_SERVICE_HOST")
    rc, out = drv.g.start_fails(env)
    assert rc != 0 and "no Kubernetes credentials" in out, (rc, out)
    rc, rep, err = drv.g.check_config(extra_env=env)
    assert rc == 1 and "no Kubernetes credentials" in err, (rc, rep, err)


def test_validation_error_reaches_the_api_caller(kube, drv):
    # Not checked by the driver: the apiserver's validation says what is wrong.
    drv.configure(workspace_storage_size="1Gi", workspace_storage_class="Not_A_Valid_Class")
    st, b = drv.create("v1")
    assert st == 201 and b["phase"] == "Error", b
    assert "HTTP 422 Invalid" in b["message"] and "spec.storageClassName" in b["message"], b
    assert f"PersistentVolumeClaim (workspace) {drv.oname('v1', '-workspace')}" in b["message"], b
    assert all(not v for v in drv.all_objects("v1").values()), "rolled back"
    # The CLI shows the same words.
    got = drv.g.cli("sandbox", "get", "v1").stdout
    assert "HTTP 422 Invalid" in got, got
    drv.configure(workspace_storage_size="1Gi", workspace_storage_class="valid-class")  # control
    st, b = drv.create("v2")
    assert st == 201 and b["phase"] == "Provisioning", b


def test_unsupported_kubeconfig_auth_is_refused(kube, drv, tmp_path):
    drv.kubeconfig = yaml_kubeconfig(tmp_path / "exec.yaml", kube.server, kube.client.ca_file,
                                     "    exec:\n      command: /bin/true\n")
    rc, out = drv.g.start_fails(kubeconfig=drv.kubeconfig)
    assert rc != 0 and "'exec' authentication is not supported" in out, (rc, out)
    cfg = (tmp_path / "exec.yaml").read_text().replace("server:", "insecure-skip-tls-verify: true\n    server:")
    (tmp_path / "skip.yaml").write_text(cfg)
    rc, out = drv.g.start_fails(kubeconfig=str(tmp_path / "skip.yaml"))
    assert rc != 0 and "insecure-skip-tls-verify is not supported" in out, (rc, out)
    rc, _, err = drv.g.check_config(kubeconfig=str(tmp_path / "skip.yaml"))
    assert rc == 1 and "insecure-skip-tls-verify is not supported" in err, err
    # Control: the cluster's own kubeconfig serves.
    drv.kubeconfig = None
    assert drv.create("e3")[0] == 201


def test_config_precedence_cli_over_env_over_file(kube, drv, tmp_path):
    other = kube.client.create_namespace("prec")
    # file says drv.ns; env overrides it; --set overrides env.
    env = {"OPENSHELL_DRIVERS_KUBERNETES_NAMESPACE": "does-not-exist"}
    rc, out, err = drv.g.check_config(extra_env=env)
    assert rc == 1 and out["kubernetes"]["namespace_exists"] is False, (out, err)
    assert "drivers.kubernetes.namespace" in err and "does-not-exist" in err, err
    rc, out, err = drv.g.check_config("--set", f"drivers.kubernetes.namespace={other}",
                                      extra_env=env)
    assert rc == 0 and out["kubernetes"]["namespace_exists"] is True, (out, err)
    assert out["kubernetes"]["namespace"] == other
    # The running gateway reads the same precedence.
    drv.extra_env = env
    drv.g.extra_env = {}
    st, status = drv.request("GET", "/v1/gateway/status")
    assert status["kubernetes"]["namespace"] == "does-not-exist", status
    drv.stop_gateway()
    rc, out, err = drv.g.check_config("--set", "drivers.kubernetes.no_such_key=1")
    assert rc == 1 and "no_such_key" in err, err
    drv.configure(no_such_key="x")  # unknown keys in the file are refused, never ignored
    rc, out, err = drv.g.check_config()
    assert rc == 1 and out["ok"] is False, (out, err)
    assert "unknown key 'no_such_key' in [openshell.drivers.kubernetes]" in err, err
    rc, out = drv.g.start_fails()
    assert rc != 0 and "no_such_key" in out, out


def test_watch_follows_pod_changes_across_compaction(kube, drv):
    """The driver's Pod watch (k8s_watch on the gateway's helper thread): a
    Pod change after etcd compacted its history still reaches reconcile, well
    before the 30 s resync, and the gateway reports its watch healthy."""
    import urllib.request
    from tests.lib.driver_util import mark_ready
    st, b = drv.create("wt1")
    assert st == 201, b
    status = drv.request("GET", "/v1/gateway/status")[1]["kubernetes"]
    assert status["watch"] == "ok" and status["api_calls"] > 0, status
    pod = drv.pod("wt1", "-supervisor")
    rv = int(pod["metadata"]["resourceVersion"])
    req = urllib.request.Request(f"{kube.etcd_url}/v3/kv/compaction", method="POST",
                                 data=json.dumps({"revision": str(rv), "physical": True}).encode())
    urllib.request.urlopen(req, timeout=10).read()
    mark = len(drv.log())
    assert drv.pod("wt1", "-workload")["spec"]["schedulingGates"]  # control: still gated
    mark_ready(kube, drv.ns, pod["metadata"]["name"])
    poll(lambda: not drv.pod("wt1", "-workload")["spec"].get("schedulingGates"), 15,
         "the watch saw the supervisor become Ready")
    assert any(a["action"] == "ungated" for a in drv.reconcile_actions(mark))
    assert drv.request("GET", "/v1/gateway/status")[1]["kubernetes"]["watch"] == "ok"


def test_check_config_names_the_key_and_starts_nothing(kube, drv, tmp_path):
    """--check-config: what is wrong and where, exit 1; OK and exit 0 for a
    good file; neither creates a state dir nor anything in the cluster."""
    import subprocess
    from tests.lib.gateway_util import GATEWAY
    state = tmp_path / "never"
    drv.configure(supervisor_image=None)
    rc, out, err = drv.g.check_config("--set", f"gateway.state_dir={state}")
    assert rc == 1 and "drivers.kubernetes.supervisor_image is required" in err, err
    assert out["ok"] is False and "supervisor_image" in out["error"], out
    drv.configure(default_runtime_class_name="Not_Valid")
    rc, out, err = drv.g.check_config()
    assert rc == 1 and "drivers.kubernetes.default_runtime_class_name" in err, err
    drv.configure()  # control: the same file with valid settings
    rc, out, err = drv.g.check_config("--set", f"gateway.state_dir={state}")
    assert rc == 0 and out["ok"] is True and err.strip().endswith(": OK"), (out, err)
    assert out["driver"] == "kubernetes" and out["kubernetes"]["namespace_exists"] is True, out
    assert not state.exists(), "--check-config must not create the state dir"
    assert kube.client.list(drv.path("Pod"))["items"] == []
    # A default_driver nobody registered: the loader names the key and line.
    bad = tmp_path / "bad.toml"
    bad.write_text('[openshell.gateway]\ndefault_driver = "nomad"\n')
    p = subprocess.run([GATEWAY, "--check-config", str(bad)], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 1 and "bad.toml:2:" in p.stderr, p
    assert "openshell.gateway.default_driver: 'nomad' is not one of" in p.stderr, p
