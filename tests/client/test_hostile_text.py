"""Issue 17: what a real stdio server's hostile text does to a call (the pure core's
side is tests/protocol/test_hostile.py). Each call is answered or fails at once with a
typed error: none waits for its timeout, and nothing is logged as an internal error."""

from __future__ import annotations

import json
import sys

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import Connection, StdioTarget
from mcpl_host.client import ResultDecodeError

SERVER = r"""
import json, sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")  # json.dumps writes "\udcff" as is
    sys.stdout.flush()

def send_raw(line):
    sys.stdout.buffer.write(line + b"\n")
    sys.stdout.flush()

def text(id_, value):
    send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": value}]}})

errors, waiting = [], None
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "surrogate":  # an undecodable file name, as Python writes it
            text(message["id"], "file \udcff.txt")
        elif name == "bad-utf8":
            send_raw(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"\xff"}]}}' % message["id"])
        elif name == "unreadable":  # two requests the host cannot read: -32600, id null
            waiting = message["id"]
            send_raw(b'{"jsonrpc":"2.0","id":' + b"1" * 5000 + b',"method":"ping"}')
            send_raw(b'{"jsonrpc":"2.0","id":7,"method":"ping","params":' + b"[" * 5000 + b"]" * 5000 + b"}")
    elif method is not None and "id" in message:  # server/discover: a handshake-era server
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}})
    elif "error" in message and message.get("id") is None:
        errors.append(message["error"])
        if len(errors) == 2:
            text(waiting, json.dumps(errors))
"""


def _target() -> StdioTarget:
    return StdioTarget((sys.executable, "-c", SERVER))


async def test_a_lone_surrogate_in_a_result_is_read_as_u_fffd() -> None:
    with capture_logs() as events, trio.fail_after(10):
        async with Connection(_target(), request_timeout=20) as conn:
            result = await conn.call_tool("surrogate", {})
    assert result.content[0].text == "file \ufffd.txt"  # type: ignore[union-attr]
    assert not [e for e in events if e["log_level"] in ("error", "critical")]


async def test_invalid_utf8_in_a_result_fails_that_call_at_once() -> None:
    with trio.fail_after(10):
        async with Connection(_target(), request_timeout=20) as conn:
            with pytest.raises(ResultDecodeError, match="Invalid UTF-8"):
                await conn.call_tool("bad-utf8", {})
            assert (await conn.call_tool("surrogate", {})).content  # the connection goes on


async def test_a_huge_id_and_deep_nesting_are_answered_minus_32600_with_id_null() -> None:
    with capture_logs() as events, trio.fail_after(10):
        async with Connection(_target(), request_timeout=20) as conn:
            result = await conn.call_tool("unreadable", {})
    errors = json.loads(result.content[0].text)  # type: ignore[union-attr]
    # Each answer is written by its own task: in either order.
    assert sorted((e["code"], e["message"]) for e in errors) == [
        (
            -32600,
            "Invalid Request: a number id must be an integer within ±(2^53−1), "
            "not an integer beyond ±(2^53−1)",
        ),
        (-32600, "Invalid Request: the message nests arrays and objects too deeply"),
    ]
    assert not [e for e in events if e["log_level"] in ("error", "critical")]
