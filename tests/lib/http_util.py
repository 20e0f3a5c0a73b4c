"""Raw HTTP/1.1 on a socket, for tests that must control every byte."""


def read_head(s):
    """Reads up to the end of an HTTP head; returns (status, head, rest)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return status, head, rest
