"""NetworkPolicy is enforced on the node (kube-router's firewall): a deny-all
egress policy stops a Pod-to-Pod and a Pod-to-host connection that worked
before it; an allow rule re-opens exactly its port. A canary Pod that no
policy selects keeps reaching every target throughout, so a failure is the
policy's doing, not a server's."""
import http.server, threading

from tests.lib import nodelib
from tests.lib.nodelib import sh, workload_pod

SETTLE_ROUNDS = 3  # consecutive probe rounds that must agree before a state counts

SERVER = sh("mkdir -p /w/www && echo ok > /w/www/index.html && "
            "/bin/busybox httpd -p 8080 -h /w/www && /bin/busybox httpd -f -p 8081 -h /w/www")
# One line per target per round: "<round> <ip:port> ok|fail".
PROBER = sh("i=0; while true; do i=$((i+1)); for t in $TARGETS; do "
            "if printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${t%:*} ${t#*:} 2>/dev/null "
            "| grep -q '^HTTP/1'; then echo \"$i $t ok\"; else echo \"$i $t fail\"; fi; done; "
            "sleep 0.5; done")


class HostServer:
    """An HTTP server on the host's Pod-network address (where test servers listen)."""

    def __init__(self, ip):
        class Ok(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok\n")

            def log_message(self, *a):
                pass
        self.srv = http.server.ThreadingHTTPServer((ip, 0), Ok)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def with_volume(manifest):
    manifest["spec"]["volumes"] = [{"name": "w", "emptyDir": {}}]
    manifest["spec"]["containers"][0]["volumeMounts"] = [{"name": "w", "mountPath": "/w"}]
    return manifest


def rounds(client, ns, name, targets):
    """Complete probe rounds of a prober Pod: [{target: 'ok'|'fail'}, ...] in order."""
    by_round = {}
    for line in nodelib.logs(client, ns, name).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].isdigit():
            by_round.setdefault(int(parts[0]), {})[parts[1]] = parts[2]
    return [by_round[r] for r in sorted(by_round) if set(by_round[r]) == set(targets)]


def settled(client, ns, name, targets, want):
    """The last SETTLE_ROUNDS complete rounds all match want ({target: 'ok'|'fail'})."""
    last = rounds(client, ns, name, targets)[-SETTLE_ROUNDS:]
    return len(last) == SETTLE_ROUNDS and all(r == want for r in last)


def policy(name, egress=None):
    spec = {"podSelector": {"matchLabels": {"role": "client"}}, "policyTypes": ["Egress"]}
    if egress is not None:
        spec["egress"] = egress
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name}, "spec": spec}


def test_deny_all_egress_then_allow_exactly_one_port(node, ns):
    c = node.client
    host = HostServer(node.host_ip)
    try:
        c.post(f"/api/v1/namespaces/{ns}/pods",
               with_volume(workload_pod("srv", SERVER, labels={"app": "srv"})))
        srv_ip = nodelib.wait_phase(c, ns, "srv", ("Running",))["status"]["podIP"]
        open_t, other_t, host_t = f"{srv_ip}:8080", f"{srv_ip}:8081", f"{node.host_ip}:{host.port}"
        targets = [open_t, other_t, host_t]
        for name, role in (("client", "client"), ("canary", "canary")):
            c.post(f"/api/v1/namespaces/{ns}/pods", workload_pod(
                name, PROBER, labels={"role": role}, env={"TARGETS": " ".join(targets)}))
        all_ok = {t: "ok" for t in targets}

        def both(client_want):
            return (settled(c, ns, "client", targets, client_want)
                    and settled(c, ns, "canary", targets, all_ok))

        # Before any policy: every connection works, from both Pods.
        nodelib.wait_for(lambda: both(all_ok), 120, "client and canary reaching every target")

        c.post(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies", policy("deny-egress"))
        nodelib.wait_for(lambda: both({t: "fail" for t in targets}), 120,
                         "deny-all egress to stop the client (canary still reaching all)")

        c.post(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies", policy("allow-8080", [{
            "to": [{"podSelector": {"matchLabels": {"app": "srv"}}}],
            "ports": [{"protocol": "TCP", "port": 8080}]}]))
        nodelib.wait_for(lambda: both({open_t: "ok", other_t: "fail", host_t: "fail"}), 120,
                         "the allow rule to re-open exactly srv:8080")
    finally:
        host.close()
