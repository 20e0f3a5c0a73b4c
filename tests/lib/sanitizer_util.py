"""Sanitizer reports as test results, for the pytest layers run against a
sanitizer build (OPENSHELL_BUILD configured with meson's b_sanitize).

configure() points every sanitized binary the tests start at one per-run log
directory for ASan and LeakSanitizer reports (the processes inherit
ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS from os.environ) and makes UBSan
stop the process at its first error (its report stays on the process's
stderr: see docs/testing.md). The runtest hook fails the test during whose
setup, call or teardown a report file appeared or grew, and shows the report.
Against a normal build all of this does nothing. Shared by the integration
and adversarial conftest.py files."""

import json
import os
import tempfile

import pytest

from tests.lib import build

BUILD = build.BUILD
REPORT_CAP = 16000  # characters of one report shown in the failure
SUPPRESSIONS = os.path.join(build.TESTS, "integration", "lsan-known-leaks.supp")


def build_sanitizers(build_dir=BUILD):
    """b_sanitize of the build dir as meson recorded it ("none" when the dir
    is not a configured meson build)."""
    path = os.path.join(build_dir, "meson-info", "intro-buildoptions.json")
    try:
        with open(path) as f:
            opts = json.load(f)
    except (OSError, ValueError):
        return "none"
    for o in opts:
        if o.get("name") == "b_sanitize":
            return o.get("value") or "none"
    return "none"


SANITIZERS = build_sanitizers()
SANITIZED = SANITIZERS != "none"


def skip_if_sanitized(reason):
    """Marker for a test that has no meaning in a sanitizer build."""
    return pytest.mark.skipif(SANITIZED, reason=f"sanitizer build (b_sanitize={SANITIZERS}): "
                              f"{reason}")


_log_dir = None
_seen = {}  # report file -> (size, mtime) already attributed to a test


def configure():
    """Once per pytest run: makes the log directory and exports the options.
    Leak checking is on by default: a process that exits normally (the CLI,
    the gateway and proxy on SIGTERM, a supervisor whose agent ended) is
    checked at exit; one killed by a signal is simply not."""
    global _log_dir
    if not SANITIZED or _log_dir:
        return _log_dir
    _log_dir = os.environ.get("OPENSHELL_SAN_LOGDIR") or tempfile.mkdtemp(
        prefix="openshell-san-", dir="/var/tmp")
    os.makedirs(_log_dir, exist_ok=True)
    # Sticky and world-writable: a launcher that already dropped to the
    # agent's uid must still be able to write its report.
    os.chmod(_log_dir, 0o1777)
    # One prefix for both: with GCC the UBSan runtime is a second library
    # whose start-up sets the ASan runtime's report path from UBSAN_OPTIONS
    # (its own reports still go to stderr). log_exe_name: the file name says
    # which program wrote it; pids inside sandboxes repeat, hence the
    # grown-or-shrunk check in new_reports().
    log = f"log_path={_log_dir}/report:log_exe_name=1"
    os.environ["ASAN_OPTIONS"] = f"{log}:detect_leaks=1"
    os.environ["UBSAN_OPTIONS"] = f"{log}:halt_on_error=1:print_stacktrace=1"
    os.environ["LSAN_OPTIONS"] = f"suppressions={SUPPRESSIONS}:print_suppressions=0"
    new_reports()  # a reused directory: what an earlier run left is nobody's here
    return _log_dir


def without_leak_check(env):
    """env with LeakSanitizer off, for a process whose exit is not a
    meaningful leak check (see docs/testing.md)."""
    opts = env.get("ASAN_OPTIONS")
    return dict(env, ASAN_OPTIONS=f"{opts}:detect_leaks=0" if opts else "detect_leaks=0")


def sanitizer_env():
    """Just the sanitizer variables of this run (empty for a normal build)."""
    return {k: os.environ[k] for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")
            if k in os.environ}


def new_reports():
    """[(file, new text)] for reports written since the previous call."""
    if not _log_dir:
        return []
    out = []
    for name in sorted(os.listdir(_log_dir)):
        path = os.path.join(_log_dir, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        old_size, old_mtime = _seen.get(path, (0, None))
        if (st.st_size, st.st_mtime_ns) == (old_size, old_mtime):
            continue
        # Grown: the new part. Otherwise a pid reused the name: all of it.
        start = old_size if st.st_size > old_size else 0
        with open(path, errors="replace") as f:
            f.seek(start)
            out.append((path, f.read()))
        _seen[path] = (st.st_size, st.st_mtime_ns)
    return out


def format_reports(reports):
    parts = []
    for path, text in reports:
        if len(text) > REPORT_CAP:
            text = text[:REPORT_CAP] + f"\n[... {len(text) - REPORT_CAP} more characters]"
        parts.append(f"--- sanitizer report {path} ---\n{text}")
    return "\n".join(parts)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase of each test owns the reports written while it ran; a
    phase that passed but produced one fails (setup/teardown: an error)."""
    outcome = yield
    reports = new_reports()
    if not reports:
        return
    rep = outcome.get_result()
    text = format_reports(reports)
    if rep.passed or rep.skipped:
        rep.outcome = "failed"
        rep.longrepr = f"sanitizer report(s) written during {call.when}:\n{text}"
    else:
        rep.sections.append((f"sanitizer reports ({call.when})", text))


def pytest_configure(config):
    configure()


def pytest_report_header(config):
    if SANITIZED:
        return f"sanitizer build (b_sanitize={SANITIZERS}); reports in {configure()}"
    return None
