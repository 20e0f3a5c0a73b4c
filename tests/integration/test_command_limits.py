"""Agent commands as harnesses pass them (`python3 -c SCRIPT`, `sh -c
SCRIPT`): through the real CLI, gateway, supervisor and launcher, every
argument up to the kernel's own limit (MAX_ARG_STRLEN: 131071 bytes and its
NUL) and up to 2 MiB in all (ARG_MAX with the usual 8 MiB stack) reaches the
agent intact; one byte over either is refused at create, naming the limit and
its value. The CLI itself gets a larger stack limit here so that it can be
handed 2 MiB and more (its own exec has the same limits); no exec can carry
an argument over MAX_ARG_STRLEN, so that one comes through the API."""

import resource

import pytest

from tests.lib import build

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor",
                         "openshell-sandbox")

ARG_MAX_ONE = 128 * 1024 - 1
TOTAL_MAX = 2 * 1024 * 1024
# Prints each argument's length, first and last byte: a truncated or mangled
# argument shows.
COUNT = 'import sys\nfor a in sys.argv[1:]: print(f"{len(a)}:{a[0]}{a[-1]}")'
HEAD = ["/usr/bin/python3", "-c", COUNT]


def big_stack():
    resource.setrlimit(resource.RLIMIT_STACK, (64 << 20, resource.RLIM_INFINITY))


def cli(gw, *args):
    import subprocess
    from tests.lib.gateway_util import CLI
    return subprocess.run([CLI, *args], env=gw.env, capture_output=True, text=True, timeout=120,
                          preexec_fn=big_stack)


def arg(n, first="a", last="z"):
    return first + "m" * (n - 2) + last


def test_one_argument_at_the_kernels_limit_reaches_the_agent(gw):
    r = cli(gw, "sandbox", "create", "--name", "one", "--", *HEAD, arg(ARG_MAX_ONE))
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"{ARG_MAX_ONE}:az\n" in r.stdout, r.stdout[-500:]


def test_one_byte_over_the_per_argument_limit_is_refused_naming_it(gw):
    # No exec can carry it, the CLI's included: an API client sends it.
    st, body = gw.request("POST", "/v1/sandboxes", {
        "name": "over", "command": [*HEAD, arg(ARG_MAX_ONE + 1)]})
    assert st == 400, (st, body)
    assert f"spec.command[3]: {ARG_MAX_ONE + 1} bytes: over the kernel's limit for one " \
           f"argument, {ARG_MAX_ONE} bytes (MAX_ARG_STRLEN" in body["message"], body
    assert gw.sandbox("over") is None  # nothing was created


def two_mib_of_arguments(extra):
    """Arguments that, with HEAD, make exactly TOTAL_MAX + extra bytes (NULs counted)."""
    used = sum(len(a) + 1 for a in HEAD)
    args = []
    while used + ARG_MAX_ONE + 1 <= TOTAL_MAX:
        args.append(arg(ARG_MAX_ONE))
        used += ARG_MAX_ONE + 1
    args.append(arg(TOTAL_MAX - used - 1 + extra))
    return args


def test_two_mib_in_all_reach_the_agent(gw):
    args = two_mib_of_arguments(0)
    r = cli(gw, "sandbox", "create", "--name", "all", "--", *HEAD, *args)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    want = [f"{len(a)}:az" for a in args]
    assert [l for l in lines if ":" in l and l.split(":")[0].isdigit()] == want


def test_one_byte_over_two_mib_is_refused_naming_the_limit(gw):
    args = two_mib_of_arguments(1)
    r = cli(gw, "sandbox", "create", "--name", "toomuch", "--", *HEAD, *args)
    assert r.returncode == 1
    assert f"spec.command: {TOTAL_MAX + 1} bytes in all (with a NUL each): over the limit " \
           f"of {TOTAL_MAX} bytes (2 MiB" in r.stderr, r.stderr[-2000:]
