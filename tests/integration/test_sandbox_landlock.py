"""openshell-sandbox Landlock: writes only inside read_write, reads only inside
read_only/read_write, even for paths the agent owns; best_effort versus
hard_requirement when Landlock is missing (simulated with sandbox-deny)."""

import errno
import os

import pytest

from tests.lib import build
from tests.lib import sandbox_util as su

pytestmark = build.needs("openshell-sandbox", "sandbox-probe", "sandbox-deny")

ENOSYS = str(errno.ENOSYS)


@pytest.fixture
def dirs():
    base = su.make_workdir()
    ro = os.path.join(base, "ro")
    rw = os.path.join(base, "rw")
    outside = os.path.join(base, "outside")
    owned = os.path.join(base, "owned")
    for d in (ro, rw, outside, owned):
        os.mkdir(d)
        os.chmod(d, 0o777)
    os.chown(owned, su.AGENT_UID, su.AGENT_GID)
    os.chmod(owned, 0o700)
    for d in (ro, rw, outside, owned):
        with open(os.path.join(d, "f"), "w") as f:
            f.write("data")
        os.chmod(os.path.join(d, "f"), 0o666)
    os.chown(os.path.join(owned, "f"), su.AGENT_UID, su.AGENT_GID)
    yield {"base": base, "ro": ro, "rw": rw, "outside": outside, "owned": owned}
    su.remove_workdir(base)


def probe(dirs, cmd, path, new_namespaces=True, **extra):
    s = su.spec([su.PROBE, cmd, path], read_only=[dirs["ro"]], read_write=[dirs["rw"]],
                new_namespaces=new_namespaces, **extra)
    r = su.run(s)
    assert r.rc == 0 and r.execed, r
    return su.probe_lines(r.stdout)


@pytest.mark.parametrize("new_namespaces", [True, False])
def test_write_inside_read_write_succeeds(dirs, new_namespaces):
    target = os.path.join(dirs["rw"], "new")
    assert probe(dirs, "open-write", target, new_namespaces)["open_write"] == 0
    assert os.path.exists(target)


# With a mount namespace an unlisted path is absent from the agent's view
# (ENOENT); without one, Landlock alone refuses it (EACCES).
ABSENT_OR_DENIED = [(True, errno.ENOENT), (False, errno.EACCES)]


@pytest.mark.parametrize("new_namespaces,refusal", ABSENT_OR_DENIED)
def test_write_outside_read_write_is_refused(dirs, new_namespaces, refusal):
    # The directory is mode 0777: only the sandbox stands in the way.
    target = os.path.join(dirs["outside"], "new")
    assert probe(dirs, "open-write", target, new_namespaces)["open_write"] == refusal
    assert not os.path.exists(target)


@pytest.mark.parametrize("new_namespaces,refusal", [(True, errno.EROFS), (False, errno.EACCES)])
def test_write_into_read_only_path_is_refused(dirs, new_namespaces, refusal):
    # With a mount namespace the path is a read-only mount (EROFS, before
    # Landlock is asked); without one Landlock alone refuses (EACCES).
    target = os.path.join(dirs["ro"], "f")
    assert probe(dirs, "open-write", target, new_namespaces)["open_write"] == refusal
    # Positive control: the same file is readable.
    assert probe(dirs, "open-read", target, new_namespaces)["open_read"] == 0


@pytest.mark.parametrize("new_namespaces,refusal", ABSENT_OR_DENIED)
def test_read_outside_policy_fails_and_inside_succeeds(dirs, new_namespaces, refusal):
    outside = os.path.join(dirs["outside"], "f")
    assert probe(dirs, "open-read", outside, new_namespaces)["open_read"] == refusal
    assert probe(dirs, "open-read", os.path.join(dirs["rw"], "f"), new_namespaces)["open_read"] == 0


@pytest.mark.parametrize("new_namespaces,refusal", ABSENT_OR_DENIED)
def test_path_owned_by_agent_outside_policy_is_denied(dirs, new_namespaces, refusal):
    f = os.path.join(dirs["owned"], "f")
    assert probe(dirs, "open-read", f, new_namespaces)["open_read"] == refusal
    assert probe(dirs, "open-write", f, new_namespaces)["open_write"] == refusal
    # Positive control: once the owned dir is in read_write, both work.
    s = su.spec([su.PROBE, "open-write", f], read_write=[dirs["owned"]])
    r = su.run(s)
    assert r.rc == 0 and su.probe_lines(r.stdout)["open_write"] == 0, r


# A new sibling of a listed file: in the view its directory is part of the
# view's read-only skeleton (EROFS); under Landlock alone, EACCES.
@pytest.mark.parametrize("new_namespaces,refusal", [(True, errno.EROFS), (False, errno.EACCES)])
def test_single_file_rule_gets_file_rights_only(dirs, new_namespaces, refusal):
    # A file (not a directory) in read_write: writable, and its siblings are not.
    f = os.path.join(dirs["outside"], "f")
    s = su.spec([su.PROBE, "open-write", f], read_write=[f], new_namespaces=new_namespaces)
    r = su.run(s)
    assert r.rc == 0 and su.probe_lines(r.stdout)["open_write"] == 0, r
    s = su.spec([su.PROBE, "open-write", os.path.join(dirs["outside"], "g")], read_write=[f],
                new_namespaces=new_namespaces)
    r = su.run(s)
    assert r.rc == 0 and su.probe_lines(r.stdout)["open_write"] == refusal, r


def test_landlock_ok_line_names_the_kernel_abi(dirs):
    r = su.run(su.spec(["/bin/true"]))
    oks = [l for l in r.status if l.get("step") == "landlock" and l.get("ok")]
    assert r.rc == 0 and len(oks) == 1 and oks[0]["abi"] >= 1, r


def test_hard_requirement_refuses_to_start_without_landlock(dirs):
    marker = os.path.join(dirs["rw"], "ran")
    s = su.spec(["/bin/sh", "-c", "echo x > " + marker], read_write=[dirs["rw"]],
                landlock="hard_requirement")
    r = su.run(s, wrapper=[su.DENY, "landlock_create_ruleset:" + ENOSYS, "--"])
    assert r.rc == 125 and r.failure["step"] == "landlock", r
    assert r.failure["errno"] == errno.ENOSYS
    assert not os.path.exists(marker) and not r.execed
    # Positive control: same spec, Landlock available, the agent runs.
    r = su.run(s)
    assert r.rc == 0 and os.path.exists(marker), r


def test_best_effort_starts_without_landlock_and_says_what_it_skipped(dirs):
    marker = os.path.join(dirs["rw"], "ran")
    s = su.spec(["/bin/sh", "-c", "echo x > " + marker], read_write=[dirs["rw"]],
                landlock="best_effort")
    r = su.run(s, wrapper=[su.DENY, "landlock_create_ruleset:" + ENOSYS, "--"])
    assert r.rc == 0 and r.execed and os.path.exists(marker), r
    warnings = [l for l in r.status if l.get("step") == "landlock" and "warning" in l]
    assert warnings and "landlock unavailable" in warnings[0]["warning"], r
    assert {"step": "landlock", "ok": True, "abi": 0} in r.status
    # Positive control: without the simulation there is no such warning.
    r = su.run(s)
    assert r.rc == 0 and not [l for l in r.status if "warning" in l], r


def test_missing_path_fails_hard_and_is_skipped_best_effort(dirs):
    missing = os.path.join(dirs["base"], "missing")
    hard = su.run(su.spec(["/bin/true"], read_only=[missing], landlock="hard_requirement"))
    assert hard.rc == 125 and hard.failure["step"] == "landlock", hard
    assert hard.failure["errno"] == errno.ENOENT
    best = su.run(su.spec(["/bin/true"], read_only=[missing], landlock="best_effort"))
    assert best.rc == 0 and best.execed, best
    assert any(missing in l.get("warning", "") for l in best.status), best
