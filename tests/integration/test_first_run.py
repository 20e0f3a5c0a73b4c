"""What a newcomer's first commands build and install: `make demo` installs
only the Debian packages the build and the demo use and builds nothing from
Go (the test-only tools toml-test and the Kubernetes control plane are for
`make check`). Proven by pointing the Go tool builders at an empty cache and a
`go` that fails: the demo's step succeeds, the check's step fails trying."""

import os
import subprocess

from tests.lib import build

INSTALL_DEPS = os.path.join(build.REPO, "scripts", "install-deps")


def run_install_deps(tmp_path, *args):
    env = dict(os.environ, GO="/bin/false", OPENSHELL_TESTENV_CACHE=str(tmp_path / "cache"))
    return subprocess.run([INSTALL_DEPS, *args], env=env, capture_output=True, text=True,
                          timeout=600)


def test_demo_dependencies_build_nothing_from_go(tmp_path):
    r = run_install_deps(tmp_path)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "install-deps: demo dependencies present" in r.stdout
    assert "toml-test" not in r.stderr and "kube-testenv" not in r.stderr
    assert not (tmp_path / "cache").exists()


def test_check_dependencies_do_build_the_go_tools(tmp_path):
    # Positive control: the same environment makes the --check step try Go.
    r = run_install_deps(tmp_path, "--check")
    assert r.returncode != 0
    assert "install-toml-test: go install failed" in r.stderr, r.stderr


def test_install_deps_refuses_an_unknown_argument(tmp_path):
    r = run_install_deps(tmp_path, "--everything")
    assert r.returncode == 2 and "unknown argument '--everything'" in r.stderr


def test_make_targets_use_the_right_set():
    def recipe(target):
        return subprocess.run(["make", "-n", "-C", build.REPO, target], capture_output=True,
                              text=True, check=True).stdout
    assert "scripts/install-deps\n" in recipe("deps")
    assert "scripts/install-deps --check" in recipe("check-deps")
    demo = recipe("demo")
    assert "scripts/install-deps" in demo and "--check" not in demo
    assert "scripts/install-deps --check" in recipe("check")
