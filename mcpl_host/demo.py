"""A small, fast MCP server over stdio, bundled for demos, tests and benchmarks.

Run it as ``python -m mcpl_host.demo``. It speaks newline-delimited JSON-RPC on
stdin/stdout and implements initialize, ping, and:

- tools: ``echo``, ``add``, ``sleep`` (answers after the seconds it is given) and
  ``countdown`` (counts ``steps`` down, ``delay`` seconds apart, sending
  ``notifications/progress`` when the request carries ``_meta.progressToken``, and
  stopping without an answer when the host cancels it or closes stdin);
- resources: ``demo://readme`` (text), and the template ``demo://echo/{text}``;
- prompts: ``greet`` (argument ``name``).

Anything else is answered as a careful server would. It is synchronous on purpose: one
line in, one line out, so a client's speed is what a benchmark against it measures.
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Final
from urllib.parse import unquote

import msgspec

SUPPORTED = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

# MCP's own code for a resource that does not exist.
RESOURCE_NOT_FOUND: Final = -32002
_MAX_STEPS: Final = 100
_MAX_DELAY: Final = 10.0

TOOLS = [
    {
        "name": "echo",
        "description": "Return the text it is given.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "sleep",
        "description": "Answer after the given number of seconds (at most 60).",
        "inputSchema": {
            "type": "object",
            "properties": {"seconds": {"type": "number"}},
            "required": ["seconds"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "countdown",
        "description": (
            "Count down from steps to zero, delay seconds apart, reporting progress; "
            "stops when cancelled."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "minimum": 0, "maximum": _MAX_STEPS},
                "delay": {"type": "number", "minimum": 0, "maximum": _MAX_DELAY},
            },
            "required": ["steps"],
        },
        "annotations": {"readOnlyHint": True},
    },
]

README_URI: Final = "demo://readme"
README_TEXT: Final = (
    "# mcpl-host demo server\n\n"
    "Tools: echo, add, sleep, countdown. Resources: demo://readme and demo://echo/{text}. "
    "Prompts: greet.\n"
)
RESOURCES = [
    {
        "uri": README_URI,
        "name": "readme",
        "title": "About the demo server",
        "description": "What this server offers.",
        "mimeType": "text/markdown",
    },
]
_ECHO_PREFIX: Final = "demo://echo/"
RESOURCE_TEMPLATES = [
    {
        "uriTemplate": _ECHO_PREFIX + "{text}",
        "name": "echo",
        "description": "A resource whose text is the (percent-decoded) end of its URI.",
        "mimeType": "text/plain",
    },
]
PROMPTS = [
    {
        "name": "greet",
        "description": "Ask the model to greet someone.",
        "arguments": [{"name": "name", "description": "Who to greet.", "required": True}],
    },
]


class Session:
    """What a request can do besides answering: notify, and pause watching for a cancel.

    This plain one, used when :func:`handle` is called alone (behind a test's socket),
    sends nothing and sleeps for real; :func:`main` passes one wired to stdin/stdout.
    """

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification (here: dropped)."""

    def pause(self, seconds: float, request_id: Any) -> bool:
        """Wait ``seconds``; False if the request was cancelled (or input ended) meanwhile."""
        del request_id  # nothing can cancel it here: there is no input to watch
        time.sleep(seconds)
        return True


def _result(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def _text(text: str, *, is_error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def handle(message: Any, session: Session | None = None) -> dict[str, Any] | None:
    """The answer to one message, or None for a notification, a response, or a request
    the host cancelled while it ran (``countdown``)."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return (
            None
            if isinstance(message, dict) and "id" in message
            else _error(None, -32600, "Invalid Request")
        )
    if "id" not in message:
        return None
    id_, method = message["id"], message["method"]
    params = message.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        return _result(
            id_,
            {
                "protocolVersion": asked if asked in SUPPORTED else SUPPORTED[0],
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "mcpl-host-demo", "version": "1.0.0"},
                "instructions": (
                    "A demo server: tools echo, add, sleep and countdown, "
                    "the resource demo://readme and the prompt greet."
                ),
            },
        )
    if method == "ping":
        return _result(id_, {})
    if method == "tools/list":
        return _result(id_, {"tools": TOOLS})
    if method == "tools/call":
        try:
            result = _call_tool(id_, params, session or Session())
        except _Refusal as refusal:
            return _error(id_, refusal.code, refusal.message)
        return None if result is None else _result(id_, result)
    if method == "resources/list":
        return _result(id_, {"resources": RESOURCES})
    if method == "resources/templates/list":
        return _result(id_, {"resourceTemplates": RESOURCE_TEMPLATES})
    if method == "resources/read":
        return _read_resource(id_, params.get("uri"))
    if method == "prompts/list":
        return _result(id_, {"prompts": PROMPTS})
    if method == "prompts/get":
        return _get_prompt(id_, params)
    return _error(id_, -32601, f"Method not found: {method}")


def _call_tool(id_: Any, params: dict[str, Any], session: Session) -> dict[str, Any] | None:
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        return _text(str(args.get("text", "")))
    if name == "add":
        try:
            total = args["a"] + args["b"]
        except (KeyError, TypeError):
            return _text("a and b must be numbers", is_error=True)
        return _text(str(total))
    if name == "sleep":
        seconds = args.get("seconds")
        if not isinstance(seconds, (int, float)) or not 0 <= seconds <= 60:
            return _text("seconds: 0 to 60", is_error=True)
        time.sleep(seconds)
        return _text(f"slept {seconds}")
    if name == "countdown":
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return _countdown(id_, args, token, session)
    raise _Refusal(-32602, f"Unknown tool: {name}")


def _countdown(
    id_: Any, args: dict[str, Any], token: Any, session: Session
) -> dict[str, Any] | None:
    steps, delay = args.get("steps"), args.get("delay", 0.1)
    if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps <= _MAX_STEPS:
        return _text(f"steps: an integer from 0 to {_MAX_STEPS}", is_error=True)
    if (
        isinstance(delay, bool)
        or not isinstance(delay, (int, float))
        or not 0 <= delay <= _MAX_DELAY
    ):
        return _text(f"delay: 0 to {_MAX_DELAY:g} seconds", is_error=True)
    for done in range(1, steps + 1):
        if not session.pause(delay, id_):
            return None  # cancelled: MCP says a cancelled request gets no answer
        if token is not None:
            session.notify(
                "notifications/progress",
                {
                    "progressToken": token,
                    "progress": done,
                    "total": steps,
                    "message": f"{steps - done} to go",
                },
            )
    return _text(f"liftoff after {steps} steps")


def _within(value: float, low: float, high: float) -> bool:
    # JSON true is not a number, though Python's bool is an int.
    return not isinstance(value, bool) and low <= value <= high


def _read_resource(id_: Any, uri: Any) -> dict[str, Any]:
    if uri == README_URI:
        return _result(
            id_, {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": README_TEXT}]}
        )
    if isinstance(uri, str) and uri.startswith(_ECHO_PREFIX):
        text = unquote(uri[len(_ECHO_PREFIX) :])
        return _result(id_, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]})
    return _error(id_, RESOURCE_NOT_FOUND, f"Resource not found: {uri}")


def _get_prompt(id_: Any, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if name != "greet":
        return _error(id_, -32602, f"Unknown prompt: {name}")
    arguments = params.get("arguments") or {}
    who = arguments.get("name") if isinstance(arguments, dict) else None
    if not isinstance(who, str) or not who:
        return _error(id_, -32602, "Missing required argument: name")
    return _result(
        id_,
        {
            "description": f"Greet {who}",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": f"Please greet {who}."}}
            ],
        },
    )


class _Refusal(Exception):
    """A request answered with a JSON-RPC error from deep inside a handler."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _StdioSession(Session):
    """stdin read with ``os.read``, so that a pause can watch it (``select``) for a
    ``notifications/cancelled`` naming the running request; other lines that arrive
    meanwhile wait their turn."""

    def __init__(self, write: Callable[[dict[str, Any]], None], fd: int = 0) -> None:
        self._write = write
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
    decoder = msgspec.json.Decoder()
    encoder = msgspec.json.Encoder()
    out = sys.stdout.buffer

    def write(value: Any) -> None:
        out.write(encoder.encode(value) + b"\n")
        out.flush()

    session = _StdioSession(write)
    for line in session.lines():
        try:
            message = decoder.decode(line)
        except msgspec.DecodeError:
            answer: Any = _error(None, -32700, "Parse error")
        else:
            if isinstance(message, list):  # 2025-03-26 batches, answered whole
                answers = [a for a in (handle(m, session) for m in message) if a is not None]
                answer = answers or None
            else:
                answer = handle(message, session)
        if answer is not None:
            write(answer)


if __name__ == "__main__":
    main()
