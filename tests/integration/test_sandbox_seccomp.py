"""openshell-sandbox seccomp filter: every denied syscall answers EPERM inside
the sandbox and something else outside it (the probe's arguments are bad, so
EFAULT/EBADF/EINVAL mean "allowed"); foreign-architecture entry points kill."""

import errno
import signal
import subprocess

import pytest

from tests.lib import build
from tests.lib import sandbox_util as su

pytestmark = build.needs("openshell-sandbox", "sandbox-probe", "sandbox-deny")

DENIED = [
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "open_by_handle_at", "name_to_handle_at", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "mount",
    "umount2", "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount",
    "mount_setattr", "pivot_root", "setns", "unshare_newuser", "clone_newuser",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "keyctl", "add_key", "request_key", "ioctl_tiocsti", "ioctl_tiocsti_highbits",
    "ioctl_tioclinux", "socket_packet", "socket_netlink_audit", "socket_vsock",
    "execveat_empty_path",
]
ALLOWED = [
    "allowed_ioctl_tcgets", "allowed_socket_unix", "allowed_socket_inet",
    "allowed_socket_inet6", "allowed_socket_netlink_route", "allowed_execveat",
    "allowed_unshare", "allowed_getpid",
]


@pytest.fixture(scope="module")
def inside():
    r = su.run(su.spec([su.PROBE, "syscalls"]))
    assert r.rc == 0 and r.execed, r
    return su.probe_lines(r.stdout)


@pytest.fixture(scope="module")
def outside():
    out = subprocess.run([su.PROBE, "syscalls"], capture_output=True, text=True, check=True)
    return su.probe_lines(out.stdout)


@pytest.mark.parametrize("name", DENIED)
def test_denied_syscall_returns_eperm_inside_and_not_outside(name, inside, outside):
    assert inside[name] == errno.EPERM
    # Positive control: unconfined (even as root) the same call is not EPERM.
    assert outside[name] != errno.EPERM


@pytest.mark.parametrize("name", ALLOWED)
def test_neighbouring_allowed_calls_pass_the_filter(name, inside, outside):
    assert inside[name] != errno.EPERM
    assert inside[name] == outside[name]


def test_clone3_answers_enosys_so_libc_falls_back(inside, outside):
    assert inside["clone3"] == errno.ENOSYS
    assert outside["clone3"] != errno.ENOSYS


def test_agent_can_still_fork_through_clone_fallback():
    r = su.run(su.spec(["/bin/sh", "-c", "/bin/echo child-ran; wait"]))
    assert r.rc == 0 and r.stdout.strip() == "child-ran", r


def test_int80_32bit_syscall_kills_the_agent():
    r = su.run(su.spec([su.PROBE, "int80"]))
    assert r.execed, r
    assert r.rc == 128 + signal.SIGSYS, r
    assert "int80 returned" not in r.stdout
    # Positive control: unconfined, the i386 entry point works (IA32 emulation).
    out = subprocess.run([su.PROBE, "int80"], capture_output=True, text=True)
    assert out.returncode == 0 and "int80 returned" in out.stdout


def test_x32_syscall_kills_the_agent():
    r = su.run(su.spec([su.PROBE, "x32"]))
    assert r.execed and r.rc == 128 + signal.SIGSYS, r
    out = subprocess.run([su.PROBE, "x32"], capture_output=True, text=True)
    assert out.returncode == 0 and "x32 returned" in out.stdout
