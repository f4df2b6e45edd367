"""What every hostile Streamable HTTP server shares (standard library only, no
mcpl_host): a threading HTTP server on a loopback port, printed as the first line of
stdout (``http://127.0.0.1:PORT/mcp``); ``initialize`` answered with a session; a
notification or a response taken with 202; ``GET /stats`` (outside the MCP path) gives
the server's counters as JSON. A server subclasses :class:`Handler` for the rest. It
runs until its stdin closes (the parent's end) or it is terminated.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.lock = threading.Lock()

    def add(self, name: str, amount: int = 1) -> None:
        with self.lock:
            self.values[name] = self.values.get(name, 0) + amount


STATS = Stats()
ARGS = argparse.Namespace()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    session_id = ""  # what initialize's answer sets; a subclass may choose one

    def log_message(self, *args: Any) -> None:
        pass

    # -- what a server overrides ---------------------------------------------------

    def on_request(self, message: dict[str, Any]) -> None:
        """A request other than initialize; the default answers with an empty result."""
        self.json({"jsonrpc": "2.0", "id": message.get("id"), "result": {}})

    def on_get(self) -> None:
        self.status(405)

    # -- helpers ---------------------------------------------------------------------

    def status(self, code: int) -> None:
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def json(self, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def sse_start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True

    def hold(self) -> None:
        """Keep the connection open, saying nothing, until the client closes it."""
        STATS.add("held")
        STATS.add("holding")
        try:
            sock: socket.socket = self.connection
            while True:
                readable, _, _ = select.select([sock], [], [], 1.0)
                if readable and not sock.recv(65536):
                    break
        except OSError:
            pass
        finally:
            STATS.add("holding", -1)
            self.close_connection = True

    # -- dispatch --------------------------------------------------------------------

    def do_POST(self) -> None:
        STATS.add("posts")
        length = int(self.headers.get("Content-Length", "0"))
        try:
            message = json.loads(self.rfile.read(length))
        except ValueError:
            self.status(400)
            return
        if not isinstance(message, dict):
            self.status(400)
            return
        if message.get("method") == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-http", "version": "0"},
            }
            self.json(
                {"jsonrpc": "2.0", "id": message.get("id"), "result": result},
                {"Mcp-Session-Id": self.session_id or uuid.uuid4().hex},
            )
        elif "method" not in message or "id" not in message:
            self.status(202)  # a notification or a response
        else:
            self.on_request(message)

    def do_GET(self) -> None:
        if self.path == "/stats":
            with STATS.lock:
                self.json(dict(STATS.values))
            return
        STATS.add("gets")
        self.on_get()

    def do_DELETE(self) -> None:
        STATS.add("deletes")
        self.status(200)


def serve(handler: type[Handler], parser: argparse.ArgumentParser) -> None:
    parser.parse_args(namespace=ARGS)
    # A deep accept queue: a host's hundred concurrent requests all reach a handler.
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdout.write(f"http://127.0.0.1:{server.server_address[1]}/mcp\n")
    sys.stdout.flush()
    sys.stdin.buffer.read()  # until the parent closes its end
    os._exit(0)
