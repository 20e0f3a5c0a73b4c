"""The CLI's own surface as a newcomer meets it: --help anywhere prints help
and does nothing else (no gateway started, no API call: a canary listener
named as the gateway sees no connection, and the state directory is never
created); --version; a bad flag is reported as a bad flag (with the nearest
good one) and exits 2; exec takes -it and NAME CMD as docker users type
them; -o json and -o yaml on read commands; the exit codes are documented;
`openshell completion bash|zsh` completes from the same command table."""

import json
import os
import re
import socket
import subprocess
import threading

import pytest
import yaml

from tests.lib import build
from tests.lib.gateway_util import CLI

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")


class Canary:
    """A TCP listener posing as the gateway: counts the connections it gets."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            c.close()


@pytest.fixture
def offline(tmp_path):
    canary = Canary()
    state = tmp_path / "never-created"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSHELL_")}

    def run(*args, gateway=True):
        e = dict(env, OPENSHELL_GATEWAY_STATE_DIR=str(state))
        if gateway:
            e["OPENSHELL_GATEWAY"] = f"http://127.0.0.1:{canary.port}"
        return subprocess.run([CLI, *args], env=e, capture_output=True, text=True, timeout=30)
    run.canary = canary
    yield run
    canary.sock.close()
    assert canary.hits == 0, "the CLI called the API"
    assert not state.exists(), "the CLI set up a local gateway"


HELP_CASES = [
    ["--help"], ["-h"], ["sandbox", "--help"], ["sandbox", "create", "--help"],
    ["sandbox", "create", "--name", "x", "-h", "--", "sleep", "1"],
    ["sandbox", "list", "--help"], ["sandbox", "exec", "--help"], ["sandbox", "logs", "x", "-h"],
    ["policy", "set", "x", "--help"], ["provider", "create", "--help"], ["gateway", "start", "-h"],
    ["gateway", "stop", "--help"], ["-o", "json", "sandbox", "get", "x", "--help"],
]


@pytest.mark.parametrize("args", HELP_CASES, ids=[" ".join(a) for a in HELP_CASES])
def test_help_anywhere_prints_help_and_does_nothing_else(offline, args):
    r = offline(*args, gateway="gateway" not in args)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: openshell"), r.stdout
    assert r.stderr == ""


def test_help_after_dashdash_belongs_to_the_agent_command(offline):
    # Positive control for the canary: a real command does call the API.
    r = offline("sandbox", "create", "--", "grep", "--help")
    assert r.returncode == 1 and offline.canary.hits >= 1, r.stderr
    offline.canary.hits = 0  # expected here; the fixture checks the others


def test_version(offline):
    meson = open(os.path.join(build.REPO, "meson.build")).read()
    version = re.search(r"version : '([^']+)'", meson).group(1)
    r = offline("--version")
    assert r.returncode == 0 and r.stdout == f"openshell {version}\n"


@pytest.mark.parametrize("args,message", [
    (["sandbox", "list", "--wtach"], "openshell sandbox list: unknown flag --wtach "
                                     "(did you mean --watch?)"),
    (["sandbox", "create", "--nmae", "x"], "openshell sandbox create: unknown flag --nmae"),
    (["sandbox", "create", "--name"], "openshell sandbox create: --name needs a value"),
    (["sandbox", "get", "x", "--json"], "openshell sandbox get: unknown flag --json"),
    (["policy", "set", "x", "--policy"], "openshell policy set: --policy needs a value"),
    (["sandbox", "lst"], 'unknown sandbox command "lst"'),
    (["sandboxes"], 'unknown command "sandboxes"'),
    (["-o", "xml", "sandbox", "list"], "-o xml: expected json or yaml"),
    (["--verbose"], "unknown option --verbose"),
    (["completion", "fish"], '"fish": expected bash or zsh'),
])
def test_a_bad_flag_is_reported_as_a_bad_flag(offline, args, message):
    r = offline(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr, r.stderr


def test_exit_codes_are_documented(offline):
    r = offline("--help")
    assert "Exit codes: 0 done; 1 failed" in r.stdout and "124 timed out" in r.stdout
    assert "2 bad usage" in r.stdout and "130 interrupted" in r.stdout


def test_exec_as_docker_users_type_it(gw):
    gw.cli("sandbox", "create", "--name", "box", "--detach", "--", "sleep", "300", check=0)
    r = gw.cli("sandbox", "exec", "-it", "box", "tty")
    assert r.returncode == 0 and r.stdout.startswith("/dev/pts/"), (r.stdout, r.stderr)
    r = gw.cli("sandbox", "exec", "-i", "box", "--", "/bin/sh", "-c", "read x; echo got $x")
    assert "got" in r.stdout
    r = subprocess.run([CLI, "sandbox", "exec", "-i", "box", "cat"], input="piped\n",
                       env=gw.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "piped\n", (r.stdout, r.stderr)
    # Without "--", what follows NAME is the command, its own flags included.
    r = gw.cli("sandbox", "exec", "box", "id", "-u")
    assert r.returncode == 0 and r.stdout.strip().isdigit(), (r.stdout, r.stderr)
    # Without a terminal, no pty: positive control for -t.
    r = gw.cli("sandbox", "exec", "box", "tty")
    assert "not a tty" in r.stdout, r.stdout


def test_read_commands_speak_json_and_yaml(gw, tmp_path):
    gw.cli("sandbox", "create", "--name", "box", "--detach", "--", "sleep", "300", check=0)
    gw.cli("provider", "create", "--name", "p1", "--credential", "K=secret-value-1", check=0)
    for args, key in [(["sandbox", "list"], "sandboxes"), (["sandbox", "get", "box"], "name"),
                      (["policy", "list", "box"], "revisions"), (["policy", "get", "box"],
                                                                   "policy"),
                      (["provider", "list"], "providers"), (["gateway", "status"], "driver")]:
        for fmt, parse in [("json", json.loads), ("yaml", yaml.safe_load)]:
            for where in ("before", "after"):
                argv = ["-o", fmt, *args] if where == "before" else [*args, "-o", fmt]
                r = gw.cli(*argv)
                assert r.returncode == 0, (argv, r.stderr)
                doc = parse(r.stdout)
                assert key in doc, (argv, r.stdout)
    # Same data both ways: YAML keeps the types (a quoted '100', a real null).
    j = json.loads(gw.cli("-o", "json", "sandbox", "get", "box", check=0).stdout)
    y = yaml.safe_load(gw.cli("-o", "yaml", "sandbox", "get", "box", check=0).stdout)
    assert y == j
    assert y["spec"]["command"] == ["sleep", "300"] and y["exit_code"] is None


def complete(shell_words, script):
    line = " ".join(shell_words)
    words = "(" + " ".join(f"'{w}'" for w in shell_words) + ")"
    prog = (f'eval "$({CLI} completion bash)"; COMP_WORDS={words}; '
            f'COMP_CWORD={len(shell_words) - 1}; COMP_LINE="{line}"; _openshell; '
            'printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_completion_bash_completes_commands_and_flags():
    assert complete(["openshell", "sa"], None) == ["sandbox"]
    assert complete(["openshell", "sandbox", "l"], None) == ["list", "logs"]
    assert complete(["openshell", "sandbox", "list", "--w"], None) == ["--watch"]
    assert "--detach" in complete(["openshell", "sandbox", "create", "--"], None)
    assert complete(["openshell", "completion", ""], None) == ["bash", "zsh"]


def test_completion_zsh_loads_through_bashcompinit(offline):
    r = offline("completion", "zsh")
    assert r.returncode == 0
    assert "bashcompinit" in r.stdout and "complete -o default -F _openshell openshell" in r.stdout
    # The function it defines is the bash one, which bash runs (above).
    bash = offline("completion", "bash").stdout
    assert r.stdout.split("_openshell() {", 1)[1] == bash.split("_openshell() {", 1)[1]
