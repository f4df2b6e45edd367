"""The demo server alone, as a real subprocess spoken to in raw JSON lines: what it adds
for the client features of MCP (structured output, logging, subscriptions, completions,
and requests to the client, where the test plays the client).

A server takes a quarter of a second to start, so two are shared by the module: one
whose client advertised nothing, one whose client advertised roots, sampling and
elicitation. Each test touches only state (log level, subscriptions) no other test
does, and the ids of the server's requests are counted across tests.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcpl_host.demo import Session, answer_line, handle

# Far above a line's real latency (milliseconds); only stops a hung test.
READ_TIMEOUT = 5.0


class Demo:
    """``python -m mcpl_host.demo`` with its stdin and stdout as pipes of JSON lines."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcpl_host.demo"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        self._fd = self.process.stdout.fileno()
        self._buffer = b""
        self._asked = 0
        self.initialized: dict[str, Any] = {}

    def next_ask_id(self) -> str:
        """The id the server's next request to the client must carry: demo-1, demo-2..."""
        self._asked += 1
        return f"demo-{self._asked}"

    def send(self, message: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, id_: Any, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def call(self, id_: Any, tool: str, arguments: dict[str, Any]) -> None:
        self.request(id_, "tools/call", {"name": tool, "arguments": arguments})

    def read_line(self) -> bytes | None:
        """The next line the server wrote; None at end of output. Fails after 5 s."""
        deadline = time.monotonic() + READ_TIMEOUT
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([self._fd], [], [], max(left, 0))
            if not readable:
                pytest.fail(f"no line from the demo server within {READ_TIMEOUT} s")
            chunk = os.read(self._fd, 65536)
            if not chunk:
                assert not self._buffer, self._buffer
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def read(self) -> Any:
        line = self.read_line()
        assert line is not None, "the demo server's output ended"
        return json.loads(line)

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=READ_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _started(capabilities: dict[str, Any]) -> Iterator[Demo]:
    server = Demo()
    try:
        server.request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        server.initialized = server.read()["result"]
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def demo() -> Iterator[Demo]:
    """A server whose client advertised no capabilities."""
    yield from _started({})


@pytest.fixture(scope="module")
def client_demo() -> Iterator[Demo]:
    """A server whose client can be asked for roots, sampling and elicitation."""
    yield from _started({"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}})


@pytest.fixture
def own_demo() -> Iterator[Demo]:
    """A server of the test's own, for a test that ends it; its client can list roots."""
    yield from _started({"roots": {}})


def _answer(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def _text(text: str, *, is_error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def _notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def test_initialize_advertises_the_server_features(demo: Demo) -> None:
    result = demo.initialized
    assert result["capabilities"] == {
        "tools": {},
        "resources": {"subscribe": True},
        "prompts": {},
        "logging": {},
        "completions": {},
    }
    assert "logging" in result["instructions"]
    demo.request(1, "tools/list")
    tools = {tool["name"]: tool for tool in demo.read()["result"]["tools"]}
    assert list(tools) == [
        "echo",
        "add",
        "sleep",
        "countdown",
        "wrong_shape",
        "log",
        "touch",
        "ask",
    ]
    assert tools["add"]["outputSchema"] == {
        "type": "object",
        "properties": {"sum": {"type": "number"}},
        "required": ["sum"],
    }
    assert tools["wrong_shape"]["outputSchema"] == {
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"],
    }
    assert "outputSchema" not in tools["echo"]


def test_add_and_wrong_shape_carry_structured_content(demo: Demo) -> None:
    demo.call(1, "add", {"a": 2, "b": 40})
    assert demo.read() == _answer(
        1, {"content": [{"type": "text", "text": "42"}], "structuredContent": {"sum": 42}}
    )
    demo.call(2, "add", {"a": 0.5, "b": 1})
    assert demo.read()["result"]["structuredContent"] == {"sum": 1.5}
    demo.call(3, "wrong_shape", {})
    assert demo.read() == _answer(
        3,
        {
            "content": [{"type": "text", "text": '{"count": "many"}'}],
            "structuredContent": {"count": "many"},
        },
    )


def test_log_respects_the_level_set(demo: Demo) -> None:
    demo.call(1, "log", {"level": "info", "text": "at the default level"})
    assert demo.read() == _notification(
        "notifications/message", {"level": "info", "logger": "demo", "data": "at the default level"}
    )
    assert demo.read() == _answer(1, _text("logged"))
    demo.call(2, "log", {"level": "debug", "text": "below info"})
    assert demo.read() == _answer(2, _text("filtered"))  # and no notification before it
    demo.request(3, "logging/setLevel", {"level": "error"})
    assert demo.read() == _answer(3, {})
    demo.call(4, "log", {"level": "warning", "text": "below error"})
    assert demo.read() == _answer(4, _text("filtered"))
    demo.call(5, "log", {"level": "emergency", "text": "above error"})
    assert demo.read() == _notification(
        "notifications/message", {"level": "emergency", "logger": "demo", "data": "above error"}
    )
    assert demo.read() == _answer(5, _text("logged"))
    demo.request(6, "logging/setLevel", {"level": "loud"})
    assert demo.read() == _error(6, -32602, "Unknown log level: loud")
    demo.call(7, "log", {"level": "error", "text": "still at error"})  # the level stayed
    assert demo.read()["method"] == "notifications/message"
    assert demo.read() == _answer(7, _text("logged"))
    demo.call(8, "log", {"level": "verbose", "text": "x"})
    assert demo.read()["result"]["isError"] is True


def test_subscribe_then_touch_sends_updated(demo: Demo) -> None:
    demo.call(1, "touch", {"uri": "demo://readme"})
    assert demo.read() == _answer(1, _text("not subscribed"))
    demo.request(2, "resources/subscribe", {"uri": "demo://readme"})
    assert demo.read() == _answer(2, {})
    demo.request(3, "resources/subscribe", {"uri": "demo://echo/hi%20there"})
    assert demo.read() == _answer(3, {})
    demo.call(4, "touch", {"uri": "demo://readme"})
    assert demo.read() == _notification("notifications/resources/updated", {"uri": "demo://readme"})
    assert demo.read() == _answer(4, _text("updated"))
    demo.call(5, "touch", {"uri": "demo://echo/hi%20there"})
    assert demo.read() == _notification(
        "notifications/resources/updated", {"uri": "demo://echo/hi%20there"}
    )
    assert demo.read() == _answer(5, _text("updated"))
    demo.request(6, "resources/unsubscribe", {"uri": "demo://readme"})
    assert demo.read() == _answer(6, {})
    demo.call(7, "touch", {"uri": "demo://readme"})
    assert demo.read() == _answer(7, _text("not subscribed"))
    demo.request(8, "resources/subscribe", {"uri": "demo://nope"})
    assert demo.read() == _error(8, -32002, "Resource not found: demo://nope")
    demo.request(9, "resources/unsubscribe", {"uri": "demo://nope"})
    assert demo.read() == _error(9, -32002, "Resource not found: demo://nope")


def test_completion_for_the_prompt_and_the_template(demo: Demo) -> None:
    demo.request(
        1,
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "name", "value": "a"},
        },
    )
    assert demo.read() == _answer(
        1, {"completion": {"values": ["Ada", "Alan"], "total": 2, "hasMore": False}}
    )
    demo.request(
        2,
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "demo://echo/{text}"},
            "argument": {"name": "text", "value": "H"},
        },
    )
    assert demo.read() == _answer(
        2, {"completion": {"values": ["hello", "hi", "howdy"], "total": 3, "hasMore": False}}
    )
    demo.request(
        3,
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "name", "value": "z"},
        },
    )
    assert demo.read() == _answer(3, {"completion": {"values": [], "total": 0, "hasMore": False}})
    demo.request(
        4,
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "other"}, "argument": {"name": "name", "value": ""}},
    )
    assert demo.read() == _error(4, -32602, "No completions for ref/prompt other name")


def test_ask_roots_answers_after_the_client_and_then_what_came_meanwhile(
    client_demo: Demo,
) -> None:
    client_demo.call(1, "ask", {"what": "roots"})
    asked = client_demo.next_ask_id()
    assert client_demo.read() == {"jsonrpc": "2.0", "id": asked, "method": "roots/list"}
    # While the server waits: a request and a notification of the client's own.
    client_demo.request(2, "ping")
    client_demo.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    client_demo.send(
        _answer(asked, {"roots": [{"uri": "file:///work", "name": "work"}, {"uri": "file:///tmp"}]})
    )
    assert client_demo.read() == _answer(1, _text("roots: file:///work, file:///tmp"))
    assert client_demo.read() == _answer(2, {})  # the ping, after
    client_demo.call(3, "ask", {"what": "roots"})
    asked = client_demo.next_ask_id()
    assert client_demo.read() == {"jsonrpc": "2.0", "id": asked, "method": "roots/list"}
    client_demo.send(_answer(asked, {"roots": []}))
    assert client_demo.read() == _answer(3, _text("roots: (none)"))


def test_ask_sample(client_demo: Demo) -> None:
    client_demo.call(1, "ask", {"what": "sample"})
    asked = client_demo.next_ask_id()
    assert client_demo.read() == {
        "jsonrpc": "2.0",
        "id": asked,
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
            "maxTokens": 50,
        },
    }
    client_demo.send(
        _answer(
            asked,
            {
                "role": "assistant",
                "content": {"type": "text", "text": "Hello!"},
                "model": "test-model",
                "stopReason": "endTurn",
            },
        )
    )
    assert client_demo.read() == _answer(1, _text("model test-model said: Hello!"))


def test_ask_elicit_accepted_then_declined(client_demo: Demo) -> None:
    client_demo.call(1, "ask", {"what": "elicit"})
    asked = client_demo.next_ask_id()
    assert client_demo.read() == {
        "jsonrpc": "2.0",
        "id": asked,
        "method": "elicitation/create",
        "params": {
            "message": "What is your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    }
    client_demo.send(_answer(asked, {"action": "accept", "content": {"name": "Ada"}}))
    assert client_demo.read() == _answer(1, _text("hello, Ada"))
    client_demo.call(2, "ask", {"what": "elicit"})
    asked = client_demo.next_ask_id()
    assert client_demo.read()["id"] == asked
    client_demo.send(_answer(asked, {"action": "decline"}))
    assert client_demo.read() == _answer(2, _text("elicitation decline"))


def test_a_client_error_is_a_tool_error(client_demo: Demo) -> None:
    client_demo.call(1, "ask", {"what": "sample"})
    asked = client_demo.next_ask_id()
    assert client_demo.read()["id"] == asked
    client_demo.send(_error(asked, -1, "User rejected sampling request"))
    assert client_demo.read() == _answer(
        1, _text("the client refused: User rejected sampling request", is_error=True)
    )


def test_an_answer_written_ahead_is_taken_and_a_malformed_one_refused(client_demo: Demo) -> None:
    # A scripted client writes its answer before it has read the request.
    asked = client_demo.next_ask_id()
    client_demo.call(1, "ask", {"what": "elicit"})
    client_demo.send(_answer(asked, {"action": "cancel"}))
    assert client_demo.read()["id"] == asked
    assert client_demo.read() == _answer(1, _text("elicitation cancel"))
    client_demo.call(2, "ask", {"what": "sample"})
    asked = client_demo.next_ask_id()
    assert client_demo.read()["id"] == asked
    client_demo.send(_answer(asked, {"content": "no model, no blocks"}))
    assert client_demo.read() == _answer(
        2, _text("the client's answer to sampling/createMessage did not fit it", is_error=True)
    )


def test_ask_needs_the_capability_advertised(demo: Demo) -> None:
    demo.call(1, "ask", {"what": "sample"})
    assert demo.read() == _answer(1, _text("the client did not advertise sampling", is_error=True))
    demo.call(2, "ask", {"what": "elicit"})
    assert demo.read() == _answer(
        2, _text("the client did not advertise elicitation", is_error=True)
    )
    demo.call(3, "ask", {"what": "roots"})
    assert demo.read() == _answer(3, _text("the client did not advertise roots", is_error=True))
    demo.call(4, "ask", {"what": "everything"})
    assert demo.read() == _answer(4, _text("what: one of roots, sample, elicit", is_error=True))


def test_a_cancel_while_asking_ends_the_question_without_an_answer(client_demo: Demo) -> None:
    client_demo.call(1, "ask", {"what": "roots"})
    asked = client_demo.next_ask_id()
    assert client_demo.read()["id"] == asked
    client_demo.send(_notification("notifications/cancelled", {"requestId": 1}))
    assert client_demo.read() == _notification("notifications/cancelled", {"requestId": asked})
    client_demo.send(_answer(asked, {"roots": []}))  # too late: ignored, as any response
    client_demo.request(2, "ping")
    assert client_demo.read() == _answer(2, {})


def test_stdin_ending_while_asking_stops_the_server(own_demo: Demo) -> None:
    own_demo.call(1, "ask", {"what": "roots"})
    assert own_demo.read()["id"] == own_demo.next_ask_id()
    own_demo.close_stdin()
    assert own_demo.read_line() is None  # no answer: nobody is left to read it
    assert own_demo.process.wait(timeout=READ_TIMEOUT) == 0


def test_handle_alone_has_no_client_to_ask() -> None:
    session = Session()
    handle(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"capabilities": {"roots": {}}},
        },
        session,
    )
    answer = handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "ask", "arguments": {"what": "roots"}},
        },
        session,
    )
    assert answer == _answer(1, _text("no client to ask", is_error=True))


def _initialized(version: str) -> Session:
    session = Session()
    answer_line(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"'
        + version.encode()
        + b'","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
        session,
    )
    return session


@pytest.mark.parametrize("params", [b'["x"]', b'"x"'])
def test_a_notification_with_params_of_the_wrong_type_is_not_answered(params: bytes) -> None:
    # JSON-RPC 2.0: "A Notification is a Request object without an "id" member ... The
    # Server MUST NOT reply to a Notification"; MCP basic#notifications: "The receiver
    # MUST NOT send a response." However wrong its params, it stays a notification.
    line = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":' + params + b"}"
    assert answer_line(line, _initialized("2025-06-18")) is None
    # Inside a batch too: the array holds the ping's answer alone.
    batch = b'[{"jsonrpc":"2.0","id":7,"method":"ping"},' + line + b"]"
    assert answer_line(batch, _initialized("2025-03-26")) == [_answer(7, {})]
    # A request with such params is still refused.
    request = b'{"jsonrpc":"2.0","id":8,"method":"ping","params":' + params + b"}"
    assert answer_line(request, _initialized("2025-06-18"))["error"]["code"] in (-32602, -32600)
