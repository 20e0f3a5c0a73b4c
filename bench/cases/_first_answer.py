#!/usr/bin/python3
"""_first_answer.py - a helper of bench/cases/proxy-start (not a case): starts a
proxy command and prints the milliseconds from its exec to the first answer
it gives to an absolute-form request (any status: a denial is an answer),
then stops it. The port is the one PORT names, or, with PORT "-", the one
the proxy prints in its "listening on 127.0.0.1:N" line. Only loopback.
usage: _first_answer.py PORT CMD..."""
import re
import socket
import subprocess
import sys
import time

REQUEST = b"GET http://start.test/ HTTP/1.1\r\nHost: start.test\r\nConnection: close\r\n\r\n"


def port_from_output(proc):
    for line in proc.stdout:
        m = re.match(rb"^listening on 127\.0\.0\.1:(\d+)$", line.strip())
        if m:
            return int(m.group(1))
    raise SystemExit("_first_answer.py: the proxy never said where it listens")


def ask(port):
    """One request; the status line, or None while nobody listens yet."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(REQUEST)
            answer = s.recv(64)
    except ConnectionRefusedError:
        return None
    return answer.split(b"\r\n", 1)[0] or None


def main():
    port_arg, cmd = sys.argv[1], sys.argv[2:]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        port = port_from_output(proc) if port_arg == "-" else int(port_arg)
        deadline = t0 + 10
        while ask(port) is None:
            if time.monotonic() > deadline:
                raise SystemExit("_first_answer.py: no answer within 10 s")
            time.sleep(0.0005)
        print(f"{(time.monotonic() - t0) * 1000:.2f}")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
