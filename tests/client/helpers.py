"""A scripted server for the typed-call tests: answers each request by its method; and a
loopback HTTP server that records who fetched a schema from it."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..driver.peer import Peer

Json = Any


class Answers:
    """Answers requests from a table (method -> result, or a function of the request);
    records every message the host sent after the handshake."""

    def __init__(self, peer: Peer, table: dict[str, Json | Callable[[Json], Json]]) -> None:
        self.peer = peer
        self.table = table
        self.seen: list[Json] = []

    def requests(self, method: str) -> list[Json]:
        return [m for m in self.seen if m.get("method") == method]

    async def run(self) -> None:
        while True:
            try:
                message = await self.peer.recv()
            except EOFError:
                return
            self.seen.append(message)
            if "id" not in message or "method" not in message:
                continue
            entry = self.table.get(message["method"])
            if entry is None:
                await self.peer.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32601, "message": "Method not found"},
                    }
                )
                continue
            result = entry(message) if callable(entry) else entry
            await self.peer.answer(message, result)


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that serves a schema to anyone who asks, and records who did."""
    hits: list[str] = []
    handler = type("Handler", (_Recorder,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
