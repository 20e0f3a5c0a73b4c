"""Where the build under test is and where each of our binaries lives in it.

The one place that knows the build layout: BUILD is $OPENSHELL_BUILD or, by
default, build/ at the root of the checkout holding this file (never an
absolute path of some checkout). A test states the binaries it runs with
`pytestmark = build.needs("openshell-gateway", ...)` or calls
`build.require(...)`; a missing one skips the test with its path as the
reason, except under CI=true, where it FAILS it: a moved binary must not
quietly empty a layer."""
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(REPO, "tests")
BUILD = os.environ.get("OPENSHELL_BUILD") or os.path.join(REPO, "build")

# name -> path under the build directory
BINARIES = {
    "openshell-sandbox": "src/sandbox/openshell-sandbox",
    "sandbox-probe": "src/sandbox/sandbox-probe",
    "sandbox-deny": "src/sandbox/sandbox-deny",
    "openshell-supervisor": "src/supervisor/openshell-supervisor",
    "boundary-bench": "src/supervisor/boundary-bench",
    "openshell-proxy": "src/supervisor/egress/openshell-proxy",
    "openshell-gateway": "src/gateway/openshell-gateway",
    "openshell": "src/cli/openshell",
    "toml-decoder": "tools/toml-decoder/toml-decoder",
    "netbench": "bench/netbench",
}

MARKER = "openshell_binaries"


def binary(name, build_dir=None):
    """Absolute path of one of our binaries in BUILD, or in build_dir
    (KeyError for a name not in BINARIES: add it there, not a path in a test)."""
    return os.path.join(build_dir or BUILD, BINARIES[name])


def in_ci():
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def missing(*names):
    """Paths of the named binaries that are not built (not executable)."""
    return [binary(n) for n in names if not os.access(binary(n), os.X_OK)]


def require(*names):
    """In a test or fixture: skip when one of these binaries is not built,
    or fail under CI=true."""
    gone = missing(*names)
    if not gone:
        return
    msg = f"not built: {', '.join(gone)} (OPENSHELL_BUILD={BUILD})"
    if in_ci():
        pytest.fail(f"{msg}; CI=true: a missing binary fails instead of skipping", pytrace=False)
    pytest.skip(msg)


def needs(*names):
    """Marker for a module (pytestmark) or test that runs these binaries;
    tests/conftest.py calls require() with them before each test."""
    for n in names:
        binary(n)  # an unknown name is a mistake in the test, not a skip
    return getattr(pytest.mark, MARKER)(*names)
