"""A server that echoes the credential it was configured with (a stdio env value, an
HTTP bearer token, a WebSocket URL token) in the fields the host logs (a method, a
string id) over a real transport: the host's events show the redaction mark, never the
credential, and no raw escape or line separator (DESIGN 3.11)."""

from __future__ import annotations

import json
import sys
from typing import Any

import trio
import trio_websocket
from structlog.testing import capture_logs

from mcpl_host import Connection, HttpTarget, StdioTarget, WebSocketTarget
from mcpl_host.protocol.redact import REDACTION_MARK

from ..logcheck import assert_safe
from .http_server import ScriptedHttpServer, Sse
from .test_websocket import Server

TOKEN = "tok-8e2f61d0c5b9"


def hostile(token: str) -> list[dict[str, Any]]:
    """What the server sends before it answers the host's ping: the token, a terminal
    escape and a line separator in a request's method and id, an invalid request's
    method, an unmatched response's id and a notification's method."""
    text = f"{token}\x1b[2J\u2028"
    return [
        {"jsonrpc": "2.0", "id": f"id/{text}", "method": f"x/{text}"},
        {"jsonrpc": "2.0", "id": [1], "method": f"y/{text}"},
        {"jsonrpc": "2.0", "id": f"r/{text}", "result": {}},
        {"jsonrpc": "2.0", "method": f"n/{text}"},
    ]


def assert_masked(events: list[dict[str, Any]]) -> None:
    assert_safe(events, TOKEN)
    not_found = [e for e in events if e.get("reason") == "method not found"]
    assert len(not_found) == 1
    assert REDACTION_MARK in not_found[0]["id"]
    assert REDACTION_MARK in not_found[0]["method"]
    unmatched = [e for e in events if e.get("outcome") == "response-unmatched"]
    assert [REDACTION_MARK in e["id"] for e in unmatched] == [True]
    invalid = [e for e in events if e.get("outcome") == "answered-invalid"]
    assert [REDACTION_MARK in e["method"] for e in invalid] == [True]


# Its first argument is hostile() with a placeholder where its own env value goes.
STDIO_SERVER = """
import json, os, sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()

init = json.loads(sys.stdin.readline())
if init["method"] == "server/discover":  # a handshake-era server refuses it
    send({"jsonrpc": "2.0", "id": init["id"], "error": {"code": -32601, "message": "?"}})
    init = json.loads(sys.stdin.readline())
result = {"protocolVersion": init["params"]["protocolVersion"], "capabilities": {}}
send({"jsonrpc": "2.0", "id": init["id"], "result": result})
json.loads(sys.stdin.readline())  # notifications/initialized
for message in json.loads(sys.argv[1].replace("@TOKEN@", os.environ["API_TOKEN"])):
    send(message)
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "ping":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
"""


async def test_a_stdio_env_value_echoed_by_the_server_is_masked() -> None:
    template = json.dumps(hostile("@TOKEN@"))
    target = StdioTarget((sys.executable, "-c", STDIO_SERVER, template), env={"API_TOKEN": TOKEN})
    with capture_logs() as events, trio.fail_after(20):
        async with Connection(target) as conn:
            assert await conn.request("ping") == {}
    assert_masked(events)


async def test_an_http_bearer_token_echoed_by_the_server_is_masked() -> None:
    def answer(message: dict[str, Any], _session: str | None) -> Any:
        if message.get("method") != "ping":
            return None  # initialized, and the host's answers: 202
        token = server.posted("initialize")[0].headers["authorization"].split()[1]
        result = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        return Sse(events=[(None, m) for m in [*hostile(token), result]])

    with ScriptedHttpServer(answer) as server, trio.fail_after(20), capture_logs() as events:
        target = HttpTarget(server.url, headers={"Authorization": f"Bearer {TOKEN}"})
        async with Connection(target) as conn:
            assert await conn.request("ping") == {}
    assert_masked(events)


async def test_a_websocket_url_token_echoed_by_the_server_is_masked() -> None:
    async def script(ws: trio_websocket.WebSocketConnection, msg: dict[str, Any], _n: int) -> bool:
        if msg.get("method") != "ping":
            return False
        token = server.paths[-1].partition("token=")[2]
        for message in hostile(token):
            await ws.send_message(json.dumps(message))
        await ws.send_message(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}))
        return True

    server = Server(script)
    with capture_logs() as events, trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            async with Connection(WebSocketTarget(server.url(f"/mcp?token={TOKEN}"))) as conn:
                assert await conn.request("ping") == {}
            nursery.cancel_scope.cancel()
    assert_masked(events)
