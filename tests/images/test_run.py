# The images' contents run for real, without a container engine: each image
# is unpacked with umoci and its programs run with chroot inside fresh
# namespaces (a private network namespace unless the test needs the test
# apiserver), as the image's configured user with the image's environment.
import base64, json, os, shutil, signal, subprocess, time, urllib.request

import pytest

from tests.lib import build
from tests.lib import helm_util as hu
from tests.lib import image_util as iu
from tests.lib.gateway_util import free_port, wait_for


def user_of(config):
    return config["config"]["User"]


def test_pause_reaps_orphans_and_exits_on_sigterm(unpacked, scratch):
    root, cfg = unpacked("pause")
    log = open(os.path.join(scratch, "pause.log"), "w")
    p = iu.start_in(root, cfg["config"]["Entrypoint"], user_of(cfg), iu.image_env(cfg), log)
    try:
        pause = wait_for(lambda: iu.ns_init_pid(p.pid), 10, what="pause started")
        wait_for(lambda: os.readlink(f"/proc/{pause}/exe").endswith("/pause"), 10, what="pause exec")
        # An orphan inside its PID namespace: sh exits at once, sleep is
        # re-parented to pause (PID 1 there), which must reap it.
        subprocess.run(["nsenter", f"--target={pause}", "--pid", "--", "/bin/sh", "-c",
                        "sleep 2 & exit 0"], check=True, timeout=30)
        orphan = wait_for(lambda: iu.children_of(pause), 10, what="orphan re-parented to pause")
        assert orphan[0][1] in "SR", orphan  # control: pause really became its parent
        wait_for(lambda: not iu.children_of(pause), 30, what="pause reaping the orphan (no zombie)")
        assert p.poll() is None, "pause must outlive its children"
        os.kill(pause, signal.SIGTERM)
        assert p.wait(20) == 0
    finally:
        iu.stop(p, signal.SIGKILL)
        log.close()


def test_test_agent_runs_a_shell_and_nc(unpacked):
    root, cfg = unpacked("test-agent")
    env = iu.image_env(cfg)
    r = iu.run_in(root, [*cfg["config"]["Cmd"], "-c", "echo ok; id -u"], user_of(cfg), env)
    assert r.returncode == 0 and r.stdout.split() == ["ok", "1000"], r
    # nc over the private namespace's loopback; the receiving side is a
    # program reading the socket to its end (nc's own stdin would end first).
    script = ("ip link set lo up; printf '#!/bin/sh\\ncat >/tmp/got\\n' >/tmp/rcv; chmod +x /tmp/rcv; "
              "nc -l -p 4567 -e /tmp/rcv & "
              "for i in $(seq 100); do echo hello | nc 127.0.0.1 4567 && break; usleep 100000; done; "
              "wait; cat /tmp/got")
    r = iu.run_in(root, ["/bin/sh", "-c", script], "0:0", env)
    assert r.stdout.strip() == "hello", r


def test_supervisor_image_binaries_run_from_the_bundle_alone(unpacked):
    root, cfg = unpacked("supervisor")
    env = iu.image_env(cfg)
    # Nothing but the bundle serves the supervisor: the image has no /lib.
    assert not any(os.path.exists(os.path.join(root, d)) for d in ("lib", "lib64", "usr/lib/x86_64-linux-gnu"))
    for exe in ("openshell-supervisor", cfg["config"]["Entrypoint"][0]):
        r = iu.run_in(root, [exe, "--version"], user_of(cfg), env)
        assert r.returncode == 0 and r.stdout == f"openshell-supervisor {iu.app_version()}\n", r
    r = iu.run_in(root, ["openshell-sandbox"], user_of(cfg), env)
    assert r.returncode == 2 and "usage: openshell-sandbox" in r.stderr, r


def interp_and_rpath(path):
    out = subprocess.run(["readelf", "--program-headers", "--dynamic", "--wide", path],
                         capture_output=True, text=True, check=True).stdout
    interp = next(l.split(":", 1)[1].strip(" ]") for l in out.splitlines() if "program interpreter" in l)
    rpath = [l.split("[", 1)[1].rstrip("]") for l in out.splitlines() if "(RPATH)" in l]
    return interp, rpath


def test_bundled_supervisor_runs_in_the_test_agent_image(unpacked):
    """The combined topology: the init container's cp (the driver's exact
    command, tests/unit/test_k8s_render.c) copies the bundle into an emptyDir
    that the agent container, a foreign image, sees on /opt/openshell."""
    sup_root, sup_cfg = unpacked("supervisor", fresh=True)
    agent_root, agent_cfg = unpacked("test-agent", fresh=True)
    install = ["cp", "-R", "/opt/openshell/bin", "/opt/openshell/lib", "/opt/openshell/etc",
               "/mnt/openshell/"]
    r = iu.run_in(sup_root, install, "0:0", iu.image_env(sup_cfg))
    assert r.returncode == 0, r
    copied = os.path.join(sup_root, "mnt", "openshell")
    assert sorted(os.listdir(copied)) == ["bin", "etc", "lib"]
    assert interp_and_rpath(os.path.join(copied, "bin", "openshell-supervisor")) == (
        "/opt/openshell/lib/ld-linux-x86-64.so.2", ["/opt/openshell/lib"])
    env = iu.image_env(agent_cfg)
    # Control: the supervisor as built (dynamic, host loader) cannot run there.
    shutil.copy(build.binary("openshell-supervisor"), os.path.join(agent_root, "tmp", "plain-supervisor"))
    r = iu.run_in(agent_root, ["/tmp/plain-supervisor", "--version"], user_of(agent_cfg), env)
    assert r.returncode != 0, "the test-agent image must lack the supervisor's libraries"
    shutil.copytree(copied, os.path.join(agent_root, "opt", "openshell"), symlinks=True)
    r = iu.run_in(agent_root, ["/opt/openshell/bin/openshell-supervisor", "--version"], "0:0", env)
    assert r.returncode == 0 and r.stdout == f"openshell-supervisor {iu.app_version()}\n", r
    r = iu.run_in(agent_root, ["/opt/openshell/bin/openshell-sandbox"], user_of(agent_cfg), env)
    assert r.returncode == 2 and "usage: openshell-sandbox" in r.stderr, r
    ca = os.path.join(agent_root, "opt", "openshell", "etc", "ssl", "ca-certificates.crt")
    assert os.path.getsize(ca) > 0 and b"BEGIN CERTIFICATE" in open(ca, "rb").read(4096)


def embedded_kubeconfig(kube):
    """The test cluster's kubeconfig with its files inlined (*-data), so it
    is whole inside the gateway's rootfs."""
    with open(kube.kubeconfig) as f:
        cfg = json.load(f)

    def inline(d, key):
        if key in d:
            with open(d.pop(key), "rb") as f:
                d[f"{key}-data"] = base64.b64encode(f.read()).decode()
    for c in cfg["clusters"]:
        inline(c["cluster"], "certificate-authority")
    for u in cfg["users"]:
        inline(u["user"], "client-certificate")
        inline(u["user"], "client-key")
    return cfg


def health(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health", timeout=5) as r:
            return r.status, json.load(r)
    except OSError:
        return None


def test_gateway_serves_health_with_the_charts_config(unpacked, kube, scratch):
    """The image's own entrypoint and default command (the chart's
    --config /etc/openshell/gateway.toml), as its user, with the gateway.toml
    the real helm renders from the chart; the Kubernetes driver talks to the
    test apiserver, so this runs in the test's own network namespace."""
    root, cfg = unpacked("gateway")
    port = free_port()
    ns = kube.client.create_namespace("img")
    helm = hu.Helm(kube)
    try:
        toml = hu.gateway_toml(helm.template({"server": {"port": port}}, namespace=ns))
    finally:
        helm.close()
    with open(os.path.join(root, "etc", "openshell", "gateway.toml"), "w") as f:
        f.write(toml)
    # The chart's admin-token Secret, as the kubelet mounts it with the Pod's
    # fsGroup: root-owned, 0440, group = the gateway's.
    assert 'admin_token_file = "/etc/openshell-admin/token"' in toml
    tok_dir = os.path.join(root, "etc", "openshell-admin")
    os.makedirs(tok_dir, exist_ok=True)
    tok = os.path.join(tok_dir, "token")
    with open(tok, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    os.chown(tok, 0, int(user_of(cfg).split(":")[1]))
    os.chmod(tok, 0o440)
    os.makedirs(os.path.join(root, "etc", "kube"))
    with open(os.path.join(root, "etc", "kube", "config"), "w") as f:
        json.dump(embedded_kubeconfig(kube), f)
    os.chmod(os.path.join(root, "etc", "kube", "config"), 0o644)
    env = iu.image_env(cfg, KUBECONFIG="/etc/kube/config")
    argv = cfg["config"]["Entrypoint"] + cfg["config"]["Cmd"]
    log_path = os.path.join(scratch, "gateway.log")
    log = open(log_path, "w")
    p = iu.start_in(root, argv, user_of(cfg), env, log, private_net=False)
    try:
        got = wait_for(lambda: health(port) or (p.poll() is not None and ("exited", p.returncode)),
                       60, what="gateway /v1/health")
        assert got[0] == 200, (got, open(log_path).read()[-3000:])
        assert got[1] == {"status": "ok"}, got
        # It read the chart's gateway.toml: the driver and namespace are its.
        out = open(log_path).read()
        assert f"openshell-gateway {iu.app_version()} serving on 0.0.0.0:{port}" in out, out
        assert f"kubernetes driver: namespace {ns}, topology combined" in out, out
        # Its state went where the chart mounts the volume, owned by its user.
        st = os.stat(os.path.join(root, "var", "lib", "openshell", "state"))
        assert f"{st.st_uid}:{st.st_gid}" == user_of(cfg) and not st.st_mode & 0o022
    finally:
        iu.stop(p)
        log.close()
