"""The total bounds of one listing (``max_list_items``, ``max_list_bytes``): a server that
pages forever or sends huge pages fails the listing with LimitExceeded, never a partial
or cached list."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from mcpl_host import ConfigurationError, Connection, LimitExceeded, StdioTarget
from mcpl_host.client.pagination import (
    DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_LIST_ITEMS,
    collect,
)

from ..driver.conftest import connected
from .helpers import Answers

# (method, result key, the call that lists it, one item of the kind)
KINDS = [
    ("tools/list", "tools", "list_tools", {"name": "t", "inputSchema": {"type": "object"}}),
    ("resources/list", "resources", "list_resources", {"uri": "file:///r", "name": "r"}),
    (
        "resources/templates/list",
        "resourceTemplates",
        "list_resource_templates",
        {"uriTemplate": "file:///{x}", "name": "t"},
    ),
    ("prompts/list", "prompts", "list_prompts", {"name": "p"}),
]


def forever(key: str, item: Any, per_page: int) -> Callable[[Any], Any]:
    """Pages without end: each page ``per_page`` items and a new cursor."""

    def page(request: Any) -> Any:
        cursor = (request.get("params") or {}).get("cursor")
        number = 0 if cursor is None else int(cursor)
        return {key: [item] * per_page, "nextCursor": str(number + 1)}

    return page


def lister(conn: Connection, call: str) -> Callable[[], Awaitable[list[Any]]]:
    method: Callable[[], Awaitable[list[Any]]] = getattr(conn, call)
    return method


@pytest.mark.parametrize(("method", "key", "call", "item"), KINDS)
async def test_a_server_paging_forever_passes_max_list_items(
    method: str, key: str, call: str, item: Any
) -> None:
    with trio.fail_after(5):
        async with connected(max_list_items=10) as (conn, peer, nursery):
            server = Answers(peer, {method: forever(key, item, 3)})
            nursery.start_soon(server.run)
            with pytest.raises(LimitExceeded) as caught:
                await lister(conn, call)()
            assert (caught.value.limit, caught.value.value) == ("max_list_items", 10)
            assert caught.value.server == conn.name
            assert "max_list_items" in str(caught.value)
            # 3, 6, 9 items, then 12: the fourth page is the last one asked for.
            assert len(server.requests(method)) == 4
            # Nothing was cached: the next call asks again.
            server.table[method] = {key: [item]}
            assert len(await lister(conn, call)()) == 1
            assert len(server.requests(method)) == 5


async def test_exactly_max_list_items_is_a_whole_list() -> None:
    tool = KINDS[0][3]
    pages = {
        None: {"tools": [tool] * 5, "nextCursor": "2"},
        "2": {"tools": [tool] * 5},
    }
    with trio.fail_after(5):
        async with connected(max_list_items=10) as (conn, peer, nursery):
            server = Answers(
                peer, {"tools/list": lambda r: pages[(r.get("params") or {}).get("cursor")]}
            )
            nursery.start_soon(server.run)
            assert len(await conn.list_tools()) == 10


async def test_one_page_with_more_items_than_allowed_is_refused_whole() -> None:
    with trio.fail_after(5):
        async with connected(max_list_items=1000) as (conn, peer, nursery):
            # Tiny items: the cheapest way to make the host hold many objects.
            server = Answers(peer, {"tools/list": {"tools": [{"name": "t"}] * 5000}})
            nursery.start_soon(server.run)
            with pytest.raises(LimitExceeded) as caught:
                await conn.list_tools()
            assert (caught.value.limit, caught.value.value) == ("max_list_items", 1000)


@pytest.mark.parametrize(("method", "key", "call", "item"), KINDS)
async def test_pages_past_max_list_bytes_fail_the_listing(
    method: str, key: str, call: str, item: Any
) -> None:
    page = forever(key, item, 20)({})
    size = len(msgspec.json.encode(page))
    with trio.fail_after(5):
        # Two pages fit, a third does not.
        async with connected(max_list_bytes=3 * size - 1) as (conn, peer, nursery):
            server = Answers(peer, {method: forever(key, item, 20)})
            nursery.start_soon(server.run)
            with pytest.raises(LimitExceeded) as caught:
                await lister(conn, call)()
            assert (caught.value.limit, caught.value.value) == ("max_list_bytes", 3 * size - 1)
            assert len(server.requests(method)) == 3
            server.table[method] = {key: [item]}
            assert len(await lister(conn, call)()) == 1


async def test_exactly_max_list_bytes_is_a_whole_list() -> None:
    page = {"tools": [{"name": "t"}] * 10}
    with trio.fail_after(5):
        async with connected(max_list_bytes=len(msgspec.json.encode(page))) as (conn, peer, n):
            server = Answers(peer, {"tools/list": page})
            n.start_soon(server.run)
            assert len(await conn.list_tools()) == 10


async def test_the_plain_collect_keeps_the_connections_bounds() -> None:
    with trio.fail_after(5):
        async with connected(max_list_items=4) as (conn, peer, nursery):
            server = Answers(peer, {"tools/list": forever("tools", {"name": "t"}, 3)})
            nursery.start_soon(server.run)
            with pytest.raises(LimitExceeded) as caught:
                await collect(conn, "tools/list", "tools")
            assert caught.value.limit == "max_list_items"
            assert len(server.requests("tools/list")) == 2


def test_the_defaults_and_the_options() -> None:
    conn = Connection(StdioTarget(["true"]))
    assert (conn.max_list_items, conn.max_list_bytes) == (100_000, 32 * 1024 * 1024)
    assert (DEFAULT_MAX_LIST_ITEMS, DEFAULT_MAX_LIST_BYTES) == (100_000, 32 * 1024 * 1024)
    conn = Connection(StdioTarget(["true"]), max_list_items=7, max_list_bytes=9)
    assert (conn.max_list_items, conn.max_list_bytes) == (7, 9)


@pytest.mark.parametrize("option", ["max_list_items", "max_list_bytes"])
def test_a_bound_below_one_is_a_configuration_error(option: str) -> None:
    with pytest.raises(ConfigurationError, match=option):
        Connection(StdioTarget(["true"]), **{option: 0})


FOREVER_SERVER = """
import json, sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()

for line in sys.stdin:
    request = json.loads(line)
    if request.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "forever", "version": "0"}}})
    elif request.get("method") == "server/discover":  # a handshake-era server refuses it
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32601, "message": "Method not found"}})
    elif request.get("method") == "tools/list":
        cursor = int((request.get("params") or {}).get("cursor", "0"))
        tools = [{"name": f"t{cursor}_{i}"} for i in range(5000)]
        send({"jsonrpc": "2.0", "id": request["id"],
              "result": {"tools": tools, "nextCursor": str(cursor + 1)}})
"""


async def test_a_real_server_paging_forever_stops_at_the_default_bound(tmp_path: Path) -> None:
    script = tmp_path / "forever.py"
    script.write_text(textwrap.dedent(FOREVER_SERVER))
    with trio.fail_after(20):
        async with Connection(StdioTarget([sys.executable, str(script)])) as conn:
            with pytest.raises(LimitExceeded) as caught:
                await conn.list_tools()
    assert (caught.value.limit, caught.value.value) == ("max_list_items", DEFAULT_MAX_LIST_ITEMS)
