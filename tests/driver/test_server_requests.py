"""Inbound: the server's requests, notifications, batches and stray responses."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import ElicitParams, HookContext, ListChanged, RequestError, ServerRequest
from mcpl_host.events import Event

from .conftest import connected

CANARY = "canary-77aa88bb99"


@pytest.mark.parametrize(
    ("id_token", "answer_id"), [(b"5", b"5"), (b'"s"', b'"s"'), (b"null", b"null")]
)
async def test_ping_answered_with_its_own_id(id_token: bytes, answer_id: bytes) -> None:
    with trio.fail_after(5):
        async with connected() as (_conn, peer, _nursery):
            await peer.send(b'{"jsonrpc":"2.0","method":"ping","id":' + id_token + b"}")
            assert (
                await peer.recv_line() == b'{"jsonrpc":"2.0","id":' + answer_id + b',"result":{}}'
            )


async def test_unknown_method_gets_32601() -> None:
    with trio.fail_after(5):
        async with connected() as (_conn, peer, _nursery):
            await peer.send(b'{"jsonrpc":"2.0","id":null,"method":"scope/elevate"}')
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","id":null,"error":{"code":-32601,'
                b'"message":"Method not found: scope/elevate"}}'
            )


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        (
            b'{"jsonrpc":"2.0","id":{"nested":[1]},"method":"ping"}',
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: '
            b'the id must be a string, a number or null, not an object"}}',
        ),
        (
            b'{"jsonrpc":"2.0","id":7,"method":3}',
            b'{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request: '
            b'the method must be a string, not a number"}}',
        ),
        (
            b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}',
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: '
            b'the method must be a string, not a number"}}',
        ),
        (
            b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: '
            b"a number id must be an integer within \xc2\xb1(2^53\xe2\x88\x921), not a number "
            b'written with a fraction or an exponent"}}',
        ),
    ],
)
async def test_invalid_requests_answered_once_never_dispatched(line: bytes, answer: bytes) -> None:
    called: list[Any] = []

    async def handler(request: ServerRequest) -> Any:
        called.append(request)
        return {}

    with trio.fail_after(5):
        async with connected(handlers={"ping": handler}) as (_conn, peer, _nursery):
            await peer.send(line)
            assert await peer.recv_line() == answer
            await peer.send(b'{"jsonrpc":"2.0","id":"after","method":"x/unknown"}')
            assert b'"id":"after"' in await peer.recv_line()  # nothing else came first
    assert called == []


async def test_a_handler_error_without_a_code_is_answered_32603() -> None:
    # A RequestError re-raised from another server may carry no code (None); the answer
    # on the wire must still have an integer one.
    async def relays(request: ServerRequest) -> Any:
        raise RequestError(None, "upstream failed")

    with trio.fail_after(5):
        async with connected(handlers={"a/relay": relays}) as (_conn, peer, _nursery):
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"a/relay"}')
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"upstream failed"}}'
            )


async def test_handler_result_error_and_failure() -> None:
    async def echo(request: ServerRequest) -> Any:
        return {"params": msgspec.json.decode(request.params or b"null")}

    async def refuses(request: ServerRequest) -> Any:
        raise RequestError(-32002, "not allowed", {"capability": "x"})

    async def crashes(request: ServerRequest) -> Any:
        raise RuntimeError(f"bug with {CANARY}")

    async def unencodable(request: ServerRequest) -> Any:
        return {"x": object()}

    handlers = {"a/echo": echo, "a/refuse": refuses, "a/crash": crashes, "a/bad": unencodable}
    with capture_logs() as logs, trio.fail_after(5):
        async with connected(handlers=handlers, secrets=(CANARY,)) as (_conn, peer, _nursery):
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"a/echo","params":{"k":[1]}}')
            assert (
                await peer.recv_line() == b'{"jsonrpc":"2.0","id":1,"result":{"params":{"k":[1]}}}'
            )
            await peer.send(b'{"jsonrpc":"2.0","id":2,"method":"a/refuse"}')
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"not allowed",'
                b'"data":{"capability":"x"}}}'
            )
            await peer.send(b'{"jsonrpc":"2.0","id":3,"method":"a/crash"}')
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error"}}'
            )
            await peer.send(b'{"jsonrpc":"2.0","id":4,"method":"a/bad"}')
            assert await peer.recv_line() == (
                b'{"jsonrpc":"2.0","id":4,"error":{"code":-32603,'
                b'"message":"Internal error: the host\'s result could not be encoded"}}'
            )
    assert CANARY not in repr(logs)
    assert any(e["event"] == "handler failed" for e in logs)


async def test_a_handler_is_told_which_server_asks() -> None:
    # One handler may serve many connections (a manager's): the request names its own.
    async def who(request: ServerRequest) -> Any:
        return {"server": request.server}

    with trio.fail_after(5):
        async with connected(handlers={"a/who": who}, name="alpha") as (_conn, peer, _nursery):
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"a/who"}')
            assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":1,"result":{"server":"alpha"}}'


async def test_handler_that_answers_then_fails_sends_one_answer() -> None:
    async def answers_then_fails(request: ServerRequest) -> Any:
        await request.responder.respond({"ok": True})
        raise RuntimeError("after the answer")

    with capture_logs() as logs, trio.fail_after(5):
        async with connected(handlers={"a/x": answers_then_fails}) as (_conn, peer, _nursery):
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"a/x"}')
            assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'
            await peer.send(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
            assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":2,"result":{}}'
    assert any("no second answer" in e["event"] for e in logs)


async def test_a_second_answer_through_the_responder_is_refused_and_never_written() -> None:
    returned: list[bool] = []

    async def answers_three_times(request: ServerRequest) -> Any:
        returned.append(await request.responder.respond({"n": 1}))
        returned.append(await request.responder.respond({"n": 2}))
        returned.append(await request.responder.error(-32000, "and an error"))
        return {"n": 3}  # the handler's result: already answered, so not sent either

    with capture_logs() as logs, trio.fail_after(5):
        async with connected(handlers={"a/x": answers_three_times}) as (_conn, peer, _nursery):
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"a/x"}')
            assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":1,"result":{"n":1}}'
            await peer.send(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
            # The next line is the ping's answer: nothing more was written for id 1.
            assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":2,"result":{}}'
    assert returned == [True, False, False]
    assert [e["event"] for e in logs if e["event"] == "second answer refused"] == [
        "second answer refused",
        "second answer refused",
    ]


async def test_slow_handler_does_not_hold_up_others_and_cancel_stops_it() -> None:
    release = trio.Event()
    cancelled = trio.Event()

    async def slow(request: ServerRequest) -> Any:
        try:
            await release.wait()
        except trio.Cancelled:
            cancelled.set()
            raise
        return {}

    with trio.fail_after(5):
        async with connected(handlers={"a/slow": slow}) as (_conn, peer, _nursery):
            await peer.send(b'{"jsonrpc":"2.0","id":"s1","method":"a/slow"}')
            await peer.send(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
            assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":2,"result":{}}'
            await peer.send(
                b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                b'"params":{"requestId":"s1","reason":"changed my mind"}}'
            )
            await cancelled.wait()
            await peer.send(b'{"jsonrpc":"2.0","id":3,"method":"ping"}')
            # no answer for s1 came before this one
            assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":3,"result":{}}'


async def test_bounded_number_of_server_requests_in_flight() -> None:
    release = trio.Event()

    async def slow(request: ServerRequest) -> Any:
        await release.wait()
        return {"id": request.id}

    with trio.fail_after(5):
        async with connected(handlers={"a/slow": slow}, max_server_requests=2) as (
            _conn,
            peer,
            _nursery,
        ):
            for i in range(3):
                await peer.send({"jsonrpc": "2.0", "id": i, "method": "a/slow"})
            busy = await peer.recv()
            assert busy["id"] == 2
            assert busy["error"]["code"] == -32603
            assert "in flight" in busy["error"]["message"]
            release.set()
            answers = {(await peer.recv())["id"] for _ in range(2)}
            assert answers == {0, 1}


async def test_capabilities_and_gating_by_revision() -> None:
    async def elicit(params: ElicitParams, context: HookContext) -> Any:
        return {"action": "decline"}

    with trio.fail_after(5):
        async with connected("2025-03-26", elicitation=elicit, roots=[]) as (conn, peer, _n):
            advertised = {"roots": {"listChanged": True}, "elicitation": {"form": {}}}
            assert conn.client_capabilities == advertised
            init = msgspec.json.decode(peer.received[0])
            assert init["params"]["capabilities"] == advertised
            # elicitation/create does not exist on 2025-03-26
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}')
            assert (await peer.recv())["error"]["code"] == -32601
            await peer.send(b'{"jsonrpc":"2.0","id":2,"method":"roots/list"}')
            assert await peer.recv() == {"jsonrpc": "2.0", "id": 2, "result": {"roots": []}}
            # sampling was not given: not advertised, not served
            await peer.send(b'{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage"}')
            assert (await peer.recv())["error"]["code"] == -32601


async def test_batch_on_2025_03_26_answered_in_request_order() -> None:
    release = trio.Event()

    async def slow(request: ServerRequest) -> Any:
        await release.wait()
        return {"slow": True}

    events: list[Event] = []
    with trio.fail_after(5):
        async with connected("2025-03-26", handlers={"a/slow": slow}, on_event=events.append) as (
            _c,
            peer,
            _n,
        ):
            await peer.send(
                b'[{"jsonrpc":"2.0","id":"first","method":"a/slow"},'
                b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"},'
                b'{"jsonrpc":"2.0","id":null,"method":"ping"},1,'
                b'{"jsonrpc":"2.0","id":9,"method":"nope"}]'
            )
            await trio.sleep(0.05)
            release.set()
            answer = await peer.recv()
    assert [a["id"] for a in answer] == ["first", None, None, 9]
    assert answer[0]["result"] == {"slow": True}
    assert answer[1]["result"] == {}
    assert answer[2]["error"]["code"] == -32600
    assert answer[3]["error"]["code"] == -32601
    assert ListChanged("tools") in events


async def test_initialize_in_a_2025_03_26_batch_gets_32600_for_that_entry() -> None:
    with trio.fail_after(5):
        async with connected("2025-03-26") as (_c, peer, _n):
            await peer.send(
                b'[{"jsonrpc":"2.0","id":"i","method":"initialize","params":{}},'
                b'{"jsonrpc":"2.0","id":3,"method":"ping"}]'
            )
            assert await peer.recv_line() == (
                b'[{"jsonrpc":"2.0","id":"i","error":{"code":-32600,'
                b'"message":"Invalid Request: initialize must not be part of a batch"}},'
                b'{"jsonrpc":"2.0","id":3,"result":{}}]'
            )


async def test_batch_of_notifications_writes_nothing() -> None:
    with trio.fail_after(5):
        async with connected("2024-11-05") as (_c, peer, _n):
            await peer.send(b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]')
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
            assert await peer.recv_line() == b'{"jsonrpc":"2.0","id":1,"result":{}}'


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_batch_after_2025_03_26_refused_with_one_answer(version: str) -> None:
    called: list[Any] = []

    async def handler(request: ServerRequest) -> Any:
        called.append(request)
        return {}

    with trio.fail_after(5):
        async with connected(version, handlers={"a/x": handler}) as (_c, peer, _n):
            await peer.send(b'[{"jsonrpc":"2.0","id":1,"method":"a/x"}]')
            answer = await peer.recv()
    assert answer["id"] is None
    assert answer["error"]["code"] == -32600
    assert version in answer["error"]["message"]
    assert called == []


async def test_unmatched_response_logged_escaped_cut_redacted_never_answered() -> None:
    with capture_logs() as logs, trio.fail_after(5):
        async with connected(secrets=(CANARY,)) as (_c, peer, _n):
            message = f"bad {CANARY}\nlevel=critical " + "x" * 500
            await peer.send({"jsonrpc": "2.0", "id": 999, "error": {"code": 1, "message": message}})
            await peer.send({"jsonrpc": "2.0", "id": None, "error": {"code": 2, "message": "n"}})
            await peer.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    unmatched = [e for e in logs if e.get("outcome") == "response-unmatched"]
    assert [e["id"] for e in unmatched] == [999, "null"]
    error_text = unmatched[0]["error"]
    assert CANARY not in error_text
    assert "***" in error_text
    assert "\n" not in error_text
    assert error_text.endswith("…[cut]")
    assert len(error_text) <= 256


async def test_every_message_gets_one_typed_outcome_event() -> None:
    with capture_logs() as logs, trio.fail_after(5):
        async with connected() as (_c, peer, _n):
            await peer.send(b"not json at all")
            await peer.send(b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}')
            await peer.send(b'{"jsonrpc":"2.0","id":[1],"method":"x"}')
            await peer.send(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
            await peer.send(b'{"jsonrpc":"2.0","id":5,"method":"ping"}')
            await peer.recv()
            await peer.recv()
            await peer.recv()
    after = [
        e["outcome"] for e in logs if e["event"] == "message" and e.get("method") != "initialize"
    ]
    assert after == [
        "ignored",
        "dispatched",
        "answered-invalid",
        "refused-by-profile",
        "dispatched",
    ]
    assert all(
        "server" in e and "epoch" in e and e["direction"] == "in"
        for e in logs
        if e["event"] == "message"
    )


async def test_responder_bound_to_its_epoch_answers_nowhere_after_close() -> None:
    entered = trio.Event()
    release = trio.Event()
    answered: list[bool] = []

    async def slow(request: ServerRequest) -> Any:
        entered.set()
        with trio.CancelScope(shield=True):
            await release.wait()
        answered.append(await request.responder.respond({"late": True}))
        return None

    with capture_logs() as logs, trio.fail_after(5):
        async with connected(handlers={"a/slow": slow}) as (conn, peer, _n):
            await peer.send(b'{"jsonrpc":"2.0","id":null,"method":"a/slow"}')
            await entered.wait()
            await peer.stream.aclose()  # the transport goes away
            with trio.move_on_after(1):
                while conn.profile is not None:
                    await trio.sleep(0.01)
            release.set()
            await trio.sleep(0.05)
    assert answered == [False]
    lines = [e for e in logs if e["event"] == "not answering request"]
    assert len(lines) == 1
    assert lines[0]["request_id"] is None
    assert lines[0]["method"] == "a/slow"
    assert "has closed" in lines[0]["reason"]
