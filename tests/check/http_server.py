"""A small, compliant Streamable HTTP server on loopback, the reference the checker's
HTTP tests trust (stdlib ``http.server``, a thread per request).

Dual-era by default: ``initialize`` opens a handshake-era session (``Mcp-Session-Id``,
the demo server's answers, requests answered as event streams whose events carry ids,
a GET stream, resumption with ``Last-Event-ID``, DELETE, the ``MCP-Protocol-Version``
header) and a request with 2026-07-28's ``_meta`` is served statelessly
(:func:`tests.check.modern_server.answer_modern`, with the header checks here). Every
request passes the Origin and Accept checks first. ``legacy=False`` makes it a
2026-07-28-only server (GET and DELETE 405); ``sse=False`` answers with JSON bodies.

A :class:`~tests.check.modern_server.Behaviour` breaks it: ``skip`` names checks left
out ("origin", "accept", "session-required", "session-unknown", "version-header",
"delete", "resume", and the modern ones), ``change`` rewrites JSON-RPC answers, and
``reply`` (here) rewrites whole HTTP replies. Bounded: a session keeps its last 32
streams, a stream its last 32 events.
"""

from __future__ import annotations

import base64
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

import msgspec

from mcpl_host.demo import SUPPORTED as LEGACY
from mcpl_host.demo import Session, answer_line
from mcpl_host.protocol.discover import PROTOCOL_VERSION

from .modern_server import COMPLIANT, MODERN, Behaviour, answer_modern, error, is_modern, meta_of

_ENCODER: Final = msgspec.json.Encoder()
_KEEP: Final = 32


@dataclass
class Reply:
    """One HTTP answer: a JSON ``body``, or ``events`` ((id, data) pairs) as an event
    stream that stays open after them when ``hold`` is set."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    events: list[tuple[str | None, str]] | None = None
    hold: bool = False


@dataclass
class Request:
    verb: str
    headers: dict[str, str]  # lower-cased names
    body: Any


@dataclass(frozen=True)
class HttpBehaviour(Behaviour):
    """A :class:`Behaviour` with ``reply(request, reply) -> reply`` for whole replies and
    ``session_id()`` for the ids the server hands out."""

    reply: Callable[[Request, Reply], Reply] | None = None
    session_id: Callable[[], str] = field(default=lambda: uuid.uuid4().hex)


class _Session:
    def __init__(self) -> None:
        self.demo = Session()
        self.streams: dict[str, deque[tuple[str, str]]] = {}
        self.count = 0
        self.lock = threading.Lock()

    def stream(self, messages: list[str]) -> list[tuple[str | None, str]]:
        """A new stream: a priming event (an id, no data), then ``messages``."""
        with self.lock:
            self.count += 1
            name = f"s{self.count}"
            events = deque([(f"{name}-0", "")], maxlen=_KEEP)
            events.extend((f"{name}-{n}", m) for n, m in enumerate(messages, 1))
            self.streams[name] = events
            while len(self.streams) > _KEEP:
                del self.streams[next(iter(self.streams))]
            return list(events)

    def after(self, last: str, *, replay_all: bool) -> list[tuple[str | None, str]] | None:
        name = last.rsplit("-", 1)[0]
        with self.lock:
            events = self.streams.get(name)
            if events is None:
                return None
            ids = [event_id for event_id, _ in events]
            if last not in ids:
                return None
            if replay_all:  # the fault: the stream from its start, priming event too
                return list(events)
            return [e for e in list(events)[ids.index(last) + 1 :] if e[1]]


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up on a held stream: nothing to report


class ReferenceServer:
    def __init__(
        self, behaviour: HttpBehaviour | None = None, *, legacy: bool = True, sse: bool = True
    ) -> None:
        self.behaviour = behaviour or HttpBehaviour()
        self.legacy = legacy
        self.sse = sse
        self.sessions: dict[str, _Session] = {}
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._http = _Quiet(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        port = self._http.server_address[1]
        self.origins = {f"http://127.0.0.1:{port}", f"http://localhost:{port}"}
        self.url = f"http://127.0.0.1:{port}/mcp"
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> ReferenceServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._http.shutdown()
        self._http.server_close()

    def skips(self, check: str) -> bool:
        return check in self.behaviour.skip

    # --- what a request is answered with ------------------------------------------------
    def serve(self, request: Request) -> Reply:
        reply = self._serve(request)
        return self.behaviour.reply(request, reply) if self.behaviour.reply else reply

    def _serve(self, request: Request) -> Reply:
        origin = request.headers.get("origin")
        if origin is not None and origin not in self.origins and not self.skips("origin"):
            return Reply(403, body=error(None, -32600, "Forbidden: invalid Origin"))
        accept = request.headers.get("accept", "")
        wanted = (
            ("text/event-stream",)
            if request.verb == "GET"
            else ("application/json", "text/event-stream")
        )
        refused = request.verb != "DELETE" and not all(t in accept for t in wanted)
        if refused and not self.skips("accept"):
            return Reply(406)
        if request.verb == "POST":
            return self._post(request)
        if not self.legacy:
            return Reply(405)
        session, refusal = self._session(request)
        if refusal is not None:
            return refusal
        assert session is not None
        if request.verb == "DELETE":
            if not self.skips("delete"):
                with self._lock:
                    self.sessions = {k: v for k, v in self.sessions.items() if v is not session}
            return Reply(200)
        last = request.headers.get("last-event-id")
        if last is not None:
            events = session.after(last, replay_all=self.skips("resume"))
            return Reply(404) if events is None else Reply(200, events=events)
        return Reply(200, events=session.stream([])[:1], hold=True)

    def _session(self, request: Request) -> tuple[_Session | None, Reply | None]:
        sid = request.headers.get("mcp-session-id")
        if sid is None:
            if self.skips("session-required"):
                return _Session(), None
            return None, Reply(400, body=error(None, -32600, "Bad Request: no session id"))
        with self._lock:
            session = self.sessions.get(sid)
        if session is None:
            return (_Session(), None) if self.skips("session-unknown") else (None, Reply(404))
        return session, None

    def _post(self, request: Request) -> Reply:
        message = request.body
        if not isinstance(message, dict):
            return Reply(400, body=error(None, -32700, "Parse error"))
        version = request.headers.get("mcp-protocol-version")
        if message.get("method") == "initialize" and self.legacy:
            fresh = _Session()
            sid = self.behaviour.session_id()
            with self._lock:
                self.sessions[sid] = fresh
            reply = self._legacy(fresh, message)
            reply.headers["Mcp-Session-Id"] = sid
            return reply
        # A 2026-07-28-only server ignores a session id; a dual-era one serves it.
        modern = not self.legacy or (
            "mcp-session-id" not in request.headers
            and (is_modern(message) or (version is not None and version not in LEGACY))
        )
        if modern:
            return self._modern(request, message)
        session, refusal = self._session(request)
        if refusal is not None:
            return refusal
        assert session is not None
        negotiated = session.demo.version or LEGACY[-1]
        if (
            negotiated >= "2025-06-18"
            and version is not None
            and version not in LEGACY
            and not self.skips("version-header")
        ):
            return Reply(
                400,
                body=error(None, -32600, f"Unsupported protocol version {version}"),
            )
        return self._legacy(session, message)

    def _legacy(self, session: _Session, message: dict[str, Any]) -> Reply:
        answer = self.behaviour.answer(message, answer_line(_ENCODER.encode(message), session.demo))
        if answer is None:
            return Reply(202)
        if not self.sse:
            return Reply(200, body=answer)
        return Reply(200, events=session.stream([_ENCODER.encode(answer).decode()]))

    def _modern(self, request: Request, message: dict[str, Any]) -> Reply:
        mismatch = None if self.skips("headers") else _header_problem(request, message)
        meta = meta_of(message)
        has_meta = isinstance(meta, dict) and PROTOCOL_VERSION in meta
        if mismatch is not None and has_meta and "id" in message:
            return Reply(400, body=error(message["id"], -32020, f"Header mismatch: {mismatch}"))
        status, answer = answer_modern(message, self.behaviour)
        answer = self.behaviour.answer(message, answer)
        return Reply(status) if answer is None else Reply(status, body=answer)


def _header_problem(request: Request, message: dict[str, Any]) -> str | None:
    meta = meta_of(message)
    version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if request.headers.get("mcp-protocol-version") != version:
        return "MCP-Protocol-Version does not match _meta"
    method = message.get("method")
    if "id" in message and request.headers.get("mcp-method") != method:
        return "Mcp-Method does not match the method"
    key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(str(method))
    params = message.get("params")
    if key is not None and isinstance(params, dict):
        sent = request.headers.get("mcp-name", "")
        if sent.startswith("=?base64?") and sent.endswith("?="):
            sent = base64.b64decode(sent[9:-2]).decode("utf-8", "replace")
        if sent != params.get(key):
            return "Mcp-Name does not match the body"
    return None


def _handler(server: ReferenceServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _handle(self, verb: str) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            body: Any = None
            length = int(self.headers.get("Content-Length", "0") or 0)
            if length:
                try:
                    body = msgspec.json.decode(self.rfile.read(length))
                except msgspec.DecodeError:
                    body = None
            self._write(server.serve(Request(verb, headers, body)))

        def _write(self, reply: Reply) -> None:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.events is None:
                data = b"" if reply.body is None else _ENCODER.encode(reply.body)
                if data and "Content-Type" not in reply.headers:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for chunk in _sse(reply.events):
                self.wfile.write(chunk)
                self.wfile.flush()
            while reply.hold and not server.stopping.wait(0.05):
                pass

        def do_POST(self) -> None:
            self._handle("POST")

        def do_GET(self) -> None:
            self._handle("GET")

        def do_DELETE(self) -> None:
            self._handle("DELETE")

    return Handler


def _sse(events: list[tuple[str | None, str]]) -> Iterator[bytes]:
    for event_id, data in events:
        text = "" if event_id is None else f"id: {event_id}\n"
        yield (text + f"data: {data}\n\n").encode()


__all__ = ["COMPLIANT", "MODERN", "HttpBehaviour", "ReferenceServer", "Reply", "Request"]
