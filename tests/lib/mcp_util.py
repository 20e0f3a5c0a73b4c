"""The real MCP SDK for the tests: the python of the pinned venv that
scripts/install-py-test-deps builds (outside the checkout), and a server
from tests/integration/mcp_server.py in the proxy test namespace."""
import os
import subprocess

import pytest

from tests.lib import build
from tests.lib.proxy_util import UPSTREAM_IP

INSTALL = os.path.join(build.REPO, "scripts", "install-py-test-deps")
SERVER = os.path.join(build.TESTS, "integration", "mcp_server.py")
CLIENT = os.path.join(build.TESTS, "integration", "mcp_client.py")


def python():
    """The venv's python (installing the pinned packages the first time)."""
    r = subprocess.run([INSTALL], capture_output=True, text=True)
    if r.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"install-py-test-deps failed: {r.stderr}")
        pytest.skip(f"the MCP SDK venv is not available: {r.stderr.strip()}")
    return r.stdout.strip().splitlines()[-1]


class Server:
    """mcp_server.py at UPSTREAM_IP:port inside the upstream's namespace."""

    def __init__(self, upstream, port, mode="sse", addr=UPSTREAM_IP):
        self.log = os.path.join(upstream.dir, f"mcp-{port}.log")
        open(self.log, "w").close()
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", upstream.ns, python(), SERVER, addr, str(port),
             self.log, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready", self.proc.stderr.read()
        self._wait_listening(upstream, port)

    @staticmethod
    def _wait_listening(upstream, port):
        for _ in range(100):
            r = subprocess.run(["ip", "netns", "exec", upstream.ns, "ss", "-ltnH",
                                f"sport = :{port}"], capture_output=True, text=True)
            if r.stdout.strip():
                return
            subprocess.run(["sleep", "0.1"])
        raise AssertionError(f"MCP server on :{port} did not listen")

    def calls(self):
        import json
        with open(self.log) as f:
            return [json.loads(l)["tool"] for l in f if l.strip()]

    def clear(self):
        open(self.log, "w").close()

    def stop(self):
        self.proc.kill()
        self.proc.wait()
