"""openshell-sandbox runs in an arbitrary image: no dynamic dependencies, and
it works in a chroot holding nothing but Debian's busybox-static, resolving the
`sandbox` user through that image's own /etc/passwd."""

import json
import os
import shutil
import subprocess

import pytest

from tests.lib import build, sandbox_util as su
from tests.lib.sanitizer_util import skip_if_sanitized

BUSYBOX = "/bin/busybox"

# Every test here runs the static launcher or checks that it is static.
pytestmark = [build.needs("openshell-sandbox", "sandbox-probe"),
              skip_if_sanitized("the launcher is linked dynamically against the sanitizer "
                                "runtimes, so it is not static and a busybox-only image "
                                "cannot run it")]


def test_launcher_has_no_dynamic_dependencies():
    dyn = subprocess.run(["readelf", "-d", su.LAUNCHER], capture_output=True, text=True)
    assert "NEEDED" not in dyn.stdout, dyn.stdout
    hdr = subprocess.run(["readelf", "-l", su.LAUNCHER], capture_output=True, text=True)
    assert "INTERP" not in hdr.stdout and "LOAD" in hdr.stdout
    # Positive control: the same check does see the probe's libc dependency.
    probe = subprocess.run(["readelf", "-d", su.PROBE], capture_output=True, text=True)
    assert "NEEDED" in probe.stdout and "libc.so" in probe.stdout


@pytest.fixture
def image():
    """A minimal root filesystem: busybox-static, /etc/passwd, /etc/group."""
    if not os.path.exists(BUSYBOX):
        pytest.skip("busybox-static is not installed")
    root = su.make_workdir()
    for d in ("bin", "etc", "proc", "tmp", "dev", "home/sandbox", "sbin"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    os.chown(os.path.join(root, "home/sandbox"), 1234, 2345)
    shutil.copy(BUSYBOX, os.path.join(root, "bin/busybox"))
    for applet in ("sh", "id", "cat", "ls", "echo", "touch"):
        os.symlink("busybox", os.path.join(root, "bin", applet))
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nsandbox:x:1234:2345::/home/sandbox:/bin/sh\n")
    with open(os.path.join(root, "etc/group"), "w") as f:
        f.write("root:x:0:\nsandbox:x:2345:\n")
    shutil.copy(su.LAUNCHER, os.path.join(root, "sbin/openshell-sandbox"))
    yield root
    su.remove_workdir(root)


SYS_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def run_in_image(root, spec, container=False):
    """Runs the launcher chroot'ed into root. container=True first makes root
    a mount point in a private mount namespace, as a container runtime does."""
    with open(os.path.join(root, "spec.json"), "w") as f:
        json.dump(spec, f)
    st_r, st_w = os.pipe()
    cmd = [shutil.which("chroot", path=SYS_PATH), root, "/sbin/openshell-sandbox", "--spec",
           "/spec.json", "--status-fd", str(st_w)]
    if container:
        cmd = [shutil.which("unshare", path=SYS_PATH), "--mount", "--propagation", "private",
               "/bin/sh", "-c", 'mount --bind "$0" "$0" && exec "$@"', root] + cmd
    p = subprocess.Popen(cmd, pass_fds=(st_w,), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={"PATH": SYS_PATH})
    os.close(st_w)
    with os.fdopen(st_r) as st:
        out, err = p.communicate(timeout=60)
        status = su.parse_status(st.read())
    return su.Result(p.returncode, out.decode(), err.decode(), status)


def image_spec(argv, **extra):
    s = {"argv": argv, "env": {"PATH": "/bin"}, "user": "sandbox", "cwd": "/home/sandbox",
         "filesystem": {"read_only": ["/bin", "/etc", "/proc"],
                        "read_write": ["/home/sandbox", "/tmp"]},
         "landlock": "hard_requirement", "new_namespaces": True}
    s.update(extra)
    return s


AGENT = ["/bin/sh", "-c", "id -u; id -g; touch /home/sandbox/ok && echo wrote; "
         "touch /etc/nope 2>/dev/null || echo denied; echo $$"]


def test_pod_shaped_boundary_works_in_a_busybox_image(image):
    # As in a Kubernetes pod: no new namespaces, everything else applies.
    r = run_in_image(image, image_spec(AGENT, new_namespaces=False))
    assert r.rc == 0 and r.execed, r
    assert r.stdout.split()[:4] == ["1234", "2345", "wrote", "denied"], r
    assert os.path.exists(os.path.join(image, "home/sandbox/ok"))
    assert not os.path.exists(os.path.join(image, "etc/nope"))


def test_full_boundary_works_in_a_container_shaped_busybox_image(image):
    r = run_in_image(image, image_spec(AGENT), container=True)
    assert r.rc == 0 and r.execed, r
    # Same answers, and the agent is pid 2 of its own PID namespace.
    assert r.stdout.split() == ["1234", "2345", "wrote", "denied", "2"], r


def test_new_namespaces_in_a_bare_chroot_fail_clearly(image):
    r = run_in_image(image, image_spec(AGENT))
    assert r.rc == 125 and r.failure["step"] == "namespaces", r
    assert "not a mount point" in r.failure["message"]
    assert not os.path.exists(os.path.join(image, "home/sandbox/ok"))


def test_unknown_user_in_the_image_is_a_spec_failure(image):
    r = run_in_image(image, image_spec(["/bin/true"], user="nobody-here"))
    assert r.rc == 125 and r.failure["step"] == "spec", r
    assert "/etc/passwd" in r.failure["message"]
    r = run_in_image(image, image_spec(["/bin/true"], user="root"))
    assert r.rc == 125 and r.failure["step"] == "spec" and r.failure["errno"] == 1, r
