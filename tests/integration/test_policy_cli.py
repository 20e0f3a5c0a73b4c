"""`openshell policy validate FILE...`: `FILE: ok` on stdout for valid files,
every error (FILE:LINE:COL: key.path: ...) on stderr for invalid ones, exit 0/1."""
import pathlib
import subprocess


from tests.lib import build

ROOT = pathlib.Path(build.REPO)
CLI = pathlib.Path(build.binary("openshell"))
EXAMPLES = sorted((ROOT / "examples" / "policies").glob("*.yaml"))
MALFORMED = ROOT / "tests" / "unit" / "policy-malformed"

pytestmark = build.needs("openshell")


def run(*args):
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=30)


def test_examples_validate_ok():
    assert EXAMPLES, "no example policies"
    r = run("policy", "validate", *EXAMPLES)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{p}: ok" for p in EXAMPLES]
    assert r.stderr == ""


def test_invalid_file_prints_every_error_and_fails(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nprocess: { run_as_user: root }\nlandlock: { compatibility: x }\n")
    r = run("policy", "validate", EXAMPLES[0], bad)
    assert r.returncode == 1
    assert r.stdout == f"{EXAMPLES[0]}: ok\n"  # the valid one is still reported
    errors = r.stderr.splitlines()
    assert errors[0].startswith(f"{bad}:2:25: process.run_as_user: expected")
    assert errors[1].startswith(f"{bad}:3:28: landlock.compatibility: expected")
    assert len(errors) == 2


def test_malformed_corpus_all_fail():
    files = sorted(MALFORMED.glob("*.yaml"))
    assert len(files) >= 40
    r = run("policy", "validate", *files)
    assert r.returncode == 1
    assert r.stdout == ""
    for f in files:
        assert f"{f}:" in r.stderr, f"no error for {f.name}"


def test_missing_file_and_usage(tmp_path):
    r = run("policy", "validate", tmp_path / "absent.yaml")
    assert r.returncode == 1
    assert "absent.yaml" in r.stderr
    assert run("policy").returncode == 2
    assert run("--help").returncode == 0


COMPAT = ROOT / "tests" / "policy-compat"


def test_warnings_exit_0_and_strict_refuses(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("version: 1\nnetwork_policies:\n  p:\n    endpoints:\n"
                 "      - { host: api.example.com, port: 443, protocol: rest, access: full,"
                 " tls: terminate }\n")
    r = run("policy", "validate", f)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{f}: ok (1 warning)\n"
    assert r.stderr.startswith(f"{f}:5:80: warning: network_policies.p.endpoints[0].tls: ")
    assert "deprecated" in r.stderr
    r = run("policy", "validate", "--strict", f)
    assert r.returncode == 1
    assert r.stdout == ""
    assert f"{f}: 1 warning (--strict: refused)" in r.stderr
    # Control: a file without warnings passes --strict.
    r = run("policy", "validate", "--strict", EXAMPLES[0])
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_compat_corpus_valid_loads_invalid_refused():
    valid = sorted((COMPAT / "valid").glob("*.yaml"))
    invalid = sorted((COMPAT / "invalid").glob("*.yaml"))
    assert len(valid) >= 12 and len(invalid) >= 10
    r = run("policy", "validate", *valid)
    assert r.returncode == 0, r.stderr
    assert "error" not in r.stderr
    for f in invalid:
        r = run("policy", "validate", f)
        assert r.returncode == 1, f.name
        assert r.stderr.startswith(f"{f}:"), r.stderr
