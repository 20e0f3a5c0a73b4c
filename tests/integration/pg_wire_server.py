"""A small PostgreSQL (protocol 3.0) server for the proxy tests: enough of
the backend side for psql to connect and run simple queries. It refuses
SSL and GSS encryption ('N'), trusts every user, logs each simple Query's
SQL as one JSON line to LOG, and answers SELECT with one text row "ok",
anything else with a CommandComplete naming its first word.

usage: pg_wire_server.py ADDRESS PORT LOG   (prints "ready" once listening)"""
import json
import socket
import struct
import sys
import threading

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
PROTOCOL_3 = 196608


def message(kind, payload=b""):
    return kind + struct.pack("!I", len(payload) + 4) + payload


def cstr(s):
    return s.encode() + b"\0"


def recv_exact(conn, n):
    out = b""
    while len(out) < n:
        chunk = conn.recv(n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return out


def startup(conn):
    """Reads startup packets until the StartupMessage; True when one came."""
    while True:
        (length,) = struct.unpack("!I", recv_exact(conn, 4))
        if length < 8 or length > 10000:
            return False
        body = recv_exact(conn, length - 4)
        (code,) = struct.unpack("!I", body[:4])
        if code in (SSL_REQUEST, GSSENC_REQUEST):
            conn.sendall(b"N")
            continue
        return code == PROTOCOL_3


def answer(conn, sql):
    word = (sql.strip().split() or [""])[0].upper().rstrip(";")
    if word == "SELECT":
        field = cstr("v") + struct.pack("!IhIhih", 0, 0, 25, -1, -1, 0)
        conn.sendall(message(b"T", struct.pack("!h", 1) + field) +
                     message(b"D", struct.pack("!hI", 1, 2) + b"ok") +
                     message(b"C", cstr("SELECT 1")))
    else:
        conn.sendall(message(b"C", cstr(word or "EMPTY")))
    conn.sendall(message(b"Z", b"I"))


def serve(conn, log, lock):
    with conn:
        try:
            if not startup(conn):
                return
            params = {"server_version": "15.0", "client_encoding": "UTF8",
                      "DateStyle": "ISO, MDY", "integer_datetimes": "on",
                      "standard_conforming_strings": "on", "TimeZone": "UTC"}
            out = message(b"R", struct.pack("!I", 0))
            for k, v in params.items():
                out += message(b"S", cstr(k) + cstr(v))
            out += message(b"K", struct.pack("!II", 1, 2)) + message(b"Z", b"I")
            conn.sendall(out)
            while True:
                kind = recv_exact(conn, 1)
                (length,) = struct.unpack("!I", recv_exact(conn, 4))
                body = recv_exact(conn, length - 4)
                if kind == b"X":
                    return
                if kind != b"Q":
                    conn.sendall(message(b"E", b"SERROR\0C0A000\0Mnot supported here\0\0") +
                                 message(b"Z", b"I"))
                    continue
                sql = body.rstrip(b"\0").decode()
                with lock, open(log, "a") as f:
                    f.write(json.dumps({"query": sql}) + "\n")
                answer(conn, sql)
        except (EOFError, OSError):
            return


def main():
    addr, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(16)
    print("ready", flush=True)
    lock = threading.Lock()
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, log, lock), daemon=True).start()


if __name__ == "__main__":
    main()
