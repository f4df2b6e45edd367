"""MRTR over a scripted 2026-07-28 peer: the retry's bytes, the hooks, the bounds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcpl_host import (
    ConfigurationError,
    Connection,
    ElicitParams,
    ElicitResult,
    HookContext,
    InputRequestError,
    LimitExceeded,
    ProtocolError,
    ResourceNotFound,
)

from ..driver.peer import Peer, memory_connection

ASK = (
    b'{"resultType":"input_required","requestState":"st\\u00e9te",'
    b'"inputRequests":{"who":{"method":"elicitation/create","params":'
    b'{"message":"Name?","requestedSchema":{"type":"object"}}},"where":{"method":"roots/list"}}}'
)


@asynccontextmanager
async def stateless(**options: Any) -> AsyncIterator[tuple[Connection, Peer]]:
    conn, peer = memory_connection(**options)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.discover)
        async with conn:
            yield conn, peer
        nursery.cancel_scope.cancel()


async def reply(peer: Peer, result: bytes) -> dict[str, Any]:
    request = await peer.recv()
    await peer.send(b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (request["id"], result))
    return dict(request)


def without_meta(request: dict[str, Any]) -> dict[str, Any]:
    params = dict(request["params"])
    params.pop("_meta")
    return params


async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": context.input_key})


async def test_input_is_answered_by_the_hooks_and_the_retry_has_a_new_id_and_the_state() -> None:
    with trio.fail_after(10):
        async with (
            stateless(elicitation=elicit, roots=["file:///w"]) as (conn, peer),
            trio.open_nursery() as nursery,
        ):
            got: list[Any] = []

            async def call() -> None:
                got.append(await conn.call_tool("t", {"a": 1}, validate_output=False))

            nursery.start_soon(call)
            first = await reply(peer, ASK)
            retry = await reply(peer, b'{"content":[{"type":"text","text":"ok"}]}')
    assert retry["id"] != first["id"]
    assert without_meta(first) == {"name": "t", "arguments": {"a": 1}}
    assert without_meta(retry) == {
        "name": "t",
        "arguments": {"a": 1},
        "inputResponses": {
            "who": {"action": "accept", "content": {"name": "who"}},
            "where": {"roots": [{"uri": "file:///w"}]},
        },
        "requestState": "st\u00e9te",
    }
    assert b'"requestState":"st\\u00e9te"' in peer.received[-1]  # byte for byte
    assert got[0].text == "ok"


async def test_no_state_means_none_is_sent_and_responses_apply_to_one_retry_only() -> None:
    ask = (
        b'{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list","params":{}}}}'
    )
    with trio.fail_after(10):
        async with stateless(roots=["file:///w"]) as (conn, peer), trio.open_nursery() as nursery:
            nursery.start_soon(conn.get_prompt, "p")
            await reply(peer, ask)
            second = await reply(peer, b'{"resultType":"input_required","requestState":"x"}')
            third = await reply(peer, b'{"resultType":"complete","messages":[]}')
    assert without_meta(second) == {
        "name": "p",
        "inputResponses": {"r": {"roots": [{"uri": "file:///w"}]}},
    }
    assert without_meta(third) == {"name": "p", "requestState": "x"}


async def test_rounds_are_bounded() -> None:
    with trio.fail_after(10):
        async with stateless(max_input_rounds=2) as (conn, peer), trio.open_nursery() as nursery:
            errors: list[BaseException] = []

            async def call() -> None:
                try:
                    await conn.read_resource("demo://x")
                except LimitExceeded as exc:
                    errors.append(exc)

            nursery.start_soon(call)
            for _ in range(3):
                await reply(peer, b'{"resultType":"input_required","requestState":"s"}')
    assert [(e.limit, e.value) for e in errors] == [("max_input_rounds", 2)]  # type: ignore[attr-defined]
    assert len(peer.received) == 4  # discover, the request, two retries


async def test_inputs_per_round_are_bounded() -> None:
    many = b",".join(b'"k%d":{"method":"roots/list"}' % i for i in range(3))
    with trio.fail_after(10):
        async with (
            stateless(roots=[], max_input_requests=2) as (conn, peer),
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(
                reply, peer, b'{"resultType":"input_required","inputRequests":{%s}}' % many
            )
            with pytest.raises(LimitExceeded, match="max_input_requests"):
                await conn.call_tool("t")


@pytest.mark.parametrize(
    ("method", "why"),
    [("sampling/createMessage", "no hook serves it"), ("tools/list", "no result may ask for it")],
)
async def test_input_the_host_cannot_give_ends_the_call(method: str, why: str) -> None:
    ask = b'{"resultType":"input_required","inputRequests":{"k":{"method":"%s"}}}' % method.encode()
    with trio.fail_after(10):
        async with stateless(roots=[]) as (conn, peer), trio.open_nursery() as nursery:
            nursery.start_soon(reply, peer, ask)
            with pytest.raises(InputRequestError, match=why) as caught:
                await conn.call_tool("t")
    assert (caught.value.key, caught.value.method) == ("k", method)
    assert len(peer.received) == 2  # nothing sent again


async def test_an_unknown_result_type_and_input_required_on_a_list_are_invalid() -> None:
    with trio.fail_after(10):
        async with stateless() as (conn, peer), trio.open_nursery() as nursery:
            nursery.start_soon(reply, peer, b'{"resultType":"later","content":[]}')
            with pytest.raises(ProtocolError, match="unknown resultType 'later'"):
                await conn.call_tool("t")
            nursery.start_soon(reply, peer, b'{"resultType":"input_required","requestState":"s"}')
            with pytest.raises(ProtocolError, match="not allowed here"):
                await conn.list_tools()


@pytest.mark.parametrize("code", [-32602, -32002])
async def test_resource_not_found_by_either_code(code: int) -> None:
    with trio.fail_after(10):
        async with stateless() as (conn, peer), trio.open_nursery() as nursery:

            async def refuse() -> None:
                request = await peer.recv()
                await peer.send(
                    {
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "error": {"code": code, "message": "no"},
                    }
                )

            nursery.start_soon(refuse)
            with pytest.raises(ResourceNotFound) as caught:
                await conn.read_resource("demo://gone")
    assert (caught.value.code, caught.value.uri) == (code, "demo://gone")


def test_bounds_below_one_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="max_input_rounds"):
        memory_connection(max_input_rounds=0)
