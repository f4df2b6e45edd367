"""A small, fast MCP server over stdio, bundled for demos, tests and benchmarks.

Run it as ``python -m mcpl_host.demo``. It speaks newline-delimited JSON-RPC on
stdin/stdout, implements initialize, ping, tools/list and tools/call with three tools
(``echo``, ``add`` and ``sleep``, which answers after the seconds it is given), and
answers anything else as a careful server would. It is
synchronous on purpose: one line in, one line out, so a client's speed is what a
benchmark against it measures.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import msgspec

SUPPORTED = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

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
]


def _result(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def handle(message: Any) -> dict[str, Any] | None:
    """The answer to one message, or None for a notification or a response."""
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
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcpl-host-demo", "version": "1.0.0"},
                "instructions": "A demo server with three tools: echo, add and sleep.",
            },
        )
    if method == "ping":
        return _result(id_, {})
    if method == "tools/list":
        return _result(id_, {"tools": TOOLS})
    if method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            return _result(id_, {"content": [{"type": "text", "text": str(args.get("text", ""))}]})
        if name == "add":
            try:
                total = args["a"] + args["b"]
            except (KeyError, TypeError):
                return _result(
                    id_,
                    {
                        "content": [{"type": "text", "text": "a and b must be numbers"}],
                        "isError": True,
                    },
                )
            return _result(id_, {"content": [{"type": "text", "text": str(total)}]})
        if name == "sleep":
            seconds = args.get("seconds")
            if not isinstance(seconds, (int, float)) or not 0 <= seconds <= 60:
                return _result(
                    id_,
                    {"content": [{"type": "text", "text": "seconds: 0 to 60"}], "isError": True},
                )
            time.sleep(seconds)
            return _result(id_, {"content": [{"type": "text", "text": f"slept {seconds}"}]})
        return _error(id_, -32602, f"Unknown tool: {name}")
    return _error(id_, -32601, f"Method not found: {method}")


def main() -> None:
    decoder = msgspec.json.Decoder()
    encoder = msgspec.json.Encoder()
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            message = decoder.decode(line)
        except msgspec.DecodeError:
            answer: Any = _error(None, -32700, "Parse error")
        else:
            if isinstance(message, list):  # 2025-03-26 batches, answered whole
                answers = [a for a in map(handle, message) if a is not None]
                answer = answers or None
            else:
                answer = handle(message)
        if answer is not None:
            out.write(encoder.encode(answer) + b"\n")
            out.flush()


if __name__ == "__main__":
    main()
