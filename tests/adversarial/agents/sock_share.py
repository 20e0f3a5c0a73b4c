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
  receive      (internal) take a socket from fd 3 and connect/ask with it"""
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


def receive(host, port, url):
    chan = socket.socket(fileno=int(os.environ["SHARE_CHAN"]))
    _, anc, _, _ = chan.recvmsg(1, socket.CMSG_LEN(4))
    fds = array.array("i")
    fds.frombytes(anc[0][2][:4])
    s = socket.socket(fileno=fds[0])
    return {"status": ask(s, host, port, url)}


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
    move, host, port, url = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
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
    elif move == "receive":
        out = receive(host, port, url)
    else:
        raise SystemExit(f"sock_share.py: unknown move {move!r}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
