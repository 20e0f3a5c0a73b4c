#!/usr/bin/python3
"""sock_share.py - the socket-sharing moves of the identity tests, run as a
separate program so the harness can start it as two different binaries
(python3 itself, or python3 under the dynamic loader, whose executable is
ld.so). It prints one JSON line: the HTTP status the proxy answered (0 when
it never answered) and what the move did. It judges nothing.

usage: sock_share.py MOVE PROXY_HOST PROXY_PORT URL [LOADER]
  v6           an AF_INET6 socket connected to the v4-mapped proxy address
  pass-drop    create a socket, pass it (SCM_RIGHTS) to LOADER python3, drop
               our copy; the receiver connects and asks
  pass-keep    the same, but we keep our copy until the answer came
  fork-shared  connect, fork: the child (same binary) asks, we hold on
  share-denied connect, start plain python3 holding a copy, then ask
  exit-now     connect, send the request, exit at once without reading
  park         connect, park the socket in flight on a socketpair while
               LOADER python3 holds a copy, take it back and ask
  lend         connect, lend the socket (SCM_RIGHTS) to LOADER python3,
               which sends it back; ask with what came back
  send-fds     the same park with socket.send_fds / socket.recv_fds
  pass-files   control: a pipe and a file pass, and still work
  receive      (internal) take a socket from fd 3 and connect/ask with it
  hold         (internal) hold inherited fds until stdin closes
  echo-back    (internal) receive one fd on SHARE_CHAN and send it back"""
import array
import json
import os
import socket
import subprocess
import sys
import time

LOADER_ME = os.path.abspath(__file__)


def request(url):
    host = url.split("//", 1)[1].split("/", 1)[0]
    return f"GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()


def status_of(s):
    s.settimeout(10)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    first = data.split(b"\r\n", 1)[0].split()
    return int(first[1]) if len(first) > 1 and first[1].isdigit() else 0


def target(host, port, family):
    return ("::ffff:" + host, port, 0, 0) if family == socket.AF_INET6 else (host, port)


def ask(s, host, port, url, family=socket.AF_INET):
    s.connect(target(host, port, family))
    s.sendall(request(url))
    return status_of(s)


def send_fd(chan, fd):
    chan.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])


def pass_socket(host, port, url, loader, keep):
    mine = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    a, b = socket.socketpair()
    child = subprocess.Popen([loader, sys.executable, LOADER_ME, "receive", host, str(port), url],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             pass_fds=[b.fileno()],
                             env=dict(os.environ, SHARE_CHAN=str(b.fileno())))
    b.close()
    send_fd(a, mine.fileno())
    if not keep:
        mine.close()
    out = child.stdout.read()
    child.wait()
    a.close()
    return json.loads(out or b'{"status": 0}')


def recv_fd(chan):
    """The one fd of an SCM_RIGHTS message, or None when none came (the
    kernel drops a refused file and sets MSG_CTRUNC)."""
    _, anc, flags, _ = chan.recvmsg(1, socket.CMSG_SPACE(4))
    fds = array.array("i")
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:4])
    return (fds[0] if fds else None), bool(flags & socket.MSG_CTRUNC)


def receive(host, port, url):
    chan = socket.socket(fileno=int(os.environ["SHARE_CHAN"]))
    fd, truncated = recv_fd(chan)
    if fd is None:
        return {"status": 0, "received": False, "ctrunc": truncated}
    s = socket.socket(fileno=fd)
    return {"status": ask(s, host, port, url), "received": True}


def holder(loader, fds):
    """LOADER python3 (an allowed binary) holding copies of fds."""
    return subprocess.Popen([loader, sys.executable, LOADER_ME, "hold", "-", "0", "-"],
                            stdin=subprocess.PIPE, pass_fds=fds)


def ask_connected(s, url, took_back):
    if not took_back:
        return {"status": 0, "took_back": False}
    s.sendall(request(url))
    return {"status": status_of(s), "took_back": True}


def park(host, port, url, loader, use_send_fds=False):
    """The borrow of issue 16: while our copy is in flight only the allowed
    holder has the socket; taking it back must be refused."""
    s = socket.socket()
    s.connect((host, port))
    keeper = holder(loader, [s.fileno()])
    a, b = socket.socketpair()
    if use_send_fds:
        socket.send_fds(a, [b"x"], [s.fileno()])
    else:
        send_fd(a, s.fileno())
    s.close()
    time.sleep(0.3)  # the proxy's lookups see the holder alone now
    if use_send_fds:
        _, fds, flags, _ = socket.recv_fds(b, 1, 1)
        fd, truncated = (fds[0] if fds else None), bool(flags & socket.MSG_CTRUNC)
    else:
        fd, truncated = recv_fd(b)
    out = ask_connected(socket.socket(fileno=fd) if fd is not None else None, url,
                        fd is not None)
    keeper.stdin.close()
    keeper.wait()
    return dict(out, ctrunc=truncated)


def lend(host, port, url, loader):
    s = socket.socket()
    s.connect((host, port))
    a, b = socket.socketpair()
    child = subprocess.Popen([loader, sys.executable, LOADER_ME, "echo-back", "-", "0", "-"],
                             stdout=subprocess.PIPE, pass_fds=[b.fileno()],
                             env=dict(os.environ, SHARE_CHAN=str(b.fileno())))
    b.close()
    send_fd(a, s.fileno())
    s.close()
    a.settimeout(10)
    try:
        fd, truncated = recv_fd(a)
    except OSError:
        fd, truncated = None, False
    lent = json.loads(child.stdout.read() or b'{"received": false}')
    child.wait()
    out = ask_connected(socket.socket(fileno=fd) if fd is not None else None, url,
                        fd is not None)
    return dict(out, ctrunc=truncated, holder_received=lent["received"])


def echo_back():
    chan = socket.socket(fileno=int(os.environ["SHARE_CHAN"]))
    fd, _ = recv_fd(chan)
    if fd is None:
        chan.sendall(b"-")  # unblock the lender: nothing to send back
    else:
        send_fd(chan, fd)
    return {"received": fd is not None}


def pass_files():
    """Descriptor passing itself keeps working for what is no inet socket."""
    a, b = socket.socketpair()
    r, w = os.pipe()
    send_fd(a, r)
    got_pipe, _ = recv_fd(b)
    os.write(w, b"through")
    pipe_ok = got_pipe is not None and os.read(got_pipe, 16) == b"through"
    with open(LOADER_ME, "rb") as f:
        socket.send_fds(a, [b"x"], [f.fileno()])
        _, fds, _, _ = socket.recv_fds(b, 1, 1)
    file_ok = bool(fds) and os.read(fds[0], 2) == b"#!"
    u1, u2 = socket.socketpair()
    send_fd(a, u1.fileno())
    got_unix, _ = recv_fd(b)
    return {"pipe": pipe_ok, "file": file_ok, "unix": got_unix is not None}


def fork_shared(host, port, url):
    s = socket.socket()
    s.connect((host, port))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, str(s.send(request(url)) and status_of(s)).encode())
        os._exit(0)
    os.close(w)
    status = int(os.read(r, 16) or 0)
    os.waitpid(pid, 0)
    return {"status": status}


def share_denied(host, port, url):
    s = socket.socket()
    s.connect((host, port))
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                              pass_fds=[s.fileno()])
    time.sleep(0.3)  # the holder runs python3 by now, not a fork of us
    s.sendall(request(url))
    status = status_of(s)
    holder.kill()
    holder.wait()
    return {"status": status, "holder": holder.pid}


def main():
    move, host, port, url = sys.argv[1], sys.argv[2], int(sys.argv[3] or 0), sys.argv[4]
    loader = sys.argv[5] if len(sys.argv) > 5 else None
    if move == "v6":
        out = {"status": ask(socket.socket(socket.AF_INET6), host, port, url, socket.AF_INET6)}
    elif move in ("pass-drop", "pass-keep"):
        out = pass_socket(host, port, url, loader, keep=move == "pass-keep")
    elif move == "fork-shared":
        out = fork_shared(host, port, url)
    elif move == "share-denied":
        out = share_denied(host, port, url)
    elif move == "exit-now":
        s = socket.socket()
        s.connect((host, port))
        s.sendall(request(url))
        os._exit(0)
    elif move in ("park", "send-fds"):
        out = park(host, port, url, loader, use_send_fds=move == "send-fds")
    elif move == "lend":
        out = lend(host, port, url, loader)
    elif move == "pass-files":
        out = pass_files()
    elif move == "receive":
        out = receive(host, port, url)
    elif move == "hold":
        sys.stdin.read()
        return
    elif move == "echo-back":
        out = echo_back()
    else:
        raise SystemExit(f"sock_share.py: unknown move {move!r}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
