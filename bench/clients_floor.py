"""The floor: no JSON-RPC client at all, blocking I/O of prepared requests, the bound of
what the server and the pipes (or sockets) allow.

- stdio: blocking writes of prepared lines and ``readline``; 64 in flight is 64 lines
  written at once, then 64 read;
- HTTP: keep-alive sockets and prepared POSTs (``bench/http_wire.py``), answers found by
  ``Content-Length``; sequential on one connection, 64 in flight on 64 keep-alive
  connections (opened in the phase's first round): a POST written on each, then the 64
  answers read in turn.

Every echo answer is checked for the size of its text.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

from http_wire import Endpoint, header, response_end, status
from measure import INFLIGHT, INIT_PARAMS, SERVER, Clock, Report, Setup, echoed_size, shares

_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def line(id_: int, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def echo(text: str) -> bytes:
    return line(1, "tools/call", {"name": "echo", "arguments": {"text": text}})


def checked(answer: bytes, size: int) -> None:
    if echoed_size(answer) != size:
        raise AssertionError(f"echo answered {answer[:80]!r}")


def phases(
    report: Report,
    setup: Setup,
    one: Callable[[bytes, int], None],
    burst: Callable[[bytes, int], None],
    prepare: Callable[[bytes], bytes] = bytes,
) -> None:
    """The timed phases: ``one(request, size)`` makes one call and checks the size of
    the echoed text, ``burst(request, n)`` sends ``n`` at once and reads their answers;
    ``prepare(line)`` is what is sent for a JSON-RPC line (made before the clock starts)."""
    small, size = prepare(echo("hello")), len(b'"hello"')
    for _ in range(setup.warmup):
        one(small, size)
    clock = Clock()
    for _ in range(setup.calls):
        one(small, size)
    report.sequential(setup.calls, *clock.since())
    clock = Clock()
    for n in shares(setup.calls, setup.calls // INFLIGHT or 1):
        burst(small, n)
    report.timed("inflight_per_s", setup.calls, clock.since()[0])
    report.small_calls_done()
    big = prepare(echo("x" * setup.big_bytes))
    clock = Clock()
    for _ in range(setup.big_calls):
        one(big, setup.big_bytes + 2)
    report.timed("big_per_s", setup.big_calls, clock.since()[0])


# -- stdio ---------------------------------------------------------------------------------


def _floor_stdio(report: Report, setup: Setup) -> None:
    proc = None
    for _ in range(setup.handshakes):
        if proc is not None:
            proc.stdin.close()
            proc.wait()
        began = time.perf_counter()
        proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        proc.stdin.write(line(0, "initialize", INIT_PARAMS))
        proc.stdin.flush()
        proc.stdout.readline()
        proc.stdin.write(_INITIALIZED)
        proc.stdin.flush()
        report.handshake(time.perf_counter() - began)
    assert proc is not None
    stdin, stdout = proc.stdin, proc.stdout

    def one(request: bytes, size: int) -> None:
        stdin.write(request)
        stdin.flush()
        checked(stdout.readline(), size)

    def burst(request: bytes, n: int) -> None:
        stdin.write(request * n)
        stdin.flush()
        for _ in range(n):
            stdout.readline()

    phases(report, setup, one, burst)
    stdin.close()
    proc.wait()


# -- HTTP ----------------------------------------------------------------------------------


class _Socket:
    """One keep-alive connection, one exchange at a time."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.sock = socket.create_connection((endpoint.host, endpoint.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = bytearray()

    def send(self, request: bytes) -> None:
        self.sock.sendall(request)

    def receive(self) -> tuple[bytes, bytes]:
        """The next response's head and body."""
        while (ends := response_end(self._buffer)) is None or len(self._buffer) < ends[1]:
            chunk = self.sock.recv(1 << 18)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self._buffer += chunk
        head_end, end = ends
        head, body = bytes(self._buffer[:head_end]), bytes(self._buffer[head_end + 4 : end])
        del self._buffer[:end]
        return head, body

    def exchange(self, request: bytes) -> tuple[bytes, bytes]:
        self.send(request)
        return self.receive()


def _floor_http(report: Report, setup: Setup) -> None:
    endpoint = Endpoint(setup.url)
    conn: _Socket | None = None
    session: bytes | None = None
    for _ in range(setup.handshakes):
        if conn is not None:
            conn.sock.close()
        began = time.perf_counter()
        conn = _Socket(endpoint)
        head, _ = conn.exchange(endpoint.post(line(0, "initialize", INIT_PARAMS)))
        session = header(head, b"mcp-session-id")
        head, _ = conn.exchange(endpoint.post(_INITIALIZED, session))
        if status(head) != 202:
            raise AssertionError(f"initialized answered {head[:40]!r}")
        report.handshake(time.perf_counter() - began)
    assert conn is not None
    main = conn
    pool: list[_Socket] = []

    def one(request: bytes, size: int) -> None:
        checked(main.exchange(request)[1], size)

    def burst(request: bytes, n: int) -> None:
        while len(pool) < n:
            pool.append(_Socket(endpoint))
        for each in pool[:n]:
            each.send(request)
        for each in pool[:n]:
            each.receive()

    phases(report, setup, one, burst, lambda line: endpoint.post(line, session))
    for each in [main, *pool]:
        each.sock.close()


def child_floor(setup: Setup) -> None:
    report = Report(time.perf_counter())  # nothing to import beyond the stdlib
    (_floor_http if setup.http else _floor_stdio)(report, setup)
    report.emit()
