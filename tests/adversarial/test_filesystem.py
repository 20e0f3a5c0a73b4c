"""Filesystem escapes from inside a real sandbox (Landlock + fresh mount,
PID namespaces): a host file that plain permissions would let the agent
read stays out of reach however it is named (symlink, /proc/self/root,
/proc/1/root, a hard link, a symlink swapped in a race); /proc/sys and
device nodes are closed; the supervisor's own files are invisible or
read-only. Positive controls: readable and writable paths work, and the
host file is readable to the same uid outside the sandbox."""
import os
import subprocess

import pytest

from tests.lib.adv_util import NET

POLICY = f"""  web:
    endpoints:
      - {{ host: upstream.test, port: 80, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""
PROBES = ["fs_outside_paths", "fs_link_tricks", "fs_symlink_race", "fs_proc_sys_and_devices",
          "fs_supervisor_files"]
DENIED = ("EACCES", "EPERM", "ENOENT", "EXDEV", "EROFS")


@pytest.fixture(scope="module")
def sb(run_sandbox):
    return run_sandbox("fs", POLICY, PROBES)


def test_host_file_readable_by_same_uid_outside_positive_control(bait):
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat",
                        bait.secret_file], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("SECRET")


@pytest.mark.parametrize("how", ["direct", "symlink", "proc_root", "proc_1_root"])
def test_host_file_unreachable_by_any_name(sb, how):
    r = sb.result("fs_outside_paths")
    assert r[how] in ("EACCES", "ENOENT"), r
    assert r["control_readable"] == "OK" and r["control_tmp"] == "OK"


def test_hard_link_and_rename_out_of_reach(sb):
    r = sb.result("fs_link_tricks")
    assert r["hardlink"] in DENIED
    assert r["rename_out"] in DENIED


def test_symlink_swap_race_never_reads_the_secret(sb):
    r = sb.result("fs_symlink_race")
    assert r["secret"] == 0
    assert r["harmless"] > 0, "control: the race ran and the harmless target was read"
    assert r["denied"] > 0, "the secret target was tried and refused"


def test_proc_sys_not_writable_but_readable(sb):
    r = sb.result("fs_proc_sys_and_devices")
    assert r["write_proc_sys_hostname"] in DENIED
    assert r["write_core_pattern"] in DENIED
    assert r["read_proc_sys"] == "OK"


def test_device_nodes_closed_except_listed_ones(sb):
    r = sb.result("fs_proc_sys_and_devices")
    assert r["dev_mem"] in DENIED and r["dev_kmsg"] in DENIED
    assert r["mknod"] in DENIED
    assert r["dev_null_write"] == "OK" and r["dev_urandom"] == "OK"
    assert r["mkfifo_control"] == "OK"


def test_supervisor_files_invisible_or_read_only(sb):
    r = sb.result("fs_supervisor_files")
    assert r["audit"] in ("ENOENT", "EACCES") and r["policy"] in ("ENOENT", "EACCES")
    assert r["policy_read"] in ("ENOENT", "EACCES")
    assert r["run_dir_write"] in DENIED and r["run_dir_create"] in DENIED
    assert r["run_dir_read"] == "OK", "control: the agent may read its CA"
    assert r["sup_proc"] == "ENOENT"
    assert os.path.exists(sb.audit), "control: the files exist on the host"
