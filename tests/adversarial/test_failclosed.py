"""Fail-closed ordering: nothing of the agent runs before the boundary is
confirmed (an injected setup failure means no agent at all), the fence
stands at the agent's first instruction (see test_network), and a
supervisor crash mid-session leaves no way out: no proxy, the fence still
rejects, the canary sees nothing."""
import shutil
import signal
import subprocess

import pytest

from tests.lib.adv_util import AdvSandbox
from tests.lib.adv_util import NET

POLICY = f"""  web:
    endpoints:
      - {{ host: upstream.test, port: 80, allowed_ips: {NET} }}
    binaries:
      - {{ path: "/usr/bin/python3*" }}
"""


def crash(sb):
    sb.proc.send_signal(signal.SIGKILL)
    sb.proc.wait()


@pytest.fixture(scope="module")
def crashed(run_sandbox):
    sb = run_sandbox("crash", POLICY, ["net_proxy_control", "fc_after_crash"],
                     on_barrier={"crash": crash})
    yield sb
    # A killed supervisor cannot tear down: remove what it left behind.
    subprocess.run(["ip", "link", "del", sb.veth], capture_output=True)
    shutil.rmtree(f"/run/openshell/{sb.sandbox_id}", ignore_errors=True)


@pytest.mark.parametrize("step", ["proxy", "nftables", "veth"])
def test_injected_setup_failure_never_starts_the_agent(upstream, canary, bait, step):
    sb = AdvSandbox(f"fail{step[:2]}", POLICY, ["net_tcp_canary"], upstream, canary,
                    extra_config=bait.config(), env={"OPENSHELL_TEST_FAIL_STEP": step})
    try:
        sb.run(timeout=60)
        assert sb.rc != 0
        assert "STARTED" not in sb.out_lines and not sb.results
        assert sb.barriers == []
    finally:
        sb.cleanup()


def test_normal_start_runs_the_agent_positive_control(crashed):
    assert "STARTED" in crashed.out_lines
    assert crashed.result("net_proxy_control")["status"] == 200


def test_supervisor_crash_leaves_no_way_out(crashed, canary):
    r = crashed.results.get("fc_after_crash")
    print("after crash:", r)
    if r is None:  # the agent died with its supervisor: closed too
        assert "DONE" not in crashed.out_lines
    else:
        assert r["proxy"]["ok"] is False
        assert r["canary"]["ok"] is False and r["canary"]["errno"] == "ECONNREFUSED"
        assert r["udp"]["ok"] is False
    assert not canary.hits_from(crashed.agent_addr, wait=0.5)
    assert not [h for h in canary.poll(0.1) if "crash" in h["data"]]
