#!/usr/bin/env python3
"""Peer for bench/cases/kube: the raw-API floor. POSTs the same kinds and
number of objects as one dedicated-supervisor sandbox (anchor Secret, two
NetworkPolicies, two Secrets, supervisor Pod, Service, workload Pod) with
minimal valid bodies over one keep-alive TLS connection, and prints the ms.
usage: _kube_peer.py KUBECONFIG NAMESPACE ID (with the repository root on
PYTHONPATH, as bench/cases/kube sets it)"""
import http.client, json, sys, time

from tests.lib import kubelib


def main():
    kubeconfig, ns, sid = sys.argv[1:4]
    c = kubelib.KubeClient(kubeconfig)
    meta = lambda n: {"name": f"peer-{sid}{n}", "labels": {"peer": sid}}  # noqa: E731
    pod = lambda n: {"metadata": meta(n), "spec": {  # noqa: E731
        "automountServiceAccountToken": False,
        "containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}
    np = lambda n: {"metadata": meta(n), "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}  # noqa: E731
    objs = [("secrets", {"metadata": meta("")}), ("networkpolicies", np("-fence")),
            ("networkpolicies", np("-sup")), ("secrets", {"metadata": meta("-s")}),
            ("secrets", {"metadata": meta("-t")}), ("pods", pod("-sup")),
            ("services", {"metadata": meta("-svc"), "spec": {"ports": [{"port": 3128}]}}),
            ("pods", pod("-wl"))]
    conn = c._conn()
    t0 = time.monotonic()
    for plural, body in objs:
        group = "/apis/networking.k8s.io/v1" if plural == "networkpolicies" else "/api/v1"
        conn.request("POST", f"{group}/namespaces/{ns}/{plural}", body=json.dumps(body),
                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        r = conn.getresponse()
        r.read()
        if r.status != 201:
            sys.exit(f"peer: POST {plural}: HTTP {r.status}")
    print(f"{(time.monotonic() - t0) * 1000:.3f}")
    conn.close()


if __name__ == "__main__":
    main()
