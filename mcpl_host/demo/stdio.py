"""The demo server on stdin and stdout: ``python -m mcpl_host.demo`` runs :func:`main`."""

from __future__ import annotations

import os
import select
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from . import Session, answer_line


class _StdioSession(Session):
    """stdin read with ``os.read``, so that a pause can watch it (``select``) for a
    ``notifications/cancelled`` naming the running request, and ``ask`` for the client's
    response; other lines that arrive meanwhile wait their turn."""

    has_client = True

    def __init__(self, write: Callable[[dict[str, Any]], None], fd: int = 0) -> None:
        super().__init__()
        self._write = write
        self._asked = 0
        self._fd = fd
        self._buffer = bytearray()
        self._lines: deque[bytes] = deque()
        self._eof = False
        self._decoder = msgspec.json.Decoder()

    def lines(self) -> Iterator[bytes]:
        while True:
            if self._lines:
                yield self._lines.popleft()
            elif self._eof:
                return
            else:
                self._read()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def pause(self, seconds: float, request_id: Any) -> bool:
        deadline = time.monotonic() + seconds
        while not self._eof:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            readable, _, _ = select.select([self._fd], [], [], left)
            if readable:
                before = len(self._lines)
                self._read()
                if self._take_cancel(before, request_id):
                    return False
        return False  # the host is gone: nobody waits for the answer

    def ask(
        self, method: str, params: dict[str, Any] | None, request_id: Any
    ) -> dict[str, Any] | None:
        if self._eof:
            return None  # the client is gone: nobody would answer
        self._asked += 1
        ask_id = f"demo-{self._asked}"
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": ask_id, "method": method}
        if params is not None:
            request["params"] = params
        self._write(request)
        # From the first queued line: a scripted client may have written its answer (or
        # a cancel) before reading the request, and it may already be here.
        start = 0
        while True:
            response = self._take_response(start, ask_id)
            if response is not None:
                return response
            if self._take_cancel(start, request_id):
                # The host gave up on the tool call, so the question is moot too.
                self.notify("notifications/cancelled", {"requestId": ask_id})
                return None
            if self._eof:
                return None
            start = len(self._lines)
            self._read()

    def _take_response(self, start: int, ask_id: str) -> dict[str, Any] | None:
        for index in range(start, len(self._lines)):
            try:
                message = self._decoder.decode(self._lines[index])
            except msgspec.DecodeError:
                continue
            if (
                isinstance(message, dict)
                and "method" not in message
                and message.get("id") == ask_id
                and ("result" in message or "error" in message)
            ):
                del self._lines[index]
                return message
        return None

    def _read(self) -> None:
        chunk = os.read(self._fd, 65536)
        if not chunk:
            self._eof = True
            if self._buffer:
                self._lines.append(bytes(self._buffer))
                self._buffer.clear()
            return
        self._buffer += chunk
        while (end := self._buffer.find(b"\n")) >= 0:
            self._lines.append(bytes(self._buffer[:end]))
            del self._buffer[: end + 1]

    def _take_cancel(self, start: int, request_id: Any) -> bool:
        for index in range(start, len(self._lines)):
            try:
                message = self._decoder.decode(self._lines[index])
            except msgspec.DecodeError:
                continue
            if (
                isinstance(message, dict)
                and message.get("method") == "notifications/cancelled"
                and isinstance(message.get("params"), dict)
                and message["params"].get("requestId") == request_id
            ):
                del self._lines[index]
                return True
        return False


def main() -> None:
    encoder = msgspec.json.Encoder()
    out = sys.stdout.buffer

    def write(value: Any) -> None:
        out.write(encoder.encode(value) + b"\n")
        out.flush()

    session = _StdioSession(write)
    for line in session.lines():
        answer = answer_line(line, session)
        if answer is not None:
            write(answer)
