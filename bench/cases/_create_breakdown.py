#!/usr/bin/python3
"""_create_breakdown.py - a helper of bench/cases/sandbox-create (not a case):
reads the OPENSHELL_TRACE file the CLI, the gateway and the supervisors wrote
during the timed creates ("MONOTONIC_NS PID COMPONENT EVENT [ARG]" lines) and
prints, per step, the median milliseconds over every create, so the figure
says where the time goes. Creates run one after another: a create is the
lines from one "cli create-sent" to the next. A step whose two marks are not
both in a create is left out of that create, never guessed.
usage: _create_breakdown.py TRACE"""
import statistics
import sys

# (label, from mark, to mark); a mark is "COMPONENT EVENT".
STEPS = [
    ("CLI to gateway (connect, request)", "cli create-sent", "gateway create-request"),
    ("gateway: validate + material files", "gateway create-request", "gateway configured"),
    ("gateway: store the row", "gateway configured", "gateway stored"),
    ("gateway: spawn supervisor (fork, pid file)", "gateway supervisor-spawn", "gateway supervisor-spawned"),
    ("gateway answer seen by CLI", "gateway driver-created", "cli create-answered"),
    ("supervisor fork + exec + ld.so (to main)", "gateway supervisor-spawn", "supervisor main"),
    ("supervisor flags + audit log", "supervisor main", "supervisor start"),
    ("netns + veth + nft (attach)", "supervisor start", "supervisor attached"),
    ("proxy ready (policy, CA, listen)", "supervisor attached", "supervisor proxy-listening"),
    ("boundary confirm", "supervisor proxy-listening", "supervisor confirmed"),
    ("agent launch (limits, launcher)", "supervisor confirmed", "supervisor agent-started"),
    ("identity bind + self-guard", "supervisor agent-started", "supervisor running"),
    ("session opened at the gateway", "supervisor running", "gateway session-opened"),
    ("Ready saved", "gateway session-opened", "gateway ready-saved"),
    ("Ready seen by the CLI", "gateway ready-saved", "cli settled-seen"),
    ("total (CLI create to Ready seen)", "cli create-sent", "cli settled-seen"),
]


def creates(path):
    cur = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4 or not parts[0].isdigit():
                continue
            mark = parts[2] + " " + parts[3]
            if mark == "cli create-sent":
                if cur:
                    yield cur
                cur = {}
            if cur is not None and mark not in cur:
                cur[mark] = int(parts[0])
    if cur:
        yield cur


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: _create_breakdown.py TRACE")
    try:
        runs = list(creates(sys.argv[1]))
    except FileNotFoundError:
        print(f"  no breakdown: {sys.argv[1]} was not written (binaries without trace marks)")
        return
    print(f"  breakdown over {len(runs)} creates (median ms, OPENSHELL_TRACE marks):")
    for label, a, b in STEPS:
        ms = [(r[b] - r[a]) / 1e6 for r in runs if a in r and b in r and r[b] >= r[a]]
        if ms:
            print(f"    {label:44s} {statistics.median(ms):8.2f}  (n={len(ms)})")
        else:
            print(f"    {label:44s}      n/a  (marks missing)")


if __name__ == "__main__":
    main()
