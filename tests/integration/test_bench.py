"""test_bench.py - the benchmark harness (bench/run, bench/lib.sh) itself:
case discovery, skip/crash/missing-line classification, smoke mode, and the
lib.sh statistics. Uses throwaway cases; never asserts on a timing figure."""
import os
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.lib import build

ROOT = Path(build.REPO)
RUN = ROOT / "bench" / "run"
LIB = ROOT / "bench" / "lib.sh"


def write_case(cases: Path, name: str, body: str, executable: bool = True) -> None:
    p = cases / name
    p.write_text("#!/usr/bin/env bash\n" + textwrap.dedent(body))
    if executable:
        p.chmod(p.stat().st_mode | stat.S_IXUSR)


def run_bench(cases: Path, *args: str, env_extra=None):
    env = dict(os.environ, BENCH_CASES_DIR=str(cases), BENCH_OUT="-", BENCH_TIMEOUT="20")
    env.update(env_extra or {})
    return subprocess.run([str(RUN), *args], env=env, capture_output=True, text=True, timeout=120)


def summary_lines(out: str):
    return [l for l in out.splitlines() if l.startswith("bench ")]


GOOD = f"""\
    . {LIB}
    bench_init good
    ours() {{ echo 2; }}
    peer() {{ echo 4; }}
    bench_alternate ours peer
    bench_report "$BENCH_OURS" "$BENCH_PEER" ms fakepeer
"""


@pytest.fixture
def cases(tmp_path):
    d = tmp_path / "cases"
    d.mkdir()
    return d


def test_good_case_reports_ratio_and_exits_zero(cases):
    write_case(cases, "good", GOOD)
    r = run_bench(cases)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bench good: ours=2 peer=4 ratio=0.5 unit=ms vs=fakepeer" in summary_lines(r.stdout)
    assert "bench: 1 ran, 0 skipped, 0 failed" in r.stdout
    assert "raw=[2 2 2 2 2 2 2]" in r.stdout  # default 7 rounds, raw figures shown


def test_skipped_case_is_not_a_failure(cases):
    write_case(cases, "good", GOOD)
    write_case(cases, "later", f"""\
        . {LIB}
        bench_init later
        bench_require_built src/does-not-exist/openshell
        echo "bench later: ours=1 peer=1 ratio=1 unit=ms"
    """)
    r = run_bench(cases)
    assert r.returncode == 0, r.stdout
    lines = summary_lines(r.stdout)
    assert any(l.startswith("bench later: skipped (not built yet: ") for l in lines), lines
    assert "bench: 1 ran, 1 skipped, 0 failed" in r.stdout


def test_crash_fails_the_run(cases):
    write_case(cases, "good", GOOD)
    write_case(cases, "crash", "echo 'bench crash: ours=1 peer=1 ratio=1 unit=ms'\nkill -SEGV $$\n")
    r = run_bench(cases)
    assert r.returncode != 0
    assert any(l.startswith("bench crash: FAILED (exit status") for l in summary_lines(r.stdout))
    # the healthy case still ran and reported
    assert any(l.startswith("bench good: ours=2") for l in summary_lines(r.stdout))


def test_missing_or_malformed_line_fails(cases):
    write_case(cases, "silent", "echo 'just raw figures 1 2 3'\n")
    write_case(cases, "malformed", "echo 'bench malformed: ours=1 ratio=1'\n")
    r = run_bench(cases)
    assert r.returncode != 0
    lines = summary_lines(r.stdout)
    assert any(l.startswith("bench silent: FAILED (no ") for l in lines), lines
    assert any(l.startswith("bench malformed: FAILED (no ") for l in lines), lines
    # positive control: each alone with a proper line passes
    write_case(cases, "silent", "echo 'bench silent: ours=1 peer=2 ratio=0.5 unit=ms'\n")
    write_case(cases, "malformed", "echo 'bench malformed: ours=1 peer=2 ratio=0.5 unit=x'\n")
    assert run_bench(cases).returncode == 0


def test_timeout_fails_the_case(cases):
    write_case(cases, "hang", "sleep 30\n")
    r = run_bench(cases, env_extra={"BENCH_TIMEOUT": "1"})
    assert r.returncode != 0
    assert "bench hang: FAILED (timed out after 1s)" in summary_lines(r.stdout)


def test_smoke_runs_one_round_without_warmup(cases):
    write_case(cases, "good", GOOD)
    r = run_bench(cases, "--smoke")
    assert r.returncode == 0, r.stdout
    assert "raw=[2]" in r.stdout
    assert "== good (smoke)" in r.stdout


def test_case_selection_and_listing(cases):
    write_case(cases, "good", GOOD)
    write_case(cases, "other", "exit 1\n")
    write_case(cases, "notes.txt", "not a case\n", executable=False)
    write_case(cases, "_helper", "exit 1\n")
    listed = run_bench(cases, "--list").stdout.split()
    assert listed == ["good", "other"]
    r = run_bench(cases, "good")
    assert r.returncode == 0 and "bench other" not in r.stdout
    assert run_bench(cases, "nope").returncode == 2  # unknown case named


def lib(script: str, env_extra=None) -> str:
    env = dict(os.environ, **(env_extra or {}))
    r = subprocess.run(["bash", "-c", f". {LIB}\n{script}"], env=env, capture_output=True,
                       text=True, timeout=30, check=True)
    return r.stdout.strip()


def test_lib_stats_median_min_max():
    assert lib("bench_stats 5 1 3") == "3 1 5 3"
    assert lib("bench_stats 4 1 3 2") == "2.5 1 4 4"  # even count: mean of the middle two
    assert lib("bench_stats 10 9.5 100") == "10 9.5 100 3"  # numeric, not lexical, sort


def test_lib_ratio_formatting():
    assert lib("bench_ratio 1 3") == "0.333"
    assert lib("bench_ratio 250 100") == "2.5"
    assert lib("bench_ratio 5 0") == "n/a"


def test_lib_alternate_swaps_order_each_round():
    script = """
        seq_file=$(mktemp)
        ours() { echo o >>"$seq_file"; echo 1; }
        peer() { echo p >>"$seq_file"; echo 2; }
        bench_alternate ours peer
        tr -d '\\n' <"$seq_file"; echo " $BENCH_OURS|$BENCH_PEER"
        rm -f "$seq_file"
    """
    out = lib(script, {"BENCH_ROUNDS": "3", "BENCH_WARMUP": "1"})
    # warm-up (op), then rounds: op, po, op
    assert out == "opoppoop 1 1 1 |2 2 2"


def test_lib_alternate_stops_on_failing_round():
    script = """
        ours() { echo 1; }
        peer() { return 3; }
        if bench_alternate ours peer; then echo ok; else echo failed; fi
    """
    assert lib(script) == "failed"
