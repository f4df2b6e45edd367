"""Server-to-host requests through the embedder's hooks: capabilities, gating, answers."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from mcpl_host import (
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    HookContext,
    RequestError,
    Root,
    TextContent,
)

from ..driver.conftest import connected
from ..driver.peer import memory_connection

R2, R3, R4 = "2025-03-26", "2025-06-18", "2025-11-25"


async def test_initialize_advertises_only_the_hooks_given() -> None:
    async def sample(params: CreateMessageParams, context: HookContext) -> Any:
        raise AssertionError("not called")

    conn, peer = memory_connection(versions=[R3, R2], sampling=sample, roots=["file:///w"])
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake, R3)
            async with conn:
                pass
            nursery.cancel_scope.cancel()
    init = msgspec.json.decode(peer.received[0])
    assert init["params"]["protocolVersion"] == R3
    assert init["params"]["capabilities"] == {"roots": {"listChanged": True}, "sampling": {}}


async def test_roots_are_served_and_a_change_is_announced() -> None:
    with trio.fail_after(5):
        async with connected(R4, roots=[Root(uri="file:///a", name="A"), "file:///b"]) as (
            conn,
            peer,
            _n,
        ):
            await peer.send(b'{"jsonrpc":"2.0","id":"r1","method":"roots/list"}')
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","id":"r1","result":{"roots":'
                b'[{"uri":"file:///a","name":"A"},{"uri":"file:///b"}]}}'
            )
            await conn.set_roots(["file:///c"])
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}'
            )
            await peer.send(b'{"jsonrpc":"2.0","id":"r2","method":"roots/list"}')
            assert await peer.recv() == {
                "jsonrpc": "2.0",
                "id": "r2",
                "result": {"roots": [{"uri": "file:///c"}]},
            }


async def test_set_roots_without_roots_is_refused() -> None:
    with trio.fail_after(5):
        async with connected(R4) as (conn, peer, _n):
            with pytest.raises(ValueError, match="offers no roots"):
                await conn.set_roots(["file:///x"])
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"roots/list"}')
            assert (await peer.recv())["error"]["code"] == -32601
    with pytest.raises(TypeError, match="a root is a Root or a URI string"):
        memory_connection(roots=[42])


async def test_sampling_hook_gets_typed_params_and_its_answer_goes_out_in_wire_names() -> None:
    seen: list[tuple[CreateMessageParams, HookContext]] = []

    async def sample(params: CreateMessageParams, context: HookContext) -> CreateMessageResult:
        seen.append((params, context))
        return CreateMessageResult(
            role="assistant",
            content=TextContent(text="4"),
            model="tiny-1",
            stop_reason="endTurn",
        )

    request = (
        b'{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{'
        b'"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],'
        b'"maxTokens":10,"systemPrompt":"be brief","modelPreferences":'
        b'{"hints":[{"name":"tiny"}],"speedPriority":0.9}}}'
    )
    with trio.fail_after(5):
        async with connected(R4, sampling=sample, name="calc") as (_conn, peer, _n):
            await peer.send(request)
            answer = await peer.recv_line()
    assert answer == (
        b'{"jsonrpc":"2.0","id":7,"result":{"role":"assistant","content":'
        b'{"type":"text","text":"4"},"model":"tiny-1","stopReason":"endTurn"}}'
    )
    params, context = seen[0]
    assert params.max_tokens == 10
    assert params.system_prompt == "be brief"
    assert params.messages[0].content == TextContent(text="2+2?")
    assert params.model_preferences is not None
    assert params.model_preferences.speed_priority == 0.9
    assert context == HookContext(server="calc", request_id=7, protocol_version=R4)


async def test_sampling_params_that_do_not_fit_get_invalid_params() -> None:
    async def sample(params: CreateMessageParams, context: HookContext) -> Any:
        raise AssertionError("not called")

    with trio.fail_after(5):
        async with connected(R4, sampling=sample) as (_conn, peer, _n):
            await peer.send(
                b'{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":3}}'
            )
            error = (await peer.recv())["error"]
    assert error["code"] == -32602


async def test_a_hook_refusing_with_request_error_answers_that_error() -> None:
    async def sample(params: CreateMessageParams, context: HookContext) -> Any:
        raise RequestError(-1, "User rejected sampling request")

    with trio.fail_after(5):
        async with connected(R4, sampling=sample) as (_conn, peer, _n):
            await peer.send(
                b'{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage",'
                b'"params":{"messages":[],"maxTokens":1}}'
            )
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,'
                b'"message":"User rejected sampling request"}}'
            )


FORM = (
    b'{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"Name?",'
    b'"requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}'
)
URL = (
    b'{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"mode":"url",'
    b'"message":"Sign in","url":"https://example.com/auth","elicitationId":"e-1"}}'
)


async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
    if params.mode == "url":
        return ElicitResult(action="decline")
    return ElicitResult(action="accept", content={"name": "Ada"})


async def test_form_elicitation() -> None:
    with trio.fail_after(5):
        async with connected(R3, elicitation=elicit) as (_conn, peer, _n):
            await peer.send(FORM)
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"Ada"}}}'
            )
            await peer.send(
                b'{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"?"}}'
            )
            error = (await peer.recv())["error"]
            assert (error["code"], error["message"]) == (
                -32602,
                "form-mode elicitation needs requestedSchema",
            )


async def test_url_elicitation_only_when_enabled_and_on_2025_11_25() -> None:
    with trio.fail_after(5):
        async with connected(R4, elicitation=elicit, url_elicitation=True) as (_c, peer, _n):
            await peer.send(URL)
            assert (
                await peer.recv_line() == b'{"jsonrpc":"2.0","id":2,"result":{"action":"decline"}}'
            )
            await peer.send(
                b'{"jsonrpc":"2.0","id":4,"method":"elicitation/create",'
                b'"params":{"mode":"url","message":"m"}}'
            )
            assert (await peer.recv())["error"]["message"] == (
                "URL-mode elicitation needs url and elicitationId"
            )
        # not enabled
        async with connected(R4, elicitation=elicit) as (_c, peer, _n):
            await peer.send(URL)
            error = (await peer.recv())["error"]
            assert error == {
                "code": -32602,
                "message": "URL-mode elicitation is not supported by this host",
            }
        # enabled, but the server chose 2025-06-18, which has no URL mode
        async with connected(R3, elicitation=elicit, url_elicitation=True) as (_c, peer, _n):
            await peer.send(URL)
            assert (await peer.recv())["error"]["code"] == -32602


async def test_elicitation_is_not_served_before_2025_06_18() -> None:
    with trio.fail_after(5):
        async with connected(R2, elicitation=elicit) as (conn, peer, _n):
            assert conn.client_capabilities == {"elicitation": {"form": {}}}  # offered R4
            await peer.send(FORM)
            assert (await peer.recv())["error"]["code"] == -32601
