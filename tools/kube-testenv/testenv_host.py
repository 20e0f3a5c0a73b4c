"""Host state the test node changes, and putting it back: the Pod bridge, its
containment (forwarding on the bridge only, a guard rule, no default route,
no masquerade), sysctls, and everything `down` must remove. Python stdlib only.

Addresses: the Pod bridge and the Service range are used by nothing else in
the project's tests (10.200.0.0/16 is the supervisor's veth leases,
198.51.100.0/24 the proxy tests' upstreams, 10.96.0.0/16 the control-plane-only
environment's never-routed Service range)."""
import json, os, shutil, socket, stat, subprocess

BRIDGE = "osnode0"
POD_CIDR = "10.244.0.0/24"
HOST_IP = "10.244.0.1"  # the host on the Pod network: node name, apiserver, DNS
POD_RANGE_END = "10.244.0.199"  # .200-.254: addresses tests may give their own probes
SERVICE_CIDR = "10.97.0.0/16"
CNI_NETWORK = "osnode"
GUARD_TABLE = "openshell_node_guard"  # nft table, family inet

# Sysctls the node's parts set (the kubelet's kernel tunables, br_netfilter's
# switch that kube-router needs for Pod-to-Pod filtering, global forwarding
# that must stay off); `down` writes the values seen before `up` back.
SYSCTLS = ["net/ipv4/ip_forward", "net/ipv4/conf/all/forwarding",
           "net/bridge/bridge-nf-call-iptables", "vm/overcommit_memory", "vm/panic_on_oom",
           "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys",
           "kernel/keys/root_maxbytes"]

# Host paths the node's parts may create outside its own directory (libcni's
# result cache, the shims' socket dir, the kubelet's device-plugin socket and
# log links); `down` removes our entries in them, then each path that did not
# exist before `up` if it is empty (remove_host_paths).
HOST_PATHS = ["/var/lib/cni", "/run/containerd", "/var/log/containers", "/var/log/pods",
              "/opt/containerd", "/var/run/netns", "/etc/cni", "/var/lib/kubelet"]


def run(*argv, check=True, stdin=None):
    r = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed (exit {r.returncode}): {r.stderr.strip()}")
    return r


def sysctl_read(name):
    try:
        with open(f"/proc/sys/{name}") as f:
            return f.read().strip()
    except OSError:
        return None


def sysctl_write(name, value):
    with open(f"/proc/sys/{name}", "w") as f:
        f.write(value)


def nft_tables():
    """['family name', ...] of the current ruleset."""
    out = run("nft", "-j", "list", "tables").stdout
    return sorted(f"{t['table']['family']} {t['table']['name']}"
                  for t in json.loads(out)["nftables"] if "table" in t)


def ipsets():
    r = run("ipset", "list", "-n", check=False)
    return sorted(r.stdout.split()) if r.returncode == 0 else []


def kubepods_cgroups():
    """Controller hierarchies (cgroup v1 and the unified one) holding a kubepods tree."""
    return sorted(c for c in os.listdir("/sys/fs/cgroup")
                  if os.path.isdir(f"/sys/fs/cgroup/{c}/kubepods"))


def snapshot():
    """What `down` compares against: taken before `up` changes anything."""
    return {"sysctls": {s: sysctl_read(s) for s in SYSCTLS},
            "nft_tables": nft_tables(), "ipsets": ipsets(),
            "paths": [p for p in HOST_PATHS if os.path.lexists(p)],
            "kubepods": kubepods_cgroups()}


def preflight():
    """Refuse clearly what this machine cannot do, before changing anything."""
    if os.geteuid() != 0:
        raise RuntimeError("--node needs root (bridges, netns, cgroups, nftables)")
    for tool in ("/usr/sbin/runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local",
                 "/usr/lib/cni/loopback"):
        if not os.access(tool, os.X_OK):
            raise RuntimeError(f"{tool} missing (scripts/install-deps installs runc and "
                               "containernetworking-plugins)")
    for tool in ("nft", "ipset", "iptables", "iptables-save", "conntrack", "ip"):
        if not any(os.access(f"{d}/{tool}", os.X_OK) for d in ("/usr/sbin", "/sbin", "/usr/bin")):
            raise RuntimeError(f"{tool} missing (scripts/install-deps installs it)")
    if os.path.exists(f"/sys/class/net/{BRIDGE}"):
        raise RuntimeError(f"bridge {BRIDGE} exists: another test node runs on this machine "
                           "(one at a time), or a crashed one needs 'kube-testenv down'")
    if sysctl_read("net/bridge/bridge-nf-call-iptables") is None:
        raise RuntimeError("br_netfilter is not loaded (modprobe br_netfilter): NetworkPolicy "
                           "between Pods on one bridge needs it")


def guard_ruleset():
    # Anything that came in on the Pod bridge and would leave by another
    # interface is dropped, before any other forward rule (priority -400).
    # The counter lets the containment test see the rule at work.
    return (f"table inet {GUARD_TABLE} {{\n"
            f" chain forward {{ type filter hook forward priority -400; policy accept;\n"
            f"  iifname \"{BRIDGE}\" oifname != \"{BRIDGE}\" counter drop\n }}\n}}\n")


def setup_bridge():
    """The Pod bridge with the host's address; forwarding on it alone."""
    run("ip", "link", "add", BRIDGE, "type", "bridge")
    run("ip", "addr", "add", f"{HOST_IP}/{POD_CIDR.split('/')[1]}", "dev", BRIDGE)
    run("ip", "link", "set", BRIDGE, "up")
    run("nft", "-f", "-", stdin=guard_ruleset())
    # Routing of packets that arrive on the bridge (Pod -> Service -> Pod);
    # global ip_forward stays off, so no other interface forwards.
    sysctl_write(f"net/ipv4/conf/{BRIDGE}/forwarding", "1")
    sysctl_write("net/bridge/bridge-nf-call-iptables", "1")


def restore(before, log):
    """Remove what the node left and write back the sysctls: the host as `snapshot` saw it."""
    for tbl in sorted(set(nft_tables()) - set(before["nft_tables"])):
        r = run("nft", "delete", "table", *tbl.split(), check=False)
        if r.returncode != 0:
            log(f"down: nft delete table {tbl}: {r.stderr.strip()}")
    for s in sorted(set(ipsets()) - set(before["ipsets"])):
        r = run("ipset", "destroy", s, check=False)
        if r.returncode != 0:
            log(f"down: ipset destroy {s}: {r.stderr.strip()}")
    if os.path.exists(f"/sys/class/net/{BRIDGE}"):
        for port in os.listdir(f"/sys/class/net/{BRIDGE}/brif"):
            run("ip", "link", "del", port, check=False)
        run("ip", "link", "del", BRIDGE, check=False)
    for c in sorted(set(kubepods_cgroups()) - set(before["kubepods"])):
        remove_cgroup_tree(f"/sys/fs/cgroup/{c}/kubepods", log)
    for name, value in before["sysctls"].items():
        if value is not None and sysctl_read(name) != value:
            try:
                sysctl_write(name, value)
            except OSError as e:
                log(f"down: cannot restore {name}={value}: {e}")


def remove_cgroup_tree(top, log):
    """rmdir a cgroup and its children, deepest first (their tasks are gone)."""
    for root, dirs, _ in os.walk(top, topdown=False):
        for d in dirs:
            try_rmdir(os.path.join(root, d), log)
    try_rmdir(top, log)


def try_rmdir(path, log):
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        log(f"down: cannot remove {path}: {e}")


def names_dir(pid, d):
    """True if pid is alive and its command line names directory d (pids get reused)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return d.encode() in f.read()
    except OSError:
        return False


def cgroup_pids(top, hierarchies):
    """Pids in the cgroup tree top of the given hierarchies (Pod containers, gVisor sandboxes)."""
    pids = set()
    for c in hierarchies:
        base = f"/sys/fs/cgroup/{c}/{top}"
        for root, _, files in os.walk(base):
            if "cgroup.procs" in files:
                try:
                    with open(f"{root}/cgroup.procs") as f:
                        pids.update(int(p) for p in f.read().split())
                except OSError:
                    pass
    return pids


def remove_host_paths(before, d, log):
    """Entries the node left in shared host paths: libcni's cached results
    (named by our network), the kubelet's log symlinks (pointing into d), shim
    sockets nothing listens on any more; then the paths themselves when `up`
    found none and they are empty (another runtime on the machine may use them)."""
    for sub in ("results", "networks"):
        base = f"/var/lib/cni/{sub}"
        for e in os.listdir(base) if os.path.isdir(base) else []:
            if e.startswith(f"{CNI_NETWORK}-") or e == CNI_NETWORK:
                remove_entry(f"{base}/{e}")
    if os.path.isdir("/var/log/containers"):
        for e in os.listdir("/var/log/containers"):
            link = f"/var/log/containers/{e}"
            if os.path.islink(link) and os.readlink(link).startswith(d + "/"):
                os.unlink(link)
    for p in ["/run/containerd/s"] + [p for p in HOST_PATHS if p not in before["paths"]]:
        for root, _, files in os.walk(p):
            for e in files:
                if dead_socket(f"{root}/{e}"):  # the shims', the kubelet's device-plugin socket
                    os.unlink(f"{root}/{e}")
    for p in HOST_PATHS:
        if os.path.isdir(p) and p not in before["paths"]:
            for root, dirs, _ in os.walk(p, topdown=False):
                for sub in dirs:
                    try_rmdir_empty(os.path.join(root, sub))
            try_rmdir_empty(p)
            if os.path.exists(p):
                log(f"down: {p} is not empty (another runtime's, or ours left behind)")


def remove_entry(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


def dead_socket(path):
    """A unix socket file nothing listens on (a regular file is never "dead")."""
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return False
    except OSError:
        return False
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    finally:
        s.close()


def try_rmdir_empty(path):
    try:
        os.rmdir(path)
    except OSError:
        pass
