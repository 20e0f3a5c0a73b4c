"""The HTTPS listener the client matrix's own servers share (git smart HTTP,
the package index): ThreadingHTTPServer over TLS with the upstream's
certificate, ROOT on the server object, "ready" printed once listening.

argv: ADDR PORT ROOT CERT KEY"""
import http.server
import os
import ssl


def serve(handler, argv):
    addr, port, root, cert, key = argv[1:6]
    srv = http.server.ThreadingHTTPServer((addr, int(port)), handler)
    srv.root = os.path.realpath(root)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("ready", flush=True)
    srv.serve_forever()
