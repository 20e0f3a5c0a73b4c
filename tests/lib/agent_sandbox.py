"""One agent program run as the agent of a real sandbox (openshell-supervisor,
inpod backend: its own network namespace, the launcher's Landlock and
seccomp, uid 65534) under a network policy, for the L7 protocol tests. The
agent prints JSON lines; they come back with the supervisor's audit records."""
import json
import os
import subprocess
import tempfile

from tests.lib.adv_util import UPSTREAM_IP
from tests.lib.boundary_util import LAUNCHER, SUPERVISOR

BASE_RO = ["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "/dev/urandom"]


def run(network, argv, read_only=(), names=("upstream.test",), extra=(), env=None,
        tag="agent"):
    """network: the policy's network_policies text; read_only: paths the agent
    needs besides the system ones; names: resolved to the upstream."""
    d = tempfile.mkdtemp(prefix=f"os{tag}-", dir="/var/tmp")
    policy, audit, hosts = (os.path.join(d, n) for n in ("policy.yaml", "audit.log", "hosts"))
    with open(policy, "w") as f:
        f.write("version: 1\nfilesystem_policy:\n  include_workdir: false\n"
                f"  read_only: {json.dumps(BASE_RO + list(read_only))}\n"
                '  read_write: ["/tmp", "/dev/null"]\n'
                'process: {run_as_user: "65534", run_as_group: "65534"}\n'
                f"network_policies:{network}")
    with open(hosts, "w") as f:
        f.write(f"{UPSTREAM_IP} {' '.join(names)}\n")
    sid = f"{tag}{os.getpid() % 10000}"
    cmd = [SUPERVISOR, "--backend", "inpod", "--sandbox-id", sid, "--proxy-port", "3128",
           "--launcher", LAUNCHER, "--policy", policy, "--audit-log", audit, "--hosts", hosts,
           *extra, "--", *argv]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, **(env or {})))
        lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        assert lines, f"agent printed nothing (rc {r.returncode}): {r.stderr[-3000:]}"
        with open(audit) as f:
            records = [json.loads(l) for l in f if l.strip()]
        return lines, records
    finally:
        subprocess.run(["rm", "-rf", d])
