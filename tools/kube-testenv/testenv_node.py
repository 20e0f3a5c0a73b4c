"""The test node of `kube-testenv up --node`: configuration files and start-up
of containerd (runc and gVisor runsc handlers), the kubelet, kube-scheduler,
kube-proxy (nftables), kube-router's NetworkPolicy firewall and CoreDNS, all
as host processes; and stopping every process they leave. Python stdlib only.
Facts behind the settings: ../../../shared/docs/TESTNODE.md and
docs/kube-testenv.md."""
import json, os, signal, subprocess, time

import testenv_host as host

NODE_NAME = host.HOST_IP  # the apiserver dials the kubelet by InternalIP; a name need not resolve
SANDBOX_IMAGE = "openshell/pause:dev"
CLUSTER_DOMAIN = "cluster.local"
RUNTIME_CLASS = {"name": "gvisor", "handler": "runsc"}
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def containerd_config(d):
    # netns_mounts_under_state_dir keeps Pod netns mounts in d (not
    # /var/run/netns); restrict_oom_score_adj because nothing here may lower
    # an oom_score_adj (no CAP_SYS_RESOURCE); the opt plugin would create
    # /opt/containerd and nothing uses it.
    c = f"{d}/containerd"
    return f"""version = 3
root = "{c}/root"
state = "{c}/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{c}/containerd.sock"
[ttrpc]
  address = "{c}/containerd.sock.ttrpc"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{SANDBOX_IMAGE}"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "{d}/cni/net.d"
    use_internal_loopback = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "{d}/runc"
        SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.{RUNTIME_CLASS["handler"]}]
      runtime_type = "io.containerd.runsc.v1"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.{RUNTIME_CLASS["handler"]}.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = "{d}/runsc.toml"
"""


def runsc_config(d, bindir):
    # systrap: no KVM here (the PVM-backed /dev/kvm hangs gVisor's kvm
    # platform). oci-seccomp: the Pod's seccomp profile applies inside the
    # sandbox too, as it does under runc.
    return f"""binary_name = "{bindir}/runsc"
root = "{d}/runsc"
log_level = "info"
[runsc_config]
  platform = "systrap"
  oci-seccomp = "true"
  debug-log = "{d}/runsc-logs/"
"""


def cni_config(d):
    # Routes: the bridge subnet (on-link) and the Service range via the host
    # (host-local's gateway); no default route, no masquerade. isGateway
    # false: the bridge already has the host's address (testenv_host), and
    # with true the plugin turns global net.ipv4.ip_forward on.
    return json.dumps({
        "cniVersion": "1.0.0", "name": host.CNI_NETWORK,
        "plugins": [{
            "type": "bridge", "bridge": host.BRIDGE, "isGateway": False,
            "isDefaultGateway": False, "ipMasq": False, "hairpinMode": True,
            "ipam": {"type": "host-local", "dataDir": f"{d}/cni/ipam",
                     "ranges": [[{"subnet": host.POD_CIDR, "gateway": host.HOST_IP,
                                  "rangeEnd": host.POD_RANGE_END}]],
                     "routes": [{"dst": host.SERVICE_CIDR}]},
        }],
    }, indent=1)


def kubelet_config(d, port, healthz_port):
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "failCgroupV1": False, "cgroupDriver": "cgroupfs", "oomScoreAdj": 0,
        "failSwapOn": False,
        "address": host.HOST_IP, "port": port, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": healthz_port,
        "tlsCertFile": f"{d}/kubelet.crt", "tlsPrivateKeyFile": f"{d}/kubelet.key",
        # Not open to anonymous callers: client certs from our CA, then RBAC
        # by SubjectAccessReview (the apiserver calls with its kubelet-client cert).
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": f"{d}/ca.crt"}},
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{d}/containerd/containerd.sock",
        "clusterDNS": [host.HOST_IP], "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": "",  # Pods get the cluster DNS only, never the host's resolvers
        "staticPodPath": "", "podLogsDir": f"{d}/pod-logs",
        # A test machine's disk may be fuller than a real node's thresholds.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                         "nodefs.inodesFree": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
    }, indent=1)


def kube_proxy_config(d, healthz_port, metrics_port):
    # conntrack zeros: leave the host's conntrack sysctls alone. oomScoreAdj 0:
    # it cannot be lowered here. Node ports only on the bridge address.
    return json.dumps({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "mode": "nftables", "clientConnection": {"kubeconfig": f"{d}/kube-proxy.kubeconfig"},
        "hostnameOverride": NODE_NAME, "bindAddress": host.HOST_IP,
        "healthzBindAddress": f"127.0.0.1:{healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        "clusterCIDR": host.POD_CIDR, "nodePortAddresses": [f"{host.HOST_IP}/32"],
        "oomScoreAdj": 0,
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s",
                      "tcpCloseWaitTimeout": "0s", "udpTimeout": "0s", "udpStreamTimeout": "0s"},
    }, indent=1)


def corefile(d, ready_port, health_port):
    # Service and Pod names of cluster.local only; anything else is refused
    # (no forwarder: nothing may leave the machine).
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 {{
    bind {host.HOST_IP}
    errors
    ready 127.0.0.1:{ready_port}
    health 127.0.0.1:{health_port}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa {{
        kubeconfig {d}/coredns.kubeconfig testenv
        pods insecure
    }}
    cache 5
    loadbalance
}}
"""


def write_configs(d, bindir, ports):
    for sub in ("containerd", "cni/net.d", "cni/ipam", "runsc-logs", "kubelet", "pod-logs", "runc"):
        os.makedirs(f"{d}/{sub}", exist_ok=True)
    write(f"{d}/containerd.toml", containerd_config(d))
    write(f"{d}/runsc.toml", runsc_config(d, bindir))
    write(f"{d}/cni/net.d/10-{host.CNI_NETWORK}.conflist", cni_config(d))
    write(f"{d}/kubelet.json", kubelet_config(d, ports["kubelet"], ports["kubelet_healthz"]))
    write(f"{d}/kube-proxy.json", kube_proxy_config(d, ports["proxy_healthz"], ports["proxy_metrics"]))
    write(f"{d}/Corefile", corefile(d, ports["dns_ready"], ports["dns_health"]))


def commands(d, bindir, ports):
    """(name, argv) of the node's daemons in start order (containerd first)."""
    return [
        ("containerd", [f"{bindir}/containerd", f"--config={d}/containerd.toml"]),
        ("kubelet", [f"{bindir}/kubelet", f"--config={d}/kubelet.json",
                     f"--kubeconfig={d}/kubelet.kubeconfig", f"--root-dir={d}/kubelet",
                     f"--hostname-override={NODE_NAME}", f"--node-ip={host.HOST_IP}"]),
        ("kube-scheduler", [f"{bindir}/kube-scheduler", f"--kubeconfig={d}/scheduler.kubeconfig",
                            f"--authentication-kubeconfig={d}/scheduler.kubeconfig",
                            f"--authorization-kubeconfig={d}/scheduler.kubeconfig",
                            "--authentication-skip-lookup=true",
                            "--bind-address=127.0.0.1", f"--secure-port={ports['scheduler']}",
                            "--leader-elect=false"]),
        ("kube-proxy", [f"{bindir}/kube-proxy", f"--config={d}/kube-proxy.json"]),
        # The firewall controller only: routes come from the bridge, Services
        # from kube-proxy. Health and metrics servers off (they would listen
        # on every interface).
        ("kube-router", [f"{bindir}/kube-router", f"--kubeconfig={d}/kube-router.kubeconfig",
                         "--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
                         f"--hostname-override={NODE_NAME}", "--health-port=0", "--metrics-port=0",
                         f"--service-cluster-ip-range={host.SERVICE_CIDR}"]),
        ("coredns", [f"{bindir}/coredns", "-conf", f"{d}/Corefile", "-pidfile", ""]),
    ]


def daemon_env(bindir):
    # containerd finds its shims, and the shims runsc/runc, on PATH.
    return {"PATH": f"{bindir}:{SYSTEM_PATH}", "HOME": "/root"}


def leftover_pids(d, before):
    """Processes of this node outside its process group: the shims (their
    -address names our containerd socket), runsc sandboxes and gofers (their
    --root is in d), and every process in the kubepods cgroups this node's
    kubelet created (never in a tree that existed before `up`)."""
    pids = {int(e) for e in os.listdir("/proc") if e.isdigit() and host.names_dir(int(e), d)}
    ours = set(host.kubepods_cgroups()) - set(before["kubepods"])
    return (pids | host.cgroup_pids("kubepods", ours)) - {os.getpid()}


def kill_leftovers(d, before, log, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        pids = leftover_pids(d, before)
        if not pids:
            return
        if time.monotonic() > deadline:
            log(f"down: processes still alive after {timeout}s: {sorted(pids)}")
            return
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def unmount_under(d, log):
    """Lazy-unmount every mount below d (rootfs overlays, shm, netns, volumes), deepest first."""
    for _ in range(5):
        with open("/proc/self/mountinfo") as f:
            points = [l.split()[4] for l in f]
        mine = sorted({p for p in points if p.startswith(d + "/")}, key=len, reverse=True)
        if not mine:
            return
        for p in mine:
            subprocess.run(["umount", "-l", p], stderr=subprocess.DEVNULL)
    log(f"down: mounts left under {d}")
