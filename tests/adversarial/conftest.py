"""Shared fixtures of the adversarial suite: one upstream namespace (echo
servers on TEST-NET-2), one canary namespace (TEST-NET-3) and host-side bait
the agent must not reach (an abstract unix socket, a loopback listener, a
process, a secret file, a setuid copy of `id`). Everything is removed at the
end of the session, even when tests fail."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from adv_util import LAUNCHER, PROBE_BIN, SUPERVISOR, AdvSandbox, Canary, Upstream  # noqa: E402
# Sanitizer builds: a report written during a test fails it.
from sanitizer_util import (pytest_configure, pytest_report_header,  # noqa: E402,F401
                            pytest_runtest_makereport)

NET = '["198.51.100.0/24"]'


def pytest_collection_modifyitems(config, items):
    missing = [p for p in (SUPERVISOR, LAUNCHER, PROBE_BIN) if not os.path.exists(p)]
    if os.geteuid() == 0 and not missing:
        return
    skip = pytest.mark.skip(reason=f"needs root and built binaries (missing: {missing})")
    for item in items:
        if "adversarial" in str(item.fspath):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def upstream():
    up = Upstream().start()
    yield up
    up.stop()


@pytest.fixture(scope="session")
def canary():
    c = Canary()
    try:
        yield c.up()
    finally:
        c.down()


class Bait:
    """Host-side things outside every sandbox."""

    def __init__(self):
        tag = os.getpid()
        self.dir = tempfile.mkdtemp(prefix="osadv-bait-", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        self.secret_file = os.path.join(self.dir, "secret.txt")
        with open(self.secret_file, "w") as f:
            f.write("SECRET host file\n")
        os.chmod(self.secret_file, 0o644)  # DAC would let uid 65534 read it
        self.suid_dir = tempfile.mkdtemp(prefix="osadv-suid-", dir="/var/tmp")
        os.chmod(self.suid_dir, 0o755)
        self.suid_binary = os.path.join(self.suid_dir, "suid-id")
        shutil.copy("/usr/bin/id", self.suid_binary)
        os.chown(self.suid_binary, 0, 0)
        os.chmod(self.suid_binary, 0o4755)
        self.abstract = f"osadv-host-{tag}"
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind("\0" + self.abstract)
        self.unix.listen()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.listen_port = self.listener.getsockname()[1]
        self.victim = subprocess.Popen(["sleep", "600"])

    def config(self):
        return {"secret_file": self.secret_file, "suid_binary": self.suid_binary,
                "host_abstract": self.abstract, "host_listen_port": self.listen_port,
                "victim_pid": self.victim.pid}

    def close(self):
        self.victim.kill()
        self.victim.wait()
        self.unix.close()
        self.listener.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.suid_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def bait():
    b = Bait()
    yield b
    b.close()


@pytest.fixture(scope="module")
def run_sandbox(upstream, canary, bait):
    """Factory: runs one sandbox to completion and keeps it for the module's
    tests (they all assert on the same run)."""
    made = []

    def run(name, policy, probes, **kw):
        extra = dict(bait.config(), **kw.pop("extra_config", {}))
        sb = AdvSandbox(name, policy, probes, upstream, canary, extra_config=extra, **kw)
        made.append(sb)
        return sb.run()

    yield run
    for sb in made:
        sb.cleanup()


def last(records, **match):
    for r in reversed(records):
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None
