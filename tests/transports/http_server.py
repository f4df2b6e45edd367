"""A scripted Streamable HTTP server for the transport tests (stdlib, threads).

It keeps sessions (``Mcp-Session-Id``), records every request (method, headers, body),
answers initialize itself, and asks the test's ``answer(message, session)`` for the rest:
a dict is sent as JSON, an :class:`Sse` as an event stream, an int as a bare status, a
:class:`Status` as a status with a JSON body and headers.
The test can drop every session (the next request of one gets 404), push messages on the
GET stream, and see everything that arrived.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Sse:
    """An event stream: ``events`` as (id, data) pairs (data None: an empty priming
    event), ``retry`` ms, then the stream closes."""

    events: list[tuple[str | None, Any]] = field(default_factory=list)
    retry: int | None = None
    delay: float = 0.0  # seconds before the events


@dataclass
class Status:
    """A status other than 200 with a JSON body and extra headers."""

    code: int
    payload: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Seen:
    method: str
    headers: dict[str, str]
    body: Any
    raw_headers: list[tuple[str, str]] = field(default_factory=list)


class ScriptedHttpServer:
    def __init__(
        self, answer: Callable[[Any, str | None], Any], *, stateless: bool = False
    ) -> None:
        # stateless: a 2026-07-28 server. It answers server/discover itself, refuses GET
        # and DELETE (405), and still sets an Mcp-Session-Id on every answer, as some
        # servers (and the conformance suite's) do: the host must not echo it.
        self.stateless = stateless
        self.answer = answer
        self.seen: list[Seen] = []
        self.sessions: set[str] = set()
        self.initializes = 0
        self.get_streams: queue.Queue[Any] = queue.Queue()  # what to push on GET streams
        self.resume: dict[str, list[tuple[str, Any]]] = {}  # Last-Event-ID -> events
        self.version = "2025-11-25"
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _record(self, body: Any) -> None:
                with server._lock:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    # A header sent twice would hide in the dict: the raw list keeps it.
                    raw = [(k.lower(), v) for k, v in self.headers.items()]
                    server.seen.append(Seen(self.command, headers, body, raw))

            def _session_ok(self) -> bool:
                sid = self.headers.get("Mcp-Session-Id")
                if sid is not None and sid not in server.sessions:
                    self._status(404)
                    return False
                return True

            def _status(self, code: int) -> None:
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _json(
                self, payload: Any, headers: dict[str, str] | None = None, code: int = 200
            ) -> None:
                data = json.dumps(payload, indent=1).encode()  # pretty: spans lines
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if server.stateless:
                    self.send_header("Mcp-Session-Id", "not-a-session")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _sse_start(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()

            def _event(self, event_id: str | None, data: Any) -> None:
                text = ""
                if event_id is not None:
                    text += f"id: {event_id}\n"
                text += "data: " + ("" if data is None else json.dumps(data)) + "\n\n"
                self.wfile.write(text.encode())
                self.wfile.flush()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                self._record(body)
                if server.stateless and body.get("method") == "server/discover":
                    result = {
                        "resultType": "complete",
                        "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                        "ttlMs": 0,
                        "cacheScope": "private",
                        "_meta": {
                            "io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}
                        },
                    }
                    self._json({"jsonrpc": "2.0", "id": body["id"], "result": result})
                    return
                if isinstance(body, dict) and body.get("method") == "initialize":
                    with server._lock:
                        server.initializes += 1
                        sid = uuid.uuid4().hex
                        server.sessions.add(sid)
                    result = {
                        "protocolVersion": server.version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted-http", "version": "1"},
                    }
                    self._json(
                        {"jsonrpc": "2.0", "id": body["id"], "result": result},
                        {"Mcp-Session-Id": sid},
                    )
                    return
                if not self._session_ok():
                    return
                answer = server.answer(body, self.headers.get("Mcp-Session-Id"))
                if answer is None and isinstance(body, dict) and "id" in body:
                    # A request is never answered 202: a handshake-era server refuses what
                    # it does not know (server/discover, which a dual-era host asks first).
                    error = {"code": -32601, "message": "Method not found"}
                    answer = Status(400, {"jsonrpc": "2.0", "id": body["id"], "error": error})
                if answer is None:
                    self._status(202)
                elif isinstance(answer, int):
                    self._status(answer)
                elif isinstance(answer, Status):
                    self._json(answer.payload, answer.headers, answer.code)
                elif isinstance(answer, Sse):
                    if answer.delay:
                        time.sleep(answer.delay)
                    if not self._session_ok():
                        return
                    self._sse_start()
                    if answer.retry is not None:
                        self.wfile.write(f"retry: {answer.retry}\n".encode())
                    for event_id, data in answer.events:
                        self._event(event_id, data)
                    self.close_connection = True
                else:
                    self._json(answer)

            def do_GET(self) -> None:
                self._record(None)
                if server.stateless:
                    self._status(405)
                    return
                if not self._session_ok():
                    return
                last = self.headers.get("Last-Event-ID")
                self._sse_start()
                if last is not None:
                    for event_id, data in server.resume.get(last, []):
                        self._event(event_id, data)
                    self.close_connection = True
                    return
                while True:  # the standalone stream: what the test pushes
                    item = server.get_streams.get()
                    if item is None:
                        break
                    self._event(None, item)
                self.close_connection = True

            def do_DELETE(self) -> None:
                self._record(None)
                if server.stateless:
                    self._status(405)
                    return
                sid = self.headers.get("Mcp-Session-Id")
                with server._lock:
                    server.sessions.discard(sid or "")
                self._status(200)

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/mcp"
        # shutdown() waits for serve_forever's next poll: a short one keeps tests quick.
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> ScriptedHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.get_streams.put(None)
        self._http.shutdown()
        self._http.server_close()

    def drop_sessions(self) -> None:
        with self._lock:
            self.sessions.clear()

    def posted(self, method: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == "POST" and s.body.get("method") == method]
