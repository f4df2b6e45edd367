"""A host that sends several requests at once, against a script, in every mode.

The host side is a real ``Connection`` issuing requests from tasks of one nursery, so
the order in which they reach the scripted server is whatever trio's scheduler (which
shuffles runnable tasks) makes it. Each test's own deadline is short: a request left
unanswered would otherwise wait for the host's 60 s request timeout.
Real processes and sockets run in real time: no autojump clock here.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from mcpl_host import Connection, RequestError, RequestTimeout
from mcpl_host.testing import MODES, Expected, Mode, Script, serve

DEADLINE = 8  # real seconds, the scripted server's start included (stdio: a subprocess)


def _line(message: Any) -> bytes:
    return msgspec.json.encode(message)


async def _outcome(conn: Connection, method: str, params: Any = None, **kw: Any) -> Any:
    """The result, or ``(code, message, data)`` for a JSON-RPC error. ``params`` None:
    none sent (``request`` would write ``"params": null``)."""
    try:
        if params is None:
            return await conn.request(method, **kw)
        return await conn.request(method, params, **kw)
    except RequestError as error:
        return (error.code, error.error_message, error.data)


async def _all_at_once(conn: Connection, calls: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    """Each call from its own task of one nursery; their outcomes by name."""
    outcomes: dict[str, Any] = {}

    async def one(name: str, method: str, params: Any) -> None:
        outcomes[name] = await _outcome(conn, method, params)

    async with trio.open_nursery() as nursery:
        for name, (method, params) in calls.items():
            nursery.start_soon(one, name, method, params)
    return outcomes


def _request_of(record: Any, method: str) -> Any:
    (request,) = record.requests(method)
    return request


@pytest.mark.parametrize("mode", MODES)
async def test_an_unplanned_request_is_answered_method_not_found(mode: Mode) -> None:
    # The script plans for tools/list only. prompts/list arrives before or after it (the
    # scheduler decides): while the script waits for tools/list, or after its last step.
    script = Script(timeout=5).handshake().expect("tools/list").reply({"tools": []})
    with trio.fail_after(DEADLINE):
        async with serve(script, mode) as server, Connection(server.target) as conn:
            outcomes = await _all_at_once(
                conn, {"tools": ("tools/list", None), "prompts": ("prompts/list", None)}
            )
            await server.wait_done()
            # After the last step, on the connection still open:
            late = await _outcome(conn, "resources/list", {"cursor": "x"})
    assert outcomes == {
        "tools": {"tools": []},
        "prompts": (-32601, "Method not found: prompts/list", None),
    }
    assert late == (-32601, "Method not found: resources/list", None)

    record = server.record
    prompts = _request_of(record, "prompts/list")
    late_request = _request_of(record, "resources/list")
    assert _line(late_request) == (
        b'{"jsonrpc":"2.0","id":5,"method":"resources/list","params":{"cursor":"x"}}'
    )
    assert record.unplanned() == [prompts, late_request]
    answers = [entry.unplanned_answer for entry in record if entry.unplanned_answer is not None]
    assert answers == [
        _line(
            {
                "jsonrpc": "2.0",
                "id": prompts["id"],
                "error": {"code": -32601, "message": "Method not found: prompts/list"},
            }
        ),
        b'{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found: resources/list"}}',
    ]
    assert "request 'prompts/list' (id " in str(record)
    assert ", answered as unplanned" in str(record)


@pytest.mark.parametrize("mode", MODES)
async def test_the_unplanned_answer_is_chosen_by_the_script(mode: Mode) -> None:
    script = (
        Script(timeout=5)
        .handshake()
        .on_unplanned(result={"planned": False})
        .expect("tools/list")
        .reply({"tools": []})
        .on_unplanned(error=-32000, message="not now", data={"retry": True})
        .expect("tools/call")
        .reply({"content": []})
        .ignore_unplanned()
        .expect_close()
    )
    with trio.fail_after(DEADLINE):
        async with serve(script, mode) as server:
            async with Connection(server.target) as conn:
                # Each unplanned request waits for its answer before the next planned one
                # goes, so each meets the step it is meant to.
                assert await _outcome(conn, "prompts/list") == {"planned": False}
                assert await _outcome(conn, "tools/list") == {"tools": []}
                assert await _outcome(conn, "prompts/get", {"name": "p"}) == (
                    -32000,
                    "not now",
                    {"retry": True},
                )
                assert await _outcome(conn, "tools/call", {"name": "t"}) == {"content": []}
                with pytest.raises(RequestTimeout):  # left unanswered, as asked
                    await conn.request("resources/list", timeout=0.3)
            await server.wait_done()

    record = server.record
    assert [entry.unplanned_answer for entry in record if entry.unplanned_answer] == [
        b'{"jsonrpc":"2.0","id":3,"result":{"planned":false}}',
        b'{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"not now","data":{"retry":true}}}',
    ]
    assert [m["method"] for m in record.unplanned()] == ["prompts/list", "prompts/get"]
    assert record.lines()[-2:] == [
        b'{"jsonrpc":"2.0","id":7,"method":"resources/list"}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,'
        b'"reason":"timeout"}}',
    ]


def _call(name: str) -> dict[str, Any]:
    return {"name": name, "arguments": {}}


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


@pytest.mark.parametrize("mode", MODES)
async def test_concurrent_requests_are_expected_in_any_order(mode: Mode) -> None:
    # Three calls of the same method, told apart by their params, in whatever order
    # they arrive; each answered under its own label, the last to be expected first.
    script = (
        Script(timeout=5)
        .handshake()
        .expect_all(
            Expected("tools/call", _call("a"), label="a"),
            Expected("tools/call", _call("b"), label="b"),
            Expected("tools/call", _call("c"), label="c"),
            "tools/list",
        )
        .reply(_text("C"), to="c")
        .reply({"tools": []}, to="tools/list")
        .reply(_text("B"), to="b")
        .reply_error(-32602, "A is broken", to="a")
        .expect_close()
    )
    with trio.fail_after(DEADLINE):
        async with serve(script, mode) as server:
            async with Connection(server.target) as conn:
                outcomes = await _all_at_once(
                    conn,
                    {
                        "a": ("tools/call", _call("a")),
                        "b": ("tools/call", _call("b")),
                        "c": ("tools/call", _call("c")),
                        "list": ("tools/list", None),
                    },
                )
            await server.wait_done()
    assert outcomes == {
        "a": (-32602, "A is broken", None),
        "b": _text("B"),
        "c": _text("C"),
        "list": {"tools": []},
    }
    record = server.record
    assert record.unplanned() == []
    # Whatever order the four came in, each is on the wire as the host wrote it.
    ids = {
        message["params"]["name"] if "params" in message else "list": message["id"]
        for message in record.requests()[2:]  # after server/discover and initialize
    }
    assert sorted(ids.values()) == [3, 4, 5, 6]
    expected = [
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{}}}'
        % (ids[name], name.encode())
        for name in "abc"
    ] + [b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}' % ids["list"]]
    assert sorted(record.lines()[3:]) == sorted(expected)


@pytest.mark.parametrize("mode", MODES)
async def test_a_reply_to_a_chosen_earlier_request(mode: Mode) -> None:
    script = (
        Script(timeout=5)
        .handshake()
        .expect("tools/call", label="slow")
        .expect("tools/list")
        .reply({"tools": []})  # the latest: tools/list
        .reply(_text("done"), to="slow")
        .expect_close()
    )
    with trio.fail_after(DEADLINE):
        async with serve(script, mode) as server:
            async with Connection(server.target) as conn:
                outcomes = await _all_at_once(
                    conn, {"slow": ("tools/call", _call("slow")), "list": ("tools/list", None)}
                )
            await server.wait_done()
    assert outcomes == {"slow": _text("done"), "list": {"tools": []}}
    record = server.record
    assert record.unplanned() == []
    slow = _request_of(record, "tools/call")
    assert _line(slow) == _line(
        {"jsonrpc": "2.0", "id": slow["id"], "method": "tools/call", "params": _call("slow")}
    )
    assert slow["id"] in (3, 4)
