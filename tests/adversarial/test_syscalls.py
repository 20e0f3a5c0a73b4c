"""Kernel attack surface from inside a real sandbox: io_uring, bpf,
userfaultfd, user and network namespaces, perf, keyrings, mount, modules,
kexec, memfd_create + execveat, and the 32-bit and x32 entry points. The
positive control runs the very same agent probes on the host (as root,
with arguments that fail early), where none of them answers EPERM."""
import json
import os
import subprocess
import tempfile

import pytest

from tests.lib.adv_util import AGENT, PROBE_BIN, PYTHON
from tests.lib.adv_util import NET

POLICY = f"""  web:
    endpoints:
      - {{ host: upstream.test, port: 80, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""
PROBES = ["sys_kernel_surface", "sys_memfd_exec", "sys_probe_binary"]
KERNEL = ["io_uring_setup", "bpf_map_create", "userfaultfd", "unshare_user", "unshare_net",
          "perf_event_open", "keyctl", "mount", "init_module", "kexec_load"]


@pytest.fixture(scope="module")
def sb(run_sandbox):
    return run_sandbox("sys", POLICY, PROBES)


@pytest.fixture(scope="module")
def outside():
    d = tempfile.mkdtemp(prefix="osadv-out-", dir="/var/tmp")
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"probe_bin": PROBE_BIN}, f)
    p = subprocess.run([PYTHON, AGENT, d, *PROBES], capture_output=True, text=True, timeout=60)
    os.unlink(os.path.join(d, "config.json"))
    os.rmdir(d)
    return {json.loads(l[7:])["probe"]: json.loads(l[7:])
            for l in p.stdout.splitlines() if l.startswith("RESULT ")}


@pytest.mark.parametrize("call", KERNEL)
def test_kernel_surface_call_refused_inside_allowed_outside(sb, outside, call):
    inside = sb.result("sys_kernel_surface")
    assert inside[call] in ("EPERM", "EACCES"), inside
    assert outside["sys_kernel_surface"][call] not in ("EPERM",), outside["sys_kernel_surface"]
    assert inside["getpid_control"] == "OK"


def test_memfd_execveat_refused_inside_works_outside(sb, outside):
    r = sb.result("sys_memfd_exec")
    assert r["memfd"] == "OK", "memfd_create itself is allowed"
    assert r["execveat_errno"] == "EPERM"
    assert r["execveat_path_control"] == "ENOENT", "path-based execveat is not blocked"
    o = outside["sys_memfd_exec"]
    assert o["execveat_errno"] == "OK" and o["proc_fd_exec"] == "OK"


def test_memfd_exec_through_proc_fd_refused(sb, outside):
    # The launcher sets vm.memfd_noexec=2 in the sandbox's PID namespace:
    # memfds there are never executable, whatever path reaches them.
    assert sb.result("sys_memfd_exec")["proc_fd_exec"] in ("EACCES", "EPERM")
    assert outside["sys_memfd_exec"]["proc_fd_exec"] == "OK"  # positive control


def test_probe_binary_denied_list_inside_vs_outside(sb, outside):
    inside = sb.result("sys_probe_binary")["syscalls"]
    out = outside["sys_probe_binary"]["syscalls"]
    denied = [k for k in inside if not k.startswith("allowed_") and k != "clone3"]
    assert len(denied) >= 30
    for k in denied:
        assert inside[k] == "1", (k, inside[k])  # EPERM
    assert [k for k in denied if out[k] == "1"] == []
    assert inside["clone3"] == "38"  # ENOSYS so libc falls back to clone
    for k in (k for k in inside if k.startswith("allowed_")):
        assert inside[k] != "1", k


def test_32bit_and_x32_entry_points_kill_the_caller(sb, outside):
    r = sb.result("sys_probe_binary")
    assert r["int80"]["rc"] == -31 and r["x32"]["rc"] == -31  # SIGSYS
    assert outside["sys_probe_binary"]["int80"]["rc"] == 0, "control: int 0x80 works outside"
