"""Helpers for the node layer (tests/node): the node of `kube-testenv up
--node` (one per test process), Pods built like ours, waiting on their
phase/logs/events, and a snapshot of the host state the node may change,
taken independently of the tool's own bookkeeping so that a bug there
cannot hide a leftover. Stdlib only."""
import json, os, subprocess, sys, tempfile, time

from tests.lib import build, kubelib
from tests.lib.build import REPO

TESTENV = kubelib.TESTENV
IMAGES = ("pause", "gateway", "supervisor", "test-agent")
IMAGE_DIR = os.environ.get("OPENSHELL_IMAGES_DIR") or os.path.join(REPO, "build", "images")
AGENT_IMAGE = "openshell/test-agent:dev"
BRIDGE = "osnode0"  # tools/kube-testenv/testenv_host.py
RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted"}


class NodeEnv(kubelib.KubeEnv):
    __test__ = False

    def __init__(self, state_path, env_lines, before):
        super().__init__(state_path, env_lines)
        self.host_ip = self.vars["OPENSHELL_NODE_HOST_IP"]
        self.node_bin = self.vars["OPENSHELL_NODE_BIN"]
        self.dir = os.path.dirname(self.kubeconfig)
        self.before = before  # host_snapshot() taken before 'up'
        self.stopped = False

    def stop(self):
        if not self.stopped:
            self.stopped = True
            kubelib.stop_env(self)


def why_not_runnable():
    """A reason this machine cannot run a node, or None."""
    if os.geteuid() != 0:
        return "the node layer needs root (bridges, netns, cgroups, nftables)"
    return None


def image_archives():
    """Paths of our OCI archives (`make images`); a missing one is an error, not a skip."""
    paths = [os.path.join(IMAGE_DIR, f"openshell-{n}.tar") for n in IMAGES]
    gone = [p for p in paths if not os.path.isfile(p)]
    if gone:
        raise kubelib.TestEnvError(f"image archives missing: {', '.join(gone)} (run `make images`,"
                                   " or point OPENSHELL_IMAGES_DIR at a directory holding them)")
    return paths


def start_node(timeout=600 * 6):
    """Snapshot the host, bring a node up and import our images into it."""
    before = host_snapshot()
    image_archives()
    state = os.path.join(tempfile.mkdtemp(prefix="openshell-kube-state-"), "state.json")
    r = subprocess.run([sys.executable, TESTENV, "--state", state, "up", "--node"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if r.returncode != 0:
        kubelib._rmdir_quiet(os.path.dirname(state))
        raise kubelib.TestEnvError(f"kube-testenv up --node failed (exit {r.returncode}):\n"
                                   f"{r.stderr[-6000:]}")
    env = NodeEnv(state, r.stdout, before)
    r = subprocess.run([sys.executable, TESTENV, "--state", state, "load-images", IMAGE_DIR],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        env.stop()
        raise kubelib.TestEnvError(f"kube-testenv load-images failed:\n{r.stdout[-4000:]}")
    return env


# --- Pods -----------------------------------------------------------------

def workload_pod(name, command, runtime_class=None, image=AGENT_IMAGE, labels=None, gate=None,
                 env=None, token=False, args=None):
    """A Pod shaped like our workload Pod: non-root, no capabilities, no
    privilege escalation, RuntimeDefault seccomp (passes PodSecurity restricted).
    command None keeps the image's entrypoint (args then replace its CMD)."""
    spec = {
        "restartPolicy": "Never", "automountServiceAccountToken": token,
        "terminationGracePeriodSeconds": 1,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "main", "image": image, "imagePullPolicy": "Never",
            **({"command": command} if command is not None else {}),
            **({"args": args} if args is not None else {}),
            "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
            "securityContext": {"allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}},
        }],
    }
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    if gate:
        spec["schedulingGates"] = [{"name": gate}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def sh(script):
    """Command for the test-agent image: busybox's sh (the image's entrypoint shell)."""
    return ["/bin/busybox", "sh", "-c", script]


def wait_for(check, timeout, what, interval=0.5):
    """Poll check() until it returns something truthy; fail naming what we waited for."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def pod(client, ns, name):
    return client.get(f"/api/v1/namespaces/{ns}/pods/{name}")


def wait_phase(client, ns, name, phases=("Succeeded",), timeout=180):
    """Wait until the Pod is in one of phases; a Pod that ends in another phase fails at once."""
    def check():
        p = pod(client, ns, name)
        phase = p["status"].get("phase")
        if phase in phases:
            return p
        if phase in ("Succeeded", "Failed"):
            raise AssertionError(f"pod {ns}/{name} ended {phase}, wanted {phases}: "
                                 f"{json.dumps(p['status'])[:1500]}\nlog: {logs(client, ns, name)}")
        return None
    return wait_for(check, timeout, f"pod {ns}/{name} phase in {phases}")


def logs(client, ns, name):
    try:
        return client.text(f"/api/v1/namespaces/{ns}/pods/{name}/log")
    except kubelib.ApiError as e:
        return f"<no log: {e}>"


def run_to_completion(client, ns, manifest, timeout=180):
    """Create the Pod, wait for it to succeed, return its log."""
    client.post(f"/api/v1/namespaces/{ns}/pods", manifest)
    name = manifest["metadata"]["name"]
    wait_phase(client, ns, name, ("Succeeded",), timeout)
    return logs(client, ns, name)


def kernel_inside(c, ns, pod_name, probe="kernel-probe"):
    """/proc/version as a process in the Pod's own sandbox sees it: an
    ephemeral container (what `kubectl debug` adds) shares the Pod's
    sandbox, so under gVisor it runs on gVisor's kernel too."""
    c.patch(f"/api/v1/namespaces/{ns}/pods/{pod_name}/ephemeralcontainers", {
        "spec": {"ephemeralContainers": [{
            "name": probe, "image": AGENT_IMAGE, "imagePullPolicy": "Never",
            "command": ["/bin/cat", "/proc/version"],
            "securityContext": {"allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}}}]}}, patch_type="strategic")

    def done():
        for s in pod(c, ns, pod_name)["status"].get("ephemeralContainerStatuses", []):
            if s["name"] == probe and "terminated" in s.get("state", {}):
                return True
        return None
    wait_for(done, 120, f"the kernel probe {probe} in {pod_name}")
    return c.text(f"/api/v1/namespaces/{ns}/pods/{pod_name}/log", container=probe).strip()


def events_for(client, ns, name):
    items = client.get(f"/api/v1/namespaces/{ns}/events",
                       fieldSelector=f"involvedObject.name={name}")["items"]
    return [(e["reason"], e["message"]) for e in items]


# --- host state -------------------------------------------------------------

# The sysctls, host paths and cgroup hierarchies the node's parts are known to
# touch (tools/kube-testenv/testenv_host.py names the same on purpose: the
# test must see what the tool claims to restore).
SYSCTLS = ["net/ipv4/ip_forward", "net/ipv4/conf/all/forwarding",
           "net/bridge/bridge-nf-call-iptables", "vm/overcommit_memory", "vm/panic_on_oom",
           "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys",
           "kernel/keys/root_maxbytes"]
HOST_PATHS = ["/var/lib/cni", "/var/log/containers", "/var/log/pods", "/opt/containerd",
              "/var/run/netns", "/etc/cni", "/var/lib/kubelet", "/run/containerd/s"]


def _out(*argv):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.stdout if r.returncode == 0 else ""


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def host_snapshot():
    """Everything `down` must leave as it found it, in comparable form."""
    links = sorted(l["ifname"] for l in json.loads(_out("ip", "-j", "link", "show") or "[]"))
    with open("/proc/self/mountinfo") as f:
        mounts = sorted(l.split()[4] for l in f)
    cgroups = sorted(f"{c}/{e}" for c in os.listdir("/sys/fs/cgroup")
                     if os.path.isdir(f"/sys/fs/cgroup/{c}")
                     for e in os.listdir(f"/sys/fs/cgroup/{c}")
                     if os.path.isdir(f"/sys/fs/cgroup/{c}/{e}"))
    paths = {}
    for p in HOST_PATHS:
        paths[p] = sorted(os.listdir(p)) if os.path.isdir(p) else None
    return {
        "links": links,
        "mounts": mounts,
        "netns": sorted(_out("ip", "netns", "list").split()),
        "cgroups": cgroups,
        "nft": _out("nft", "list", "ruleset"),
        "ipsets": sorted(_out("ipset", "list", "-n").split()),
        "iptables": _out("iptables-save").count("\n-A "),  # rules only: the header has a date
        "sysctls": {s: _read(f"/proc/sys/{s}") for s in SYSCTLS},
        "paths": paths,
    }


def node_processes(d):
    """Pids whose command line names the node's directory (shims, sandboxes, daemons)."""
    found = []
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/cmdline", "rb") as f:
                if d.encode() in f.read():
                    found.append(int(e))
        except OSError:
            pass
    return found


def in_ci():
    return build.in_ci()
