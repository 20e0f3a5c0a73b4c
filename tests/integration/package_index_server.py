"""A static package server for the client matrix: a PEP 503 simple index
for pip and an npm registry (metadata JSON + tarballs) are both just files
under ROOT, served over HTTPS. A directory answers with its index.html
(text/html, what pip reads) or index.json (application/json, what npm reads);
anything else is 404. GET and HEAD only: neither client writes here.

usage: package_index_server.py ADDR PORT ROOT CERT KEY   (prints "ready")
"""
import http.server
import os
import sys
import urllib.parse

import https_test_server

TYPES = {"index.html": "text/html", "index.json": "application/json"}


class Files(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _file(self):
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        full = os.path.realpath(os.path.join(self.server.root, path.lstrip("/")))
        if not full.startswith(self.server.root + os.sep):
            return None, None
        if os.path.isdir(full):
            for name, ctype in TYPES.items():
                if os.path.isfile(os.path.join(full, name)):
                    return os.path.join(full, name), ctype
            return None, None
        return (full, "application/octet-stream") if os.path.isfile(full) else (None, None)

    def do_GET(self):
        path, ctype = self._file()
        body = open(path, "rb").read() if path else b"not found\n"
        self.send_response(200 if path else 404)
        self.send_header("Content-Type", ctype or "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, *a):
        pass


https_test_server.serve(Files, sys.argv)
