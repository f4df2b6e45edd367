"""Running the command as a real subprocess or in process, tiny stdio servers written
for a test, and an HTTP server that refuses every request."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import structlog

from mcpl_host.cli import main

CLI = [sys.executable, "-m", "mcpl_host.cli"]
# Generous: a run is well under a second; this only stops a hung test.
TIMEOUT = 60


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m mcpl_host.cli ARGS``, output captured, colour settings cleared."""
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    environment.update(env or {})
    return subprocess.run(
        [*CLI, *args], check=False, capture_output=True, text=True, timeout=TIMEOUT, env=environment
    )


def run_json(
    *args: str, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run a command line that has ``--json``; stdout must be exactly one JSON object
    (``json.loads`` refuses anything after it)."""
    done = run(*args, env=env)
    report = json.loads(done.stdout)
    assert isinstance(report, dict), done.stdout
    return report, done


PRELUDE = """\
import json, os, sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()

def refused_discover(request):
    # A handshake-era server refuses server/discover, which a dual-era host asks first.
    if request.get("method") != "server/discover":
        return False
    send({"jsonrpc": "2.0", "id": request["id"],
          "error": {"code": -32601, "message": "Method not found"}})
    return True

def read_initialize():
    # A handshake-era server: it refuses server/discover (a dual-era host asks it
    # first) as a method it does not know, and returns the initialize request.
    request = json.loads(sys.stdin.readline())
    while request.get("method") == "server/discover":
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32601, "message": "Method not found"}})
        request = json.loads(sys.stdin.readline())
    return request

def initialized(request, version=None, server_info=None, capabilities=None):
    send({"jsonrpc": "2.0", "id": request["id"], "result": {
        "protocolVersion": version or request["params"]["protocolVersion"],
        "capabilities": capabilities if capabilities is not None else {"tools": {}},
        "serverInfo": server_info or {"name": "test-server", "version": "0"},
    }})

"""


def server(tmp_path: Path, name: str, body: str) -> list[str]:
    """A stdio server: ``body`` (Python, after :data:`PRELUDE`) written to a file; the
    argv that runs it."""
    script = tmp_path / f"{name}.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    return [sys.executable, str(script)]


def run_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``main(ARGS)`` in this process: (exit status, stdout, stderr), logs included (the
    command logs to stderr). structlog's configuration, which the command replaces, is
    put back after, for the tests that read logs with capture_logs."""
    saved = structlog.get_config()
    capsys.readouterr()  # what earlier code of the test wrote is not this run's
    try:
        status = main(list(args))
    finally:
        structlog.configure(**saved)
    out, err = capsys.readouterr()
    return status, out, err


class RefusingServer:
    """An HTTP server answering 401 to every request, as an OAuth-protected MCP server
    answers a client without a valid token, except that it echoes every header it got
    (name and value) and the request's body, in its ``WWW-Authenticate`` challenge and
    its JSON body: whatever the client sent comes back at it, as a careless server
    would show it. ``seen`` holds each request's headers (lower-case names)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        refusing = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _refuse(self) -> None:
                refusing.seen.append({k.lower(): v for k, v in self.headers.items()})
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace")
                sent = "; ".join(f"{k}={v}" for k, v in self.headers.items())
                quoted = sent.replace("\\", "/").replace('"', "'")
                challenge = (
                    f'Bearer realm="you sent {quoted}", error="invalid_token", '
                    f'error_description="body of {len(body)} bytes", '
                    'resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource"'
                )
                payload = json.dumps(
                    {"error": "invalid_token", "error_description": f"you sent {sent}; {body}"}
                ).encode()
                self.send_response(401)
                self.send_header("WWW-Authenticate", challenge)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_POST = do_GET = do_DELETE = _refuse

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/mcp"


@contextlib.contextmanager
def refusing_http_server() -> Iterator[RefusingServer]:
    """A :class:`RefusingServer`, serving until the block ends."""
    server = RefusingServer()
    httpd = server._httpd
    thread = threading.Thread(target=httpd.serve_forever, name="refusing HTTP", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def closed_port_url() -> str:
    """An http:// URL where nothing listens (a port just bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


ASSERVER = Path(__file__).resolve().parents[1] / "auth" / "asserver.py"
# A cold start of the authorization server (uvicorn, the SDK) takes about a second.
ASSERVER_READY = 30.0

FAKE_BROWSER = """\
import sys, urllib.request
# What a browser and a consenting person do: open the authorization URL and follow the
# authorization server's redirect (it approves at once) to the command's loopback listener.
with urllib.request.urlopen(sys.argv[1], timeout=30) as answer:
    answer.read()
"""


@contextlib.contextmanager
def authorization_server(*flags: str) -> Iterator[str]:
    """tests/auth/asserver.py (a real OAuth authorization server, auto-approving, and
    the MCP server it protects) on a free port; yields the MCP server's URL. Stopped
    (SIGTERM, then SIGKILL) and reaped when the block ends."""
    process = subprocess.Popen(
        [sys.executable, str(ASSERVER), "--port", "0", *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready: list[str] = []
        reader = threading.Thread(
            target=lambda: ready.append(process.stdout.readline() if process.stdout else ""),
            daemon=True,
        )
        reader.start()
        reader.join(ASSERVER_READY)
        line = ready[0] if ready else ""
        assert line.startswith("READY "), f"asserver.py said {line!r}"
        yield line.removeprefix("READY ").strip()
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def browser_env(tmp_path: Path) -> dict[str, str]:
    """The environment under which ``webbrowser`` "opens" a URL with :data:`FAKE_BROWSER`."""
    script = tmp_path / "fake_browser.py"
    script.write_text(FAKE_BROWSER)
    return {"BROWSER": f"{sys.executable} {script} %s"}


class TerminalReader:
    """What a command writes on a pseudo-terminal, read by a thread as it comes (a full
    terminal buffer would block the command). ``text()`` is what was read so far."""

    def __init__(self, leader: int) -> None:
        self._leader = leader
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._leader, 4096)
            except OSError:  # EIO: the command closed its side
                return
            if not chunk:
                return
            self._chunks.append(chunk)

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace")

    def join(self) -> None:
        self._thread.join(5)
