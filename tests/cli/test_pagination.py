"""mcpl_host.client.pagination.collect against scripted servers (memory mode, autojump clock)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from mcpl_host import Connection, ProtocolError, RequestError
from mcpl_host.client.pagination import collect
from mcpl_host.testing import Script, serve


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}}


async def _collect(script: Script, **kwargs: Any) -> tuple[list[Any], Script, Any]:
    with trio.fail_after(5):
        async with serve(script) as server:
            async with Connection(server.target) as conn:
                items = await collect(conn, "tools/list", "tools", **kwargs)
            await server.wait_done()
    return items, script, server.record


async def test_follows_cursors_to_the_end_in_order(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake()
    script.expect("tools/list").reply({"tools": [_tool("a"), _tool("b")], "nextCursor": "p2"})
    script.expect("tools/list", {"cursor": "p2"}).reply({"tools": [], "nextCursor": "p3"})
    script.expect("tools/list", {"cursor": "p3"}).reply({"tools": [_tool("c")]})
    items, _, record = await _collect(script)
    assert [item["name"] for item in items] == ["a", "b", "c"]
    first = record.requests("tools/list")[0]
    assert "params" not in first  # the first page is asked for without a cursor


async def test_an_empty_string_is_a_cursor(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake()
    script.expect("tools/list").reply({"tools": [_tool("a")], "nextCursor": ""})
    script.expect("tools/list", {"cursor": ""}).reply({"tools": [_tool("b")], "nextCursor": None})
    items, _, _ = await _collect(script)
    assert [item["name"] for item in items] == ["a", "b"]


async def test_a_repeated_cursor_is_a_protocol_error(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake()
    script.expect("tools/list").reply({"tools": [_tool("a")], "nextCursor": "x"})
    script.expect("tools/list", {"cursor": "x"}).reply({"tools": [_tool("b")], "nextCursor": "y"})
    script.expect("tools/list", {"cursor": "y"}).reply({"tools": [], "nextCursor": "x"})
    with pytest.raises(ProtocolError, match=r"page 3 of tools/list repeats the cursor 'x'"):
        await _collect(script)


async def test_more_pages_than_allowed_is_a_protocol_error(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().handshake()
    script.expect("tools/list").reply({"tools": [_tool("a")], "nextCursor": "1"})
    script.expect("tools/list", {"cursor": "1"}).reply({"tools": [_tool("b")], "nextCursor": "2"})
    with pytest.raises(ProtocolError, match="more than 2 pages"):
        await _collect(script, max_pages=2)


async def test_exactly_max_pages_is_fine(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake()
    script.expect("tools/list").reply({"tools": [_tool("a")], "nextCursor": "1"})
    script.expect("tools/list", {"cursor": "1"}).reply({"tools": [_tool("b")]})
    items, _, _ = await _collect(script, max_pages=2)
    assert len(items) == 2


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ({"items": []}, "page 1 of tools/list has no 'tools' list"),
        ({"tools": {"a": 1}}, "page 1 of tools/list has no 'tools' list"),
        ({"tools": [], "nextCursor": 7}, "nextCursor must be a string, not a number"),
        # Every list item is an object: only objects are counted before they are kept.
        ({"tools": [_tool("a"), 5]}, "page 1 of tools/list has no 'tools' list of objects"),
        ({"tools": [[_tool("a")]]}, "page 1 of tools/list has no 'tools' list of objects"),
        ({"tools": None}, "page 1 of tools/list has no 'tools' list"),
        ([1, 2], "page 1 of tools/list has no 'tools' list"),
    ],
)
async def test_malformed_pages_are_protocol_errors(
    autojump_clock: trio.abc.Clock, page: Any, message: str
) -> None:
    script = Script().handshake()
    script.expect("tools/list").reply(page)
    with pytest.raises(ProtocolError, match=message):
        await _collect(script)


async def test_an_error_answer_is_raised_not_a_partial_list(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().handshake()
    script.expect("tools/list").reply({"tools": [_tool("a")], "nextCursor": "2"})
    script.expect("tools/list", {"cursor": "2"}).reply_error(-32602, "Invalid cursor")
    with pytest.raises(RequestError) as error:
        await _collect(script)
    assert error.value.code == -32602


async def test_max_pages_must_be_positive(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake()
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target) as conn:
            with pytest.raises(ValueError, match="at least 1"):
                await collect(conn, "tools/list", "tools", max_pages=0)
