# The Helm chart deploy/helm/openshell, checked with the real helm and the
# real kube-apiserver of tools/kube-testenv: lint, RuntimeClass placement in
# the rendered gateway.toml (read back by our own TOML parser and config
# loader), values schema, server-side dry-run of every object, Pod Security
# of the gateway Pod, and the reach of its RBAC (by impersonation).
import json, os, tomllib, uuid

import pytest

from tests.lib import helm_util as hu
from tests.lib.kubelib import ApiError

TWO_CLASSES = {"server": {"topology": "dedicated-supervisor",
                          "defaultRuntimeClassName": "kata-workload",
                          "allowedRuntimeClassNames": ["kata-workload", "gvisor"]},
               "supervisor": {"runtimeClassName": "kata-supervisor"}}


@pytest.fixture(scope="module")
def helm(kube):
    h = hu.Helm(kube)
    yield h
    h.close()


@pytest.fixture(scope="module")
def runtime_classes(kube):
    """RuntimeClass objects making the classes used here "available"; ones
    that already exist (another layer in this process) are left alone."""
    created = []
    for name in ("kata-workload", "kata-supervisor", "gvisor"):
        try:
            kube.client.post("/apis/node.k8s.io/v1/runtimeclasses",
                             {"metadata": {"name": name}, "handler": name.replace("-", "")})
            created.append(name)
        except ApiError as e:
            if e.status != 409:
                raise
    yield
    for name in created:
        kube.client.delete(f"/apis/node.k8s.io/v1/runtimeclasses/{name}")


def kube_section(toml_text):
    return tomllib.loads(toml_text)["openshell"]["drivers"]["kubernetes"]


def render_toml(helm, values=None, values_files=(), namespace="osh", release="t"):
    return hu.gateway_toml(helm.template(values, values_files, release=release, namespace=namespace))


# ---- lint -------------------------------------------------------------------

def test_helm_lint_strict_passes_with_defaults_and_the_seed_values(helm):
    for files in ((), (hu.SEED_VALUES,)):
        r = helm.run("lint", "--strict", hu.CHART, *helm.values_args(None, files))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "1 chart(s) linted, 0 chart(s) failed" in r.stdout


def test_helm_lint_fails_on_a_value_the_schema_rejects(helm):
    r = helm.run("lint", "--strict", hu.CHART, *helm.values_args({"server": {"port": "http"}}))
    assert r.returncode != 0
    assert "/server/port" in r.stdout + r.stderr


# ---- RuntimeClass placement in gateway.toml ---------------------------------

def test_two_distinct_classes_render_exactly_those_keys(helm):
    text = render_toml(helm, TWO_CLASSES)
    k = kube_section(text)
    assert k["topology"] == "dedicated-supervisor"
    assert k["default_runtime_class_name"] == "kata-workload"
    assert k["supervisor_runtime_class_name"] == "kata-supervisor"
    assert k["allowed_runtime_class_names"] == ["kata-workload", "gvisor"]
    # Each key exactly once, and no other key mentions a runtime class.
    assert text.count("supervisor_runtime_class_name") == 1
    assert text.count("default_runtime_class_name") == 1
    assert sorted(key for key in k if "runtime_class" in key) == [
        "allowed_runtime_class_names", "default_runtime_class_name",
        "supervisor_runtime_class_name"]


def test_unset_supervisor_class_is_absent_from_the_toml_not_empty(helm):
    # The workload asks for Kata; the supervisor stays on the cluster default.
    for sup in ({}, {"runtimeClassName": ""}):
        values = {"server": {**TWO_CLASSES["server"]}, "supervisor": sup}
        text = render_toml(helm, values)
        k = kube_section(text)
        assert k["default_runtime_class_name"] == "kata-workload"  # positive control
        assert "supervisor_runtime_class_name" not in k
        assert "supervisor_runtime_class_name" not in text
        assert '""' not in text  # no optional setting is ever rendered empty


def test_other_optional_settings_are_omitted_when_empty(helm):
    k = kube_section(render_toml(helm))
    for key in ("default_image", "default_runtime_class_name", "service_account_name",
                "workspace_storage_size", "workspace_storage_class"):
        assert key not in k
    assert k["allowed_runtime_class_names"] == [] and k["dns_peers"] == []
    assert k["namespace"] == "osh"  # the release namespace by default
    assert k["gateway_endpoint"] == "http://t-openshell.osh.svc:17670"


def test_our_toml_parser_reads_the_same_document_as_tomllib(helm):
    values = {**TWO_CLASSES, "server": {
        **TWO_CLASSES["server"], "workspaceStorageSize": "10Gi", "workspaceStorageClass": "fast",
        "sandboxImagePullSecrets": ["regcred"], "defaultImage": "registry.example/agent:1",
        "dnsPeers": [{"namespaceSelector": {"kubernetes.io/metadata.name": "kube-system"},
                      "podSelector": {"k8s-app": "kube-dns"}, "port": 53},
                     {"podSelector": {"odd": 'quote" back\\slash <&> é\ttab'}, "port": 5353}]}}
    text = render_toml(helm, values)
    ours, std = hu.toml_decode(text), tomllib.loads(text)
    assert ours == std
    peers = std["openshell"]["drivers"]["kubernetes"]["dns_peers"]
    assert peers[0] == {"port": 53, "namespace_selector": {"kubernetes.io/metadata.name": "kube-system"},
                        "pod_selector": {"k8s-app": "kube-dns"}}
    assert peers[1] == {"port": 5353, "pod_selector": {"odd": 'quote" back\\slash <&> é\ttab'}}


# ---- the gateway's own loader accepts what the chart renders ----------------

def test_rendered_config_is_accepted_by_the_gateway_config_loader(helm, kube, runtime_classes):
    ns = kube.client.create_namespace("sbx")
    cases = [({}, ()), (TWO_CLASSES, ()), ({}, (hu.SEED_VALUES,)),
             ({"server": {"dnsPeers": [{"podSelector": {"k8s-app": "kube-dns"}, "port": 53}],
                          "workspaceStorageSize": "5Gi", "sandboxUid": 4242, "sandboxGid": 0,
                          "logLevel": "debug", "splitBinaryIdentity": "endpoint-only"}}, ())]
    for values, files in cases:
        merged = {**values, "server": {**values.get("server", {}), "sandboxNamespace": ns}}
        rc, out, err = hu.check_config(render_toml(helm, merged, files), kube.kubeconfig)
        assert rc == 0 and out["ok"] and out["namespace_exists"], f"{values} {files}: {err}"
        assert all(c["available"] for c in out["runtime_classes"])
    rc, out, _ = hu.check_config(render_toml(helm, {**TWO_CLASSES, "server": {
        **TWO_CLASSES["server"], "sandboxNamespace": ns}}), kube.kubeconfig)
    roles = {(c["role"], c["name"]) for c in out["runtime_classes"]}
    assert ("supervisor", "kata-supervisor") in roles
    assert ("workload-default", "kata-workload") in roles


def test_the_loader_would_refuse_an_empty_supervisor_class(helm, kube):
    # Why the chart omits the key: "" is an error to the gateway, not "unset".
    text = render_toml(helm, {"server": {"topology": "dedicated-supervisor"}})
    rc, _, err = hu.check_config(text.replace(
        "[openshell.drivers.kubernetes]\n",
        "[openshell.drivers.kubernetes]\nsupervisor_runtime_class_name = \"\"\n"), kube.kubeconfig)
    assert rc != 0 and "supervisor_runtime_class_name" in err
    rc, _, err = hu.check_config(text.replace(  # an undeclared key is refused too
        "[openshell.drivers.kubernetes]\n", "[openshell.drivers.kubernetes]\nsupervisor_class = \"x\"\n"),
        kube.kubeconfig)
    assert rc != 0 and "supervisor_class" in err


def test_unavailable_supervisor_class_is_reported_at_startup(helm, kube, runtime_classes):
    ns = kube.client.create_namespace("sbx")
    values = {**TWO_CLASSES, "server": {**TWO_CLASSES["server"], "sandboxNamespace": ns},
              "supervisor": {"runtimeClassName": "kata-missing"}}
    rc, out, err = hu.check_config(render_toml(helm, values), kube.kubeconfig)
    assert rc != 0 and not out["ok"]
    sup = [c for c in out["runtime_classes"] if c["role"] == "supervisor"]
    assert sup == [{"name": "kata-missing", "role": "supervisor", "available": False,
                    "error": "not found"}]
    assert "supervisor RuntimeClass 'kata-missing' not found" in err


# ---- values schema ----------------------------------------------------------

@pytest.mark.parametrize("values, where", [
    ({"bogus": 1}, "'bogus' not allowed"),
    ({"server": {"runtimeClassName": "kata"}}, "at '/server'"),
    ({"supervisor": {"runtimeClass": "kata"}}, "at '/supervisor'"),
    ({"server": {"dnsPeers": [{"port": 53, "podselector": {}}]}}, "at '/server/dnsPeers/0'"),
    ({"persistence": {"enable": False}}, "at '/persistence'"),
    ({"server": {"tls": {"secret": "gw-tls"}}}, "at '/server/tls'"),
])
def test_schema_rejects_unknown_keys(helm, values, where):
    err = helm.template_error(values)
    assert where in err and "additional properties" in err, err


@pytest.mark.parametrize("values, where", [
    ({"server": {"sandboxUid": "1000"}}, "/server/sandboxUid"),
    ({"server": {"sandboxUid": 0}}, "/server/sandboxUid"),
    ({"server": {"port": 70000}}, "/server/port"),
    ({"server": {"allowedRuntimeClassNames": "kata-workload"}}, "/server/allowedRuntimeClassNames"),
    ({"server": {"allowedRuntimeClassNames": ["Kata_Workload"]}}, "/server/allowedRuntimeClassNames/0"),
    ({"server": {"topology": "split"}}, "/server/topology"),
    ({"supervisor": {"runtimeClassName": "Kata VM"}}, "/supervisor/runtimeClassName"),
    ({"supervisor": {"runtimeClassName": ["kata"]}}, "/supervisor/runtimeClassName"),
    ({"server": {"defaultRuntimeClassName": 5}}, "/server/defaultRuntimeClassName"),
    ({"persistence": {"enabled": "yes"}}, "/persistence/enabled"),
    ({"server": {"dnsPeers": [{"port": "53"}]}}, "/server/dnsPeers/0/port"),
    ({"server": {"dnsPeers": [{"podSelector": {"a": "b"}}]}}, "/server/dnsPeers/0"),
    ({"server": {"workspaceStorageSize": "ten gigs"}}, "/server/workspaceStorageSize"),
    ({"supervisor": {"image": {"repository": "openshell/supervisor", "tag": "1 2"}}},
     "/supervisor/image/tag"),
    ({"server": {"tls": {"secretName": "GW_TLS"}}}, "/server/tls/secretName"),
    ({"server": {"tls": {"caSecretName": ["gw-ca"]}}}, "/server/tls/caSecretName"),
])
def test_schema_rejects_wrong_types_and_values(helm, values, where):
    err = helm.template_error(values)
    assert f"at '{where}'" in err, err


def test_schema_accepts_the_same_keys_with_valid_values(helm):
    # Positive control for the two tests above.
    helm.template({"server": {"sandboxUid": 1000, "port": 8080, "topology": "dedicated-supervisor",
                              "allowedRuntimeClassNames": ["kata-workload"],
                              "defaultRuntimeClassName": "kata.v2",
                              "dnsPeers": [{"port": 53, "podSelector": {"a": "b"}}],
                              "workspaceStorageSize": "10Gi"},
                   "supervisor": {"runtimeClassName": "kata-supervisor"},
                   "persistence": {"enabled": False}})


@pytest.mark.parametrize("values, message", [
    ({"supervisor": {"runtimeClassName": "kata-supervisor"}},
     "supervisor.runtimeClassName=\"kata-supervisor\" needs server.topology=dedicated-supervisor"),
    ({"server": {"workspaceStorageClass": "fast"}},
     "server.workspaceStorageClass needs server.workspaceStorageSize"),
    ({"server": {"tls": {"caSecretName": "gw-ca"}}},
     "server.tls.caSecretName needs server.tls.secretName"),
    ({"server": {"tls": {"clientCaSecretName": "gw-client-ca"}}},
     "server.tls.clientCaSecretName needs server.tls.secretName"),
    ({"server": {"tls": {"secretName": "gw-tls"}, "gatewayEndpoint": "http://gw:17670"}},
     "must be https:// when server.tls.secretName is set"),
])
def test_inconsistent_values_fail_with_a_clear_message(helm, values, message):
    assert message in helm.template_error(values)


# ---- TLS on the gateway's port ----------------------------------------------

TLS_VALUES = {"secretName": "gw-tls", "clientCaSecretName": "gw-client-ca",
              "caSecretName": "gw-ca"}


def test_tls_values_render_the_gateway_keys_and_an_https_endpoint(helm):
    plain = tomllib.loads(render_toml(helm))
    assert not [k for k in plain["openshell"]["gateway"] if k.startswith("tls_")]  # control
    assert "gateway_ca_secret" not in kube_section(render_toml(helm))
    doc = tomllib.loads(render_toml(helm, {"server": {"tls": TLS_VALUES}}))
    g, k = doc["openshell"]["gateway"], doc["openshell"]["drivers"]["kubernetes"]
    assert (g["tls_cert_file"], g["tls_key_file"], g["tls_client_ca_file"]) == (
        "/etc/openshell-tls/tls.crt", "/etc/openshell-tls/tls.key",
        "/etc/openshell-client-ca/ca.crt")
    assert k["gateway_endpoint"] == "https://t-openshell.osh.svc:17670"
    assert k["gateway_ca_secret"] == "gw-ca"
    # Without a client CA or a gateway CA: TLS alone, nothing rendered empty.
    text = render_toml(helm, {"server": {"tls": {"secretName": "gw-tls"}}})
    doc = tomllib.loads(text)
    assert "tls_client_ca_file" not in doc["openshell"]["gateway"]
    assert "gateway_ca_secret" not in doc["openshell"]["drivers"]["kubernetes"]
    assert '""' not in text
    # An explicit https endpoint is kept as given.
    k = kube_section(render_toml(helm, {"server": {"tls": TLS_VALUES,
                                                   "gatewayEndpoint": "https://gw.example:443"}}))
    assert k["gateway_endpoint"] == "https://gw.example:443"


def test_tls_config_is_accepted_by_the_gateway_config_loader(helm, kube):
    ns = kube.client.create_namespace("sbx")
    text = render_toml(helm, {"server": {"tls": TLS_VALUES, "sandboxNamespace": ns}})
    rc, out, err = hu.check_config(text, kube.kubeconfig)
    assert rc == 0 and out["ok"], err
    # Control: the loader does read gateway_ca_secret (and refuses it for http://).
    rc, _, err = hu.check_config(text.replace('"https://', '"http://'), kube.kubeconfig)
    assert rc != 0 and "gateway_ca_secret" in err, err


def test_tls_deployment_mounts_the_secrets_and_probes_https(helm, kube):
    c = kube.client
    rel_ns = c.create_namespace("gw")
    rendered = helm.template({"server": {"tls": TLS_VALUES}}, namespace=rel_ns)
    dep = [d for d in hu.split_docs(rendered) if d["kind"] == "Deployment"][0]
    out = hu.post_yaml(c, hu.collection_path(dep), dep["text"], dryRun="All")
    spec = out["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols["tls"]["secret"]["secretName"] == "gw-tls"
    assert [i["key"] for i in vols["tls"]["secret"]["items"]] == ["tls.crt", "tls.key"]
    assert vols["tls"]["secret"]["defaultMode"] == 0o400
    assert vols["client-ca"]["secret"]["secretName"] == "gw-client-ca"
    ctr = spec["containers"][0]
    mounts = {m["name"]: m for m in ctr["volumeMounts"]}
    assert mounts["tls"]["mountPath"] == "/etc/openshell-tls" and mounts["tls"]["readOnly"]
    assert mounts["client-ca"]["mountPath"] == "/etc/openshell-client-ca"
    for probe in ("readinessProbe", "livenessProbe"):
        assert ctr[probe]["httpGet"]["scheme"] == "HTTPS", ctr[probe]
    # The gateway CA Secret lives in the sandbox namespace: the gateway never mounts it.
    assert "gw-ca" not in json.dumps(spec)


# ---- server-side dry-run of every rendered object ---------------------------

EXPECTED_KINDS = {"ConfigMap", "ServiceAccount", "Service", "PersistentVolumeClaim", "Deployment",
                  "NetworkPolicy", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
                  "Secret"}  # the admin token


@pytest.mark.parametrize("values, files", [({}, ()), (
    {"networkPolicy": {"ingressFrom": [{"namespaceSelector": {"matchLabels": {"team": "ops"}}}]},
     "server": {"dnsPeers": [{"podSelector": {"k8s-app": "kube-dns"}, "port": 53}]},
     "resources": {"requests": {"cpu": "100m"}}, "tolerations": [{"operator": "Exists"}],
     "imagePullSecrets": ["regcred"], "podAnnotations": {"a": "b"}},
    (hu.SEED_VALUES,)), ({"server": {"tls": TLS_VALUES}}, ())])
def test_every_rendered_object_passes_server_side_dry_run(helm, kube, values, files):
    c = kube.client
    rel_ns, sbx_ns = c.create_namespace("gw"), c.create_namespace("sbx")
    values = {**values, "server": {**values.get("server", {}), "sandboxNamespace": sbx_ns}}
    rendered = helm.template(values, files, namespace=rel_ns)
    docs = hu.split_docs(rendered)
    assert {d["kind"] for d in docs} == EXPECTED_KINDS
    for d in docs:
        out = hu.post_yaml(c, hu.collection_path(d), d["text"], dryRun="All")
        assert out["kind"] == d["kind"] and out["metadata"]["name"] == d["name"]
        if d["kind"] == "ConfigMap":  # the apiserver read the same gateway.toml
            assert out["data"]["gateway.toml"] == hu.gateway_toml(rendered)
        if d["kind"] in ("Role", "RoleBinding"):
            assert out["metadata"]["namespace"] == sbx_ns
        elif d["namespace"]:
            assert out["metadata"]["namespace"] == rel_ns
    # dry-run stored nothing
    with pytest.raises(ApiError) as ei:
        c.get(f"/apis/apps/v1/namespaces/{rel_ns}/deployments/t-openshell")
    assert ei.value.status == 404


def test_dry_run_rejects_a_broken_object(helm, kube):
    # Positive control that the apiserver validates what we post.
    ns = kube.client.create_namespace("gw")
    doc = next(d for d in hu.split_docs(helm.template(namespace=ns)) if d["kind"] == "Service")
    with pytest.raises(ApiError) as ei:
        hu.post_yaml(kube.client, hu.collection_path(doc),
                     doc["text"].replace("targetPort: api", "targetPort: no_such-port!"),
                     dryRun="All")
    assert ei.value.status == 422


# ---- an installed release: Pod Security and RBAC -----------------------------

@pytest.fixture(scope="module")
def release(helm, kube):
    """The chart installed for real (no kubelet: nothing runs) with the gateway
    in a restricted namespace and sandboxes in another one."""
    c = kube.client
    rel_ns = c.create_namespace("gw", {"pod-security.kubernetes.io/enforce": "restricted"})
    sbx_ns = c.create_namespace("sbx")
    name = f"r{uuid.uuid4().hex[:6]}"
    r = helm.run("install", name, hu.CHART, "--namespace", rel_ns,
                 *helm.values_args({"server": {"sandboxNamespace": sbx_ns}}, (hu.SEED_VALUES,)))
    assert r.returncode == 0, r.stderr
    sa = f"system:serviceaccount:{rel_ns}:{name}-openshell"
    yield {"name": name, "ns": rel_ns, "sbx": sbx_ns, "sa": sa}
    helm.run("uninstall", name, "--namespace", rel_ns)


def gateway_pod(kube, release):
    dep = kube.client.get(f"/apis/apps/v1/namespaces/{release['ns']}/deployments/"
                          f"{release['name']}-openshell")
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "gw-probe", "labels": dep["spec"]["template"]["metadata"]["labels"]},
            "spec": dep["spec"]["template"]["spec"]}


def test_gateway_pod_is_admitted_under_restricted_pod_security(kube, release):
    pod = gateway_pod(kube, release)
    c = pod["spec"]["containers"][0]
    assert c["command"] + c["args"] == ["openshell-gateway", "--config", "/etc/openshell/gateway.toml"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["readinessProbe"]["httpGet"] == {"path": "/v1/health", "port": "api", "scheme": "HTTP"}
    assert pod["spec"]["enableServiceLinks"] is False
    assert not [e for e in c.get("env", []) if e["name"].startswith("OPENSHELL_")]
    out = kube.client.post(f"/api/v1/namespaces/{release['ns']}/pods", pod, dryRun="All")
    assert out["spec"]["securityContext"]["runAsNonRoot"] is True
    # Control: the namespace does enforce "restricted".
    del pod["spec"]["securityContext"]["runAsNonRoot"]
    del c["securityContext"]["runAsNonRoot"]
    c["securityContext"]["capabilities"] = {"add": ["NET_ADMIN"]}
    with pytest.raises(ApiError) as ei:
        kube.client.post(f"/api/v1/namespaces/{release['ns']}/pods", pod, dryRun="All")
    assert ei.value.status == 403 and "restricted" in ei.value.body["message"]


def test_installed_config_map_carries_the_seed_placement(kube, release):
    cm = kube.client.get(f"/api/v1/namespaces/{release['ns']}/configmaps/{release['name']}-openshell")
    k = kube_section(cm["data"]["gateway.toml"])
    assert (k["default_runtime_class_name"], k["supervisor_runtime_class_name"]) == (
        "kata-workload", "kata-supervisor")
    assert k["namespace"] == release["sbx"]


def restricted_pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [{"name": "c", "image": "registry.invalid/x:1",
                                     "securityContext": {"allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}}}]}}


def netpol(name):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name}, "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}


def test_rbac_lets_the_gateway_create_sandbox_objects_in_the_sandbox_namespace(kube, release):
    c, sa, sbx = kube.client, release["sa"], release["sbx"]
    for path, body in ((f"/api/v1/namespaces/{sbx}/pods", restricted_pod("p")),
                       (f"/apis/networking.k8s.io/v1/namespaces/{sbx}/networkpolicies", netpol("f")),
                       (f"/api/v1/namespaces/{sbx}/secrets", {"metadata": {"name": "s"}}),
                       (f"/api/v1/namespaces/{sbx}/services",
                        {"metadata": {"name": "v"}, "spec": {"ports": [{"port": 3128}]}})):
        status, out = hu.as_user(c, sa, "POST", path, body, dryRun="All")
        assert status == 201, f"{path}: {status} {out.get('message')}"
    for path in (f"/api/v1/namespaces/{sbx}/pods", f"/api/v1/namespaces/{sbx}/events",
                 "/apis/node.k8s.io/v1/runtimeclasses", f"/api/v1/namespaces/{sbx}"):
        status, out = hu.as_user(c, sa, "GET", path)
        assert status == 200, f"GET {path}: {status} {out.get('message')}"


def test_rbac_denies_pods_elsewhere_and_anything_beyond_the_driver(kube, release):
    c, sa, sbx = kube.client, release["sa"], release["sbx"]
    other = c.create_namespace("other")
    for path, body in ((f"/api/v1/namespaces/{release['ns']}/pods", restricted_pod("p")),
                       (f"/api/v1/namespaces/{other}/pods", restricted_pod("p")),
                       (f"/apis/networking.k8s.io/v1/namespaces/{other}/networkpolicies", netpol("f")),
                       (f"/api/v1/namespaces/{sbx}/configmaps", {"metadata": {"name": "x"}}),
                       (f"/api/v1/namespaces/{sbx}/events",
                        {"metadata": {"name": "e"}, "involvedObject": {"name": "p"}}),
                       ("/apis/node.k8s.io/v1/runtimeclasses",
                        {"metadata": {"name": "evil"}, "handler": "runc"})):
        status, out = hu.as_user(c, sa, "POST", path, body, dryRun="All")
        assert status == 403, f"{path}: {status} {out.get('message')}"
    for path in (f"/api/v1/namespaces/{other}/secrets", f"/api/v1/namespaces/{other}",
                 f"/api/v1/namespaces/{release['ns']}/secrets", "/api/v1/namespaces"):
        status, _ = hu.as_user(c, sa, "GET", path)
        assert status == 403, f"GET {path}: {status}"


@pytest.mark.parametrize("verb, resource, group, allowed", [
    ("patch", "pods", "", True), ("delete", "pods", "", True), ("watch", "pods", "", True),
    ("delete", "persistentvolumeclaims", "", True), ("delete", "networkpolicies", "networking.k8s.io", True),
    ("patch", "secrets", "", True),
    ("update", "pods", "", False), ("update", "secrets", "", False),
    ("patch", "networkpolicies", "networking.k8s.io", False),
    ("deletecollection", "pods", "", False), ("create", "pods/exec", "", False),
    ("get", "pods/log", "", True), ("create", "pods/attach", "", False),
    ("create", "roles", "rbac.authorization.k8s.io", False),
])
def test_rbac_verbs_in_the_sandbox_namespace(kube, release, verb, resource, group, allowed):
    res, _, sub = resource.partition("/")
    status, out = hu.as_user(kube.client, release["sa"], "POST",
                             "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                             {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                              "spec": {"resourceAttributes": {
                                  "namespace": release["sbx"], "verb": verb, "group": group,
                                  "resource": res, "subresource": sub}}})
    assert status == 201, out
    assert out["status"]["allowed"] is allowed, out["status"]


def test_uninstall_removes_the_cluster_scoped_rbac(helm, kube):
    c = kube.client
    ns, sbx = c.create_namespace("gw"), c.create_namespace("sbx")
    r = helm.run("install", "u", hu.CHART, "--namespace", ns,
                 *helm.values_args({"server": {"sandboxNamespace": sbx}}))
    assert r.returncode == 0, r.stderr
    path = f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{ns}-u-openshell"
    assert c.get(path)["rules"][1]["resourceNames"] == [sbx]  # positive control
    r = helm.run("uninstall", "u", "--namespace", ns)
    assert r.returncode == 0, r.stderr
    with pytest.raises(ApiError) as ei:
        c.get(path)
    assert ei.value.status == 404


def test_docs_example_is_what_the_seed_values_render(helm):
    # docs/helm.md shows the seed setup's TOML; keep it true.
    with open(os.path.join(hu.REPO, "docs", "helm.md")) as f:
        doc = f.read()
    shown = doc.split("renders:\n\n```toml\n", 1)[1].split("```", 1)[0]
    text = render_toml(helm, None, (hu.SEED_VALUES,), namespace="openshell", release="openshell")
    assert shown in text
