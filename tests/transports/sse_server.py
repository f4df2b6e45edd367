"""A scripted legacy HTTP+SSE server (MCP 2024-11-05) for the transport tests (stdlib,
threads).

``GET /sse`` opens the event stream: first what ``first`` says (by default the
``endpoint`` event naming ``/messages?session=N``), then each message the server has
for that session, as a ``message`` event. ``POST /messages?session=N`` is answered 202
at once; the message's answer then goes on the stream: ``initialize`` is answered here,
the rest by the test's ``answer(message)`` (a dict: the answer's result; None: no
answer; :data:`CLOSE`: the stream is closed instead). A POST to ``/sse`` itself (a
Streamable HTTP client's first try) gets ``post_status``. With ``token``, a request
without ``Authorization: Bearer TOKEN`` gets 401 and a Bearer challenge. Every request
is recorded in order: its method, path, headers and body.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

CLOSE = object()  # answer(message) -> CLOSE: the session's stream ends
_END = object()


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class ScriptedSseServer:
    def __init__(
        self,
        answer: Callable[[dict[str, Any]], Any] | None = None,
        *,
        first: bytes | None = None,
        post_status: int = 405,
        version: str = "2024-11-05",
        token: str | None = None,
    ) -> None:
        self.answer = answer or (lambda message: {})
        self.first = first  # None: the endpoint event of the session
        self.post_status = post_status
        self.version = version
        self.token = token  # set: every request without "Bearer TOKEN" gets 401
        self.seen: list[Seen] = []
        self.streams: dict[str, queue.Queue[Any]] = {}
        self.forgotten: list[queue.Queue[Any]] = []
        self._lock = threading.Lock()
        self._sessions = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _record(self, body: Any) -> None:
                with server._lock:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    server.seen.append(Seen(self.command, self.path, headers, body))

            def _status(self, code: int, text: bytes = b"") -> None:
                self.send_response(code)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def _unauthorized(self) -> bool:
                if server.token is None:
                    return False
                if self.headers.get("Authorization") == f"Bearer {server.token}":
                    return False
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Bearer realm="sse"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return True

            def do_GET(self) -> None:
                self._record(None)
                if self._unauthorized():
                    return
                if urlsplit(self.path).path != "/sse":
                    self._status(404, b"Not Found")
                    return
                with server._lock:
                    server._sessions += 1
                    session = str(server._sessions)
                    stream: queue.Queue[Any] = queue.Queue()
                    server.streams[session] = stream
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                if server.first is None:
                    self.wfile.write(
                        f"event: endpoint\ndata: /messages?session={session}\n\n".encode()
                    )
                else:
                    self.wfile.write(server.first)
                self.wfile.flush()
                while True:
                    item = stream.get()
                    if item is _END:
                        return
                    data = json.dumps(item)
                    self.wfile.write(f"event: message\ndata: {data}\n\n".encode())
                    self.wfile.flush()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                self._record(body)
                if self._unauthorized():
                    return
                parts = urlsplit(self.path)
                if parts.path == "/sse":
                    self._status(server.post_status, b"Method Not Allowed")
                    return
                session = parse_qs(parts.query).get("session", [""])[0]
                stream = server.streams.get(session)
                if parts.path != "/messages" or stream is None:
                    self._status(404, b"Could not find session")
                    return
                self._status(202, b"Accepted")
                if "id" not in body or "method" not in body:
                    return  # a notification, or the host's answer
                if body["method"] == "initialize":
                    result: Any = {
                        "protocolVersion": server.version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted-sse", "version": "1"},
                    }
                else:
                    result = server.answer(body)
                if result is CLOSE:
                    stream.put(_END)
                elif result is not None:
                    stream.put({"jsonrpc": "2.0", "id": body["id"], "result": result})

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self._http.server_address[1]}"
        self.url = f"{self.origin}/sse"
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> ScriptedSseServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in [*self.streams.values(), *self.forgotten]:
            stream.put(_END)
        self._http.shutdown()
        self._http.server_close()

    def forget_sessions(self) -> None:
        """Forget every session (their streams stay open): a POST of one gets 404."""
        with self._lock:
            self.forgotten = list(self.streams.values())
            self.streams.clear()

    def requests(self) -> list[tuple[str, str, str | None]]:
        """(method, path, JSON-RPC method) of each request, in order."""
        with self._lock:
            return [
                (s.method, s.path, s.body.get("method") if isinstance(s.body, dict) else None)
                for s in self.seen
            ]
