"""The sandbox watch stream (GET /v1/sandboxes?watch=1, chunked NDJSON) and
`openshell sandbox list --watch`: existing sandboxes first, SYNCED, then
every change as it is stored, deletions included; a name filter narrows it."""

import json
import queue
import socket
import subprocess
import threading

import pytest

from tests.lib import build
from tests.lib.gateway_util import CLI, Gateway, wait_for

pytestmark = build.needs("openshell", "openshell-gateway", "openshell-supervisor")


@pytest.fixture
def gw():
    g = Gateway().start()
    yield g
    g.cleanup()


class Watch:
    """A raw HTTP/1.1 watch: decodes the chunked body into events on a queue."""

    def __init__(self, gw, query="watch=1"):
        self.q = queue.Queue()
        self.sock = socket.create_connection(("127.0.0.1", gw.port))
        self.sock.sendall(f"GET /v1/sandboxes?{query} HTTP/1.1\r\nHost: t\r\n"
                          f"Authorization: Bearer {gw.token}\r\n\r\n".encode())
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        f = self.sock.makefile("rb")
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += f.read(1)
        self.q.put(("head", head.decode()))
        pending = b""
        while True:
            line = f.readline()
            if not line:  # closed (by the test, or by the gateway: then events stop)
                self.q.put(("closed", None))
                return
            size = int(line.strip(), 16)
            if size == 0:
                self.q.put(("end", None))
                return
            pending += f.read(size)
            f.readline()
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                self.q.put(("event", json.loads(line)))

    def next(self, timeout=30):
        kind, v = self.q.get(timeout=timeout)
        assert kind != "closed", "the gateway ended the watch"
        return v

    def until(self, pred, timeout=60):
        """Events up to and including the first that matches."""
        seen = []
        while True:
            ev = self.next(timeout)
            seen.append(ev)
            if pred(ev):
                return seen

    def close(self):
        self.sock.close()


def test_watch_lists_then_streams_every_change(gw):
    gw.cli("sandbox", "create", "--name", "old", "--detach", "--", "sleep", "600", check=0)
    w = Watch(gw)
    try:
        head = w.next()
        assert head.startswith("HTTP/1.1 200") and "application/x-ndjson" in head, head
        first = w.next()
        assert first["type"] == "ADDED" and first["sandbox"]["name"] == "old", first
        assert first["sandbox"]["phase"] == "Ready" and "token" not in json.dumps(first)
        assert w.next() == {"type": "SYNCED"}
        gw.cli("sandbox", "create", "--name", "new", "--detach", "--", "sleep", "600", check=0)
        # Level-triggered: the ADDED event may already carry Ready when the
        # sandbox got there between two polls.
        evs = w.until(lambda e: e.get("sandbox", {}).get("phase") == "Ready" and
                      e["sandbox"]["name"] == "new")
        assert evs[0]["type"] == "ADDED" and evs[0]["sandbox"]["name"] == "new", evs
        # resource_version only ever grows along the stream.
        rvs = [e["sandbox"]["resource_version"] for e in evs]
        assert rvs == sorted(rvs), evs
        gw.cli("sandbox", "stop", "new", check=0)
        w.until(lambda e: e["sandbox"]["name"] == "new" and e["sandbox"]["phase"] == "Stopped")
        gw.cli("sandbox", "delete", "new", check=0)
        evs = w.until(lambda e: e["type"] == "DELETED")
        assert evs[-1]["sandbox"]["name"] == "new", evs
    finally:
        w.close()


def test_watch_by_name_sees_only_that_sandbox(gw):
    w = Watch(gw, "watch=true&name=only")
    try:
        assert w.next().startswith("HTTP/1.1 200")
        assert w.next() == {"type": "SYNCED"}
        gw.cli("sandbox", "create", "--name", "other", "--detach", "--", "sleep", "600",
               check=0)
        gw.cli("sandbox", "create", "--name", "only", "--detach", "--", "sleep", "600", check=0)
        evs = w.until(lambda e: e["sandbox"]["phase"] == "Ready")
        assert {e["sandbox"]["name"] for e in evs} == {"only"}, evs
    finally:
        w.close()


def test_cli_list_watch_prints_events(gw):
    p = subprocess.Popen([CLI, "-o", "json", "sandbox", "list", "--watch"], env=gw.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in p.stdout], daemon=True).start()
    try:
        assert json.loads(lines.get(timeout=20)) == {"type": "SYNCED"}
        gw.cli("sandbox", "create", "--name", "seen", "--detach", "--", "sleep", "600",
               check=0)
        got = []
        while not any(e.get("sandbox", {}).get("phase") == "Ready" for e in got):
            got.append(json.loads(lines.get(timeout=30)))
        assert got[0]["type"] == "ADDED" and got[0]["sandbox"]["name"] == "seen", got
    finally:
        p.terminate()
        p.wait(timeout=10)
    # The human form: a header, then one line per event.
    p = subprocess.Popen([CLI, "sandbox", "list", "--watch"], env=gw.env,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().split() == ["EVENT", "NAME", "PHASE", "MESSAGE"]
        assert p.stdout.readline().split()[:3] == ["ADDED", "seen", "Ready"]
    finally:
        p.terminate()
        p.wait(timeout=10)


def test_watch_timeout_ends_the_stream(gw):
    """?timeout_s=N ends the watch with the last chunk once N seconds have passed
    (the CLI's create waits on such a watch, bounded as its poll was); what is
    not whole seconds from 1 to a day is refused with the reason."""
    w = Watch(gw, "watch=1&timeout_s=1")
    try:
        assert w.next().startswith("HTTP/1.1 200")
        assert w.next() == {"type": "SYNCED"}
        kind, _ = w.q.get(timeout=20)
        assert kind == "end", kind
    finally:
        w.close()
    for bad in ("0", "86401", "1x", "", "-1"):
        status, body = gw.request("GET", f"/v1/sandboxes?watch=1&timeout_s={bad}")
        assert status == 400 and "timeout_s" in body["message"], (bad, status, body)


def test_create_waits_on_the_watch_and_says_why_it_failed(gw):
    """The CLI's create waits for Ready on a watch; a sandbox that ends in Error
    instead still fails the create with the gateway's reason (the poll that
    follows the watch reads the row)."""
    r = gw.cli("sandbox", "create", "--name", "w-ok", "--detach", "--", "sleep", "600",
               check=0)
    assert "Ready" in r.stdout, r.stdout + r.stderr
    r = gw.cli("sandbox", "create", "--name", "w-bad", "--detach", "--",
               "/nonexistent/agent", check=None)
    assert r.returncode != 0 and "w-bad" in r.stderr, (r.returncode, r.stderr)
