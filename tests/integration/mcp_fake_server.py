"""A misbehaving MCP server for the proxy tests: it answers every POST with
the bytes its path names, so a test can put a forbidden server message where
a client would read it, split events across writes in awkward places, and
prove what the proxy delivered.

usage: mcp_fake_server.py ADDR PORT

Paths: /json-ok, /json-smuggle (a sampling request in a JSON answer),
/sse-split (allowed and forbidden events, CRLF line ends split between
writes), /sse-type (a forbidden request hidden under another event type),
/sse-bad (an event whose data is not a message)."""
import http.server
import json
import sys
import time

RESULT = {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
LOG = {"jsonrpc": "2.0", "method": "notifications/message",
       "params": {"level": "info", "data": "log line"}}
SAMPLING = {"jsonrpc": "2.0", "id": 77, "method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 5}}
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 1}}


def ev(msg, crlf=False, etype=None):
    nl = "\r\n" if crlf else "\n"
    head = f"event: {etype}{nl}" if etype else ""
    return (head + f"data: {json.dumps(msg)}{nl}{nl}").encode()


PIECES = {
    "/sse-split": [ev(PROGRESS, True)[:-1], ev(PROGRESS, True)[-1:] + ev(LOG, True)[:5],
                   ev(LOG, True)[5:-2], ev(LOG, True)[-2:-1], ev(LOG, True)[-1:],
                   b": keep-alive\n\n", ev(SAMPLING)[:30], ev(SAMPLING)[30:], ev(RESULT, True)],
    "/sse-type": [ev(SAMPLING, etype="other"), ev(RESULT)],
    "/sse-bad": [b"data: {\"jsonrpc\":\"2.0\",\"method\":\"x\",\"method\":\"y\"}\n\n", ev(RESULT)],
}


class Fake(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/json"):
            body = json.dumps(RESULT if self.path == "/json-ok" else SAMPLING).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in PIECES[self.path]:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            time.sleep(0.05)  # separate reads at the proxy
        self.wfile.write(b"0\r\n\r\n")


server = http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Fake)
print("ready", flush=True)
server.serve_forever()
