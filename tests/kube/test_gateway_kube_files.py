# `sandbox upload` / `download` / `port-forward` for a Kubernetes sandbox
# (docs/files.md): the verbs ride the supervisor's session, which a
# Kubernetes supervisor holds as a local one does, so the same relay serves
# them. The supervisor Pod's process is played by the real
# openshell-supervisor with the flags, policy and token the cluster holds
# (the test apiserver has no kubelet), its workspace a local directory.
import os
import subprocess

from tests.lib.driver_util import mark_ready, poll
from tests.lib.gateway_kube_util import cli_bg, play_supervisor, pods_of, secret_of, start_gateway
from tests.lib.gateway_util import CLI, forward_answers, free_port

POLICY = """version: 1
filesystem_policy:
  include_workdir: true
  read_only: [/usr, /lib, /lib64, /bin, /etc, /proc, /dev/urandom]
  read_write: [/tmp, /dev/null]
"""

SERVER = ("import socket\n"
          "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          "s.bind(('127.0.0.1', 7000)); s.listen()\n"
          "while True:\n"
          "    c, _ = s.accept(); c.sendall(c.recv(100).upper()); c.close()\n")


def test_files_and_ports_through_a_kubernetes_supervisors_session(kube, ns, gateways, tmp_path):
    port = free_port()
    endpoint = f"http://localhost:{port}"
    g = start_gateway(kube, ns, gateways, port=port, gateway_endpoint=endpoint)
    pol = tmp_path / "policy.yaml"
    pol.write_text(POLICY)
    h = cli_bg(g, "sandbox", "create", "--name", "kf1", "--detach", "--policy", str(pol))
    sid = poll(lambda: g.sandbox("kf1"), 30, "sandbox recorded")["id"]
    sup_pod = poll(lambda: pods_of(kube, ns, sid).get("supervisor"), 30, "supervisor Pod")
    mark_ready(kube, ns, sup_pod["metadata"]["name"])
    ws = tmp_path / "workspace"
    ws.mkdir()
    os.chown(ws, 65534, 65534)
    sup = play_supervisor(g, sid, secret_of(kube, ns, sid), endpoint, workdir=str(ws),
                          agent=("/usr/bin/python3", "-c", SERVER))
    try:
        r = h.result()
        assert r.returncode == 0 and g.sandbox("kf1")["phase"] == "Ready", (r.stdout, r.stderr)
        f = tmp_path / "notes.txt"
        f.write_text("from the host\n")
        f.chmod(0o640)
        r = g.cli("sandbox", "upload", "kf1", str(f), "in/sub")
        assert r.returncode != 0 and "/sandbox/in" in r.stderr, r  # no such directory
        r = g.cli("sandbox", "upload", "kf1", str(f))
        assert r.returncode == 0, (r.stdout, r.stderr)
        st = os.stat(ws / "notes.txt")
        assert (st.st_uid, st.st_mode & 0o777) == (65534, 0o640)
        r = g.cli("sandbox", "download", "kf1", "notes.txt", str(tmp_path / "back.txt"))
        assert r.returncode == 0 and (tmp_path / "back.txt").read_text() == "from the host\n"
        r = g.cli("sandbox", "upload", "kf1", str(f), "/etc")
        assert r.returncode != 0 and "/etc: outside the workspace" in r.stderr, r
        local = free_port()
        p = subprocess.Popen([CLI, "sandbox", "port-forward", "kf1", f"{local}:7000"],
                             env=g.env, stderr=subprocess.PIPE)
        try:
            poll(lambda: forward_answers(local, b"ping", b"PING"), 30,
                 "the agent's server through the forward")
        finally:
            p.terminate()
            p.communicate(timeout=10)
    finally:
        sup.terminate()
        sup.communicate(timeout=30)
