"""A git smart-HTTP server for the client matrix: `git http-backend` (CGI)
behind an HTTPS listener, serving the bare repositories under ROOT.

usage: git_http_server.py ADDR PORT ROOT CERT KEY   (prints "ready")
"""
import http.server
import os
import subprocess
import sys
import urllib.parse

import https_test_server


class Git(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one exchange per connection: no framing to get wrong

    def _cgi(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {"GIT_PROJECT_ROOT": self.server.root, "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": urllib.parse.unquote(url.path), "QUERY_STRING": url.query,
               "REQUEST_METHOD": self.command, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(length), "REMOTE_ADDR": self.client_address[0],
               "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode("latin-1").partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _cgi

    def log_message(self, *a):
        pass


https_test_server.serve(Git, sys.argv)
