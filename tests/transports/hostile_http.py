"""A hostile Streamable HTTP server, run as a program of its own (stdlib only).

    python hostile_http.py MODE [ARG]

It prints ``PORT <n>`` on stdout once it listens, then serves until killed. It answers
``initialize`` (with an ``Mcp-Session-Id``), ``ping`` and notifications like a server
should; what it does with ``tools/call`` and the GET stream is the MODE:

- ``hang``: a ``tools/call`` POST never gets response headers (the server holds the
  socket until the client closes it); the GET stream is refused (405).
- ``hang-notify``: a notification's POST (but ``notifications/initialized``) never gets
  response headers.
- ``linger``: a ``tools/call`` is answered on an event stream that then stays open.
- ``content-type``: a ``tools/call`` is answered with JSON under the Content-Type ARG
  (escaped bytes, as for ``session-id``).
- ``retry0``: the GET stream says ``retry: 0`` and ends at once, every time.
- ``big-event``: a ``tools/call`` is answered with an event stream whose first event
  carries ARG megabytes of data; then the stream stays open and says nothing.
- ``session-id``: the initialize answer's ``Mcp-Session-Id`` is ARG, given as
  Python-escaped bytes (``s\\xc3\\xa9``), written to the wire as they are.
- ``event-id``: a ``tools/call`` is answered with an event stream whose only event is
  a priming event with the id ARG (escaped bytes, as above), then the stream is cut.

- ``flood``: the GET stream carries ARG ``ping`` requests at once, and every POST of
  the host's answers is held without response headers until the client closes it.

``GET /stats`` answers the server's counts as JSON (``gets``: GET streams opened on the
MCP path) without touching any session.

Run in a subprocess so that its sockets are not the test's: the test counts its own
file descriptors.
"""

from __future__ import annotations

import codecs
import json
import select
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODE = sys.argv[1]
ARG = sys.argv[2] if len(sys.argv) > 2 else ""
SESSION = b"hostile-session-1"
NOT_FOUND = {"code": -32601, "message": "Method not found"}
COUNTS = {"gets": 0, "posts": 0}
LOCK = threading.Lock()


def raw_bytes(escaped: str) -> bytes:
    return codecs.escape_decode(escaped.encode())[0]  # type: ignore[attr-defined,no-any-return]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _raw_header(self, name: bytes, value: bytes) -> None:
        # send_header() encodes as Latin-1: raw bytes go straight into the header buffer.
        self._headers_buffer.append(name + b": " + value + b"\r\n")  # type: ignore[attr-defined]

    def _json(self, payload: Any, session: bytes | None = None, code: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if session is not None:
            self._raw_header(b"Mcp-Session-Id", session)
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int) -> None:
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _sse_start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _hold_until_the_client_closes(self) -> None:
        # Readable means the client closed (or reset): nothing else is sent on it now.
        select.select([self.connection], [], [])

    @staticmethod
    def _never_answered(method: str | None) -> bool:
        if MODE == "flood":  # the host's answers to the pushed pings: never taken
            return method is None
        return MODE == "hang-notify" and method not in (None, "notifications/initialized")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        with LOCK:
            COUNTS["posts"] += 1
        method = body.get("method") if isinstance(body, dict) else None
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-http", "version": "1"},
            }
            session = raw_bytes(ARG) if MODE == "session-id" else SESSION
            self._json({"jsonrpc": "2.0", "id": body["id"], "result": result}, session)
        elif method == "server/discover":  # a handshake-era server: not a method it knows
            self._json({"jsonrpc": "2.0", "id": body["id"], "error": NOT_FOUND}, code=400)
        elif method == "ping":
            self._json({"jsonrpc": "2.0", "id": body["id"], "result": {}})
        elif self._never_answered(method):
            self._hold_until_the_client_closes()
            self.close_connection = True
        elif method != "tools/call":
            self._status(202)  # notifications and answers
        elif MODE == "linger":
            self._sse_start()
            answer = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}}
            self.wfile.write(b"data: " + json.dumps(answer).encode() + b"\n\n")
            self.wfile.flush()
            self._hold_until_the_client_closes()
        elif MODE == "content-type":
            data = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"ok": True}})
            self.send_response(200)
            self._raw_header(b"Content-Type", raw_bytes(ARG))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())
        elif MODE == "hang":
            self._hold_until_the_client_closes()
            self.close_connection = True
        elif MODE == "big-event":
            self._sse_start()
            note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
            head = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"x":"'
            self.wfile.write(head)
            block = b"x" * (1 << 20)
            for _ in range(int(ARG or "50")):
                self.wfile.write(block)
            self.wfile.write(b'"}}\n\n' + b"data: " + json.dumps(note).encode() + b"\n\n")
            self.wfile.flush()
            self._hold_until_the_client_closes()
        elif MODE == "event-id":
            self._sse_start()
            self.wfile.write(b"retry: 0\nid: " + raw_bytes(ARG) + b"\ndata:\n\n")
            self.wfile.flush()
        else:
            self._json({"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}})

    def do_GET(self) -> None:
        if self.path == "/stats":
            with LOCK:
                self._json(dict(COUNTS))
            return
        with LOCK:
            COUNTS["gets"] += 1
        if MODE == "retry0":
            self._sse_start()
            self.wfile.write(b"retry: 0\n\n")
            return
        if MODE == "big-event":
            self._sse_start()
            self._hold_until_the_client_closes()
            return
        if MODE == "flood":
            self._sse_start()
            for n in range(int(ARG)):
                ping = {"jsonrpc": "2.0", "id": n, "method": "ping"}
                self.wfile.write(b"data: " + json.dumps(ping).encode() + b"\n\n")
            self.wfile.flush()
            self._hold_until_the_client_closes()
            return
        self._status(405)

    def do_DELETE(self) -> None:
        self._status(200)


class Server(ThreadingHTTPServer):
    request_queue_size = 512  # the tests open a hundred connections at once
    daemon_threads = True


def main() -> None:
    server = Server(("127.0.0.1", 0), Handler)
    server.handle_error = lambda *args: None  # type: ignore[method-assign] # a client left
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
