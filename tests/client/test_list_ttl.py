"""2026-07-28 lists are reused only as long as their ``ttlMs`` says (absent: not at all),
counted from when the read began and bounded by the shortest page; the handshake era
keeps a list until it changes. The output-schema check keeps the last tool list."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio

from mcpl_host import Connection, OutputSchemaError
from mcpl_host.protocol.results import MAX_TTL_SECONDS, fresh_for

from ..driver.peer import Peer, memory_connection

TOOL = (
    b'{"name":"t","inputSchema":{"type":"object"},'
    b'"outputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}}'
)


@asynccontextmanager
async def stateless() -> AsyncIterator[tuple[Connection, Peer]]:
    conn, peer = memory_connection()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.discover)
        async with conn:
            yield conn, peer
        nursery.cancel_scope.cancel()


async def serve_lists(peer: Peer, pages: list[bytes], seen: list[dict[str, Any]]) -> None:
    """Answer each tools/list page in turn (then the first again), and tools/call."""
    page = 0
    while True:
        request = await peer.recv()
        seen.append(request)
        if request["method"] == "tools/call":
            result = b'{"content":[],"structuredContent":{"n":"not a number"}}'
        else:
            result = pages[page % len(pages)]
            page += 1
        await peer.send(b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (request["id"], result))


def listings(seen: list[dict[str, Any]]) -> int:
    return sum(1 for request in seen if request["method"] == "tools/list")


@pytest.mark.parametrize(
    ("ttl", "reused"),
    [(b"", False), (b',"ttlMs":0', False), (b',"ttlMs":-5', False), (b',"ttlMs":5000', True)],
)
async def test_a_list_is_reused_only_within_its_ttl(
    ttl: bytes, reused: bool, autojump_clock: trio.abc.Clock
) -> None:
    seen: list[dict[str, Any]] = []
    page = b'{"resultType":"complete","tools":[' + TOOL + b"]" + ttl + b"}"
    with trio.fail_after(60):
        async with stateless() as (conn, peer), trio.open_nursery() as nursery:
            nursery.start_soon(serve_lists, peer, [page], seen)
            await conn.list_tools()
            await trio.sleep(4.9)
            await conn.list_tools()
            assert listings(seen) == (1 if reused else 2)
            await trio.sleep(0.2)  # past 5 s since the first read began
            await conn.list_tools()
            assert listings(seen) == (2 if reused else 3)
            nursery.cancel_scope.cancel()


async def test_the_shortest_page_bounds_the_whole_list(autojump_clock: trio.abc.Clock) -> None:
    seen: list[dict[str, Any]] = []
    pages = [
        b'{"tools":[' + TOOL + b'],"nextCursor":"2","ttlMs":60000}',
        b'{"tools":[],"ttlMs":1000}',
    ]
    with trio.fail_after(60):
        async with stateless() as (conn, peer), trio.open_nursery() as nursery:
            nursery.start_soon(serve_lists, peer, pages, seen)
            await conn.list_tools()
            await conn.list_tools()
            assert listings(seen) == 2  # two pages, then reused
            await trio.sleep(1.0)
            await conn.list_tools()
            assert listings(seen) == 4
            nursery.cancel_scope.cancel()


async def test_a_stale_tool_list_still_checks_output_without_listing_again(
    autojump_clock: trio.abc.Clock,
) -> None:
    # ttlMs absent: the list is never reused, but call_tool does not list the tools
    # before every call to find the schema it checks against.
    seen: list[dict[str, Any]] = []
    page = b'{"tools":[' + TOOL + b"]}"
    with trio.fail_after(60):
        async with stateless() as (conn, peer), trio.open_nursery() as nursery:
            nursery.start_soon(serve_lists, peer, [page], seen)
            await conn.list_tools()
            for _ in range(3):
                with pytest.raises(OutputSchemaError):
                    await conn.call_tool("t", {})
            assert [request["method"] for request in seen] == ["tools/list"] + ["tools/call"] * 3
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        (b"{}", 0.0),
        (b'{"ttlMs":1500}', 1.5),
        (b'{"ttlMs":2.5}', 0.0025),
        (b'{"ttlMs":true}', 0.0),
        (b'{"ttlMs":"60000"}', 0.0),
        (b'{"ttlMs":1e30}', MAX_TTL_SECONDS),
        (b"[1]", 0.0),
        (b"not json", 0.0),
    ],
)
def test_fresh_for(raw: bytes, seconds: float) -> None:
    assert fresh_for(msgspec.Raw(raw)) == pytest.approx(seconds)
