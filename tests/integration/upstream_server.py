"""A local upstream for proxy tests: HTTP or HTTPS echo server that records
every request it receives (method, path, headers, body) as JSON lines, so a
test can prove what did, and did not, reach the upstream.

usage: upstream_server.py ADDR PORT LOGFILE [CERT KEY]
"""
import http.server
import json
import ssl
import sys


class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _chunked(self):
        """A chunked body, decoded (its trailers read and dropped); one cut
        short or malformed is recorded as far as it got."""
        body = b""
        try:
            while (size := int(self.rfile.readline().split(b";")[0], 16)) > 0:
                body += self.rfile.read(size)
                self.rfile.readline()
        except ValueError:
            return body
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        return body

    def _handle(self):
        length = int(self.headers.get("Content-Length") or 0)
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            body = self._chunked()
        else:
            body = self.rfile.read(length) if length else b""
        record = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode("utf-8", "replace"),
        }
        with open(self.server.log, "a") as f:
            f.write(json.dumps(record) + "\n")
        if self.path.startswith("/last-auth"):
            # A leaky upstream: answers with the Authorization it saw last
            # (from any earlier request), whatever this request carries.
            out = json.dumps({"last": self.server.last_auth}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        if "authorization" in record["headers"]:
            self.server.last_auth = record["headers"]["authorization"]
        if self.path.startswith("/gzip"):
            # The echo compressed, although compression was not offered.
            import gzip
            out = gzip.compress(json.dumps(record).encode())
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        if self.path.startswith("/echo-chunked"):
            # The echo in 3-byte chunks: every secret straddles boundaries.
            out = json.dumps(record).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(out), 3):
                piece = out[i:i + 3]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.startswith("/stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                chunk = f"data: {i}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
            return
        out = json.dumps(record).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle

    def log_message(self, *args):
        pass


def main():
    addr, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    srv = http.server.ThreadingHTTPServer((addr, port), Echo)
    srv.log = log
    srv.last_auth = None
    if len(sys.argv) > 5:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[4], sys.argv[5])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("ready", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
