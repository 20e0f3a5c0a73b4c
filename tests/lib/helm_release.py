"""The chart deploy/helm/openshell installed on the test node as an operator
would (docs/helm.md): our images imported, `helm install` with the real helm,
the gateway reached from the host through its Service (NodePort on the
node's address, so nothing is routed anywhere but the bridge), and the CLI on
the host driving it with the token read from the chart's Secret. Also small
host-side servers for the sandboxes' egress: an HTTP server that answers and
a TCP canary that counts every connection it accepts. Stdlib only."""
import base64, json, os, socket, subprocess, tempfile, threading, urllib.request

from tests.lib import build, helm_util, nodelib

RELEASE = "osh"


class Release:
    """One helm release: .ns (gateway), .sandbox_ns, .url, .token, .cli()."""

    def __init__(self, node, values, sandbox_labels=None, name=RELEASE):
        self.node, self.c, self.name = node, node.client, name
        self.ns = self.c.create_namespace("osh")
        self.sandbox_ns = self.c.create_namespace("oshsb", labels=sandbox_labels)
        self.helm = helm_util.Helm(node)
        self.home = tempfile.mkdtemp(prefix="openshell-cli-")
        base = {"image": {"tag": "dev", "pullPolicy": "Never"},
                "persistence": {"enabled": False},  # the node has no volume provisioner
                "service": {"type": "NodePort"},
                # The host (the CLI) reaches the API; supervisors always may.
                "networkPolicy": {"ingressFrom": [{"ipBlock": {"cidr": f"{node.host_ip}/32"}}]},
                "server": {"sandboxNamespace": self.sandbox_ns,
                           "defaultImage": nodelib.AGENT_IMAGE,
                           "sandboxImagePullPolicy": "Never"},
                "supervisor": {"image": {"tag": "dev"}}}
        self.values = merge(base, values)
        r = self.helm.run("install", name, helm_util.CHART, "--namespace", self.ns,
                          *self.helm.values_args(self.values), timeout=180)
        if r.returncode != 0:
            self.close()
            raise AssertionError(f"helm install failed:\n{r.stdout}\n{r.stderr}")
        self.pod = nodelib.wait_for(self._gateway_ready, 180, "the gateway Pod Ready")
        svc = self.c.get(f"/api/v1/namespaces/{self.ns}/services/{name}-openshell")
        self.node_port = svc["spec"]["ports"][0]["nodePort"]
        self.url = f"http://{node.host_ip}:{self.node_port}"
        # Ready is the Pod's view; kube-proxy programs the new NodePort a
        # moment later. An operator waits for the same answer.
        nodelib.wait_for(self._answers, 60, f"{self.url}/v1/health through the NodePort")
        sec = self.c.get(f"/api/v1/namespaces/{self.ns}/secrets/{name}-openshell-admin-token")
        self.token = base64.b64decode(sec["data"]["token"]).decode()

    def _gateway_ready(self):
        pods = self.c.get(f"/api/v1/namespaces/{self.ns}/pods",
                          labelSelector="app.kubernetes.io/component=gateway")["items"]
        for p in pods:
            if p["status"].get("phase") == "Failed":
                raise AssertionError(f"gateway Pod failed: {json.dumps(p['status'])[:1500]}")
            if any(x["type"] == "Ready" and x["status"] == "True"
                   for x in p["status"].get("conditions", [])):
                return p
        return None

    def _answers(self):
        try:
            with urllib.request.urlopen(f"{self.url}/v1/health", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def diagnose(self, sid):
        """What a failed wait needs in its message: the Pods' states and logs."""
        out = []
        for comp, p in self.sandbox_pods(sid).items():
            out.append(f"--- {comp} {p['metadata']['name']}: {json.dumps(p['status'])[:1500]}")
            out.append(nodelib.logs(self.c, self.sandbox_ns, p["metadata"]["name"])[-2000:])
        out.append("--- gateway: " + self.gateway_log()[-3000:])
        return "\n".join(out)

    def gateway_log(self):
        return nodelib.logs(self.c, self.ns, self.pod["metadata"]["name"])

    def cli_env(self, token=None):
        """The environment the host's CLI runs in against this release."""
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home,
                "OPENSHELL_GATEWAY": self.url,
                "OPENSHELL_TOKEN": self.token if token is None else token}

    def cli(self, *args, token=None, timeout=300):
        """The host's CLI against this release; a CompletedProcess."""
        env = self.cli_env(token)
        return subprocess.run([build.binary("openshell"), *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=timeout)

    def cli_json(self, *args):
        r = self.cli("-o", "json", *args)
        assert r.returncode == 0, f"openshell {' '.join(args)}: {r.stderr}"
        return json.loads(r.stdout)

    def sandbox_pods(self, sid):
        """{component: Pod} of one sandbox, read from the cluster itself."""
        items = self.c.get(f"/api/v1/namespaces/{self.sandbox_ns}/pods",
                           labelSelector=f"openshell.ai/sandbox-id={sid}")["items"]
        return {p["metadata"]["labels"]["openshell.ai/component"]: p for p in items}

    def close(self):
        if not self.node.stopped:
            self.helm.run("uninstall", self.name, "--namespace", self.ns, "--wait", timeout=180)
            for ns in (self.sandbox_ns, self.ns):
                self.c.delete(f"/api/v1/namespaces/{ns}")
        self.helm.close()
        subprocess.run(["rm", "-rf", self.home], check=False)


def merge(a, b):
    """a with b's keys laid over it, recursively for dicts."""
    out = dict(a)
    for k, v in (b or {}).items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def assert_audited(client, ns, pod_name, servers):
    """The supervisor's log (Pod pod_name) holds an allow record for every
    connection to the allowed server and a deny record for the canary."""
    audit = [json.loads(l) for l in nodelib.logs(client, ns, pod_name).splitlines()
             if l.startswith('{"ts":') and '"event"' in l]
    allowed = [a for a in audit if a.get("dport") == servers.allowed_port]
    denied = [a for a in audit if a.get("dport") == servers.canary_port]
    assert allowed and all(a["decision"] == "allow" for a in allowed), audit
    assert denied and all(a["decision"] == "deny" for a in denied), audit


def assert_canary_reachable_unfenced(release, servers, pod_name):
    """Control: an unfenced Pod's direct connection does reach the canary,
    so a canary that saw nothing means the fence held."""
    nodelib.run_to_completion(release.c, release.ns, nodelib.workload_pod(
        pod_name, nodelib.sh(f"nc -w 5 {release.node.host_ip} {servers.canary_port} "
                             "</dev/null; exit 0")))
    nodelib.wait_for(lambda: servers.canary_hits, 30, "the control's connection at the canary")


class HostServers:
    """On the node's host address: `allowed` answers HTTP with BODY, `canary`
    accepts TCP and counts connections (nothing else is done with them)."""
    BODY = b"allowed-upstream-answer\n"

    def __init__(self, host_ip):
        self.host_ip = host_ip
        self.canary_hits = []
        self.allowed_hits = []
        self._socks = []
        self.allowed_port = self._serve(self._answer)
        self.canary_port = self._serve(self._count)

    def _serve(self, handle):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host_ip, 0))
        s.listen(64)
        self._socks.append(s)

        def loop():
            while True:
                try:
                    conn, peer = s.accept()
                except OSError:
                    return
                threading.Thread(target=handle, args=(conn, peer), daemon=True).start()
        threading.Thread(target=loop, daemon=True).start()
        return s.getsockname()[1]

    def _answer(self, conn, peer):
        with conn:
            conn.settimeout(10)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
            except OSError:
                return
            self.allowed_hits.append((peer[0], data.split(b"\r\n", 1)[0].decode(errors="replace")))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                         % (len(self.BODY), self.BODY))

    def _count(self, conn, peer):
        self.canary_hits.append(peer[0])
        conn.close()

    def close(self):
        for s in self._socks:
            s.close()
