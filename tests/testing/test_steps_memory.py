"""Every step, in memory mode, against a real Connection (bytes on the wire where the
wire is the point). The autojump clock makes every script timeout and wait instant."""

from __future__ import annotations

import pytest
import trio

from mcpl_host import (
    Connection,
    ConnectionClosed,
    ListChanged,
    RequestError,
    ServerLog,
    ServerNotification,
    TransportError,
)
from mcpl_host.events import Disconnected, Event
from mcpl_host.testing import Script, ScriptFailed, serve

INVALID_ID = (
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: '
    b'the id must be a string, a number or null, not an object"}}'
)


async def test_handshake_answers_only_what_it_is_given(autojump_clock: trio.abc.Clock) -> None:
    with trio.fail_after(5):
        async with serve(Script().handshake(version="2025-06-18")) as server:
            async with Connection(server.target) as conn:
                assert conn.protocol_version == "2025-06-18"
                assert conn.server_info == {}
                assert conn.server_capabilities == {}
                assert conn.instructions is None
            await server.wait_done()
    # The dual-era host asked server/discover first; the handshake step refused it.
    assert [m.get("method") for m in server.record.messages()] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
    ]
    assert server.record.unplanned() == []


async def test_handshake_with_everything(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake(
        capabilities={"tools": {"listChanged": True}},
        server_info={"name": "scripted", "version": "9"},
        instructions="be brief",
    )
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target) as conn:
            assert conn.server_info == {"name": "scripted", "version": "9"}
            assert conn.server_capabilities == {"tools": {"listChanged": True}}
            assert conn.instructions == "be brief"


async def test_expect_reply_and_reply_error(autojump_clock: trio.abc.Clock) -> None:
    script = (
        Script()
        .handshake()
        .expect("tools/call", {"name": "add", "arguments": {"a": 1}})
        .reply({"content": []})
        .expect("tools/call")
        .reply_error(-32602, "Unknown tool: nope", {"tool": "nope"})
    )
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target) as conn:
            result = await conn.request("tools/call", {"name": "add", "arguments": {"a": 1}})
            assert result == {"content": []}
            with pytest.raises(RequestError) as info:
                await conn.request("tools/call", {"name": "nope"})
            assert (info.value.code, info.value.error_message) == (-32602, "Unknown tool: nope")
            assert info.value.data == {"tool": "nope"}
            await server.wait_done()


async def test_reply_none_writes_a_null_result(autojump_clock: trio.abc.Clock) -> None:
    # A null result is the server's mistake; the host must still settle the request.
    script = Script().handshake().expect("tools/list").reply(None)
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target) as conn:
            assert await conn.request("tools/list") is None


async def test_expect_params_mismatch_fails_at_once(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().expect("tools/call", {"name": "add"}).reply({})
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target) as conn:
            with pytest.raises(ConnectionClosed):
                await conn.request("tools/call", {"name": "sub"})
            with pytest.raises(ScriptFailed) as info:
                await server.wait_done()
    assert str(info.value) == (
        "scripted server, step 2 expect('tools/call', params={'name': 'add'}) on connection 1: "
        """the host's 'tools/call' came with params {"name":"sub"}, not {"name":"add"}"""
    )


async def test_ping_answered_while_waiting_unless_expected(autojump_clock: trio.abc.Clock) -> None:
    script = (
        Script()
        .handshake()
        .expect("tools/list")
        .reply({"tools": []})
        .expect("ping")
        .reply({"scripted": True})
    )
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target) as conn:
            assert await conn.request("ping") == {}  # answered by the harness
            assert await conn.request("tools/list") == {"tools": []}
            assert await conn.request("ping") == {"scripted": True}  # the script's own
            await server.wait_done()
    assert [m["method"] for m in server.record.requests()] == [
        "server/discover",
        "initialize",
        "ping",
        "tools/list",
        "ping",
    ]


async def test_request_with_id_null_is_answered_with_id_null(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().handshake().send_request("ping", id=None).expect_answer()
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target):
            await server.wait_done()
    assert server.record.lines()[-1] == b'{"jsonrpc":"2.0","id":null,"result":{}}'
    assert server.record.answers() == [{"jsonrpc": "2.0", "id": None, "result": {}}]


@pytest.mark.parametrize(
    ("request_id", "answer_id"),
    [("abc", b'"abc"'), (0, b"0"), (9007199254740991, b"9007199254740991")],
)
async def test_request_ids_are_echoed(
    autojump_clock: trio.abc.Clock, request_id: int | str, answer_id: bytes
) -> None:
    script = Script().handshake().send_request("ping", id=request_id).expect_answer()
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target):
            await server.wait_done()
    assert server.record.lines()[-1] == b'{"jsonrpc":"2.0","id":' + answer_id + b',"result":{}}'


async def test_default_ids_count_up(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake()
    script.send_request("ping").expect_answer().send_request("x/unknown").expect_answer()
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target):
            await server.wait_done()
    assert server.record.answers() == [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {"code": -32601, "message": "Method not found: x/unknown"},
        },
    ]


@pytest.mark.parametrize(
    ("id_raw", "answer"),
    [
        ('{"a":1}', INVALID_ID),
        (
            "1e400",
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: '
            b"a number id must be an integer within \xc2\xb1(2^53\xe2\x88\x921), not a number "
            b'written with a fraction or an exponent"}}',
        ),
        ('"raw-but-valid"', b'{"jsonrpc":"2.0","id":"raw-but-valid","result":{}}'),
    ],
)
async def test_raw_ids(autojump_clock: trio.abc.Clock, id_raw: str, answer: bytes) -> None:
    script = Script().handshake().send_request("ping", id_raw=id_raw).expect_answer()
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target):
            await server.wait_done()
    assert server.record.lines()[-1] == answer


async def test_malformed_method_gets_32600(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().send_request(3, id=7).expect_answer()
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target):
            await server.wait_done()
    assert server.record.lines()[-1] == (
        b'{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request: '
        b'the method must be a string, not a number"}}'
    )


async def test_notify_reaches_the_embedder(autojump_clock: trio.abc.Clock) -> None:
    events: list[Event] = []
    script = (
        Script()
        .handshake()
        .notify("notifications/tools/list_changed")
        .notify("notifications/message", {"level": "info", "data": "hi"})
        .expect_close()
    )
    with trio.fail_after(5):
        async with serve(script) as server:
            async with Connection(server.target, on_event=events.append):
                while not any(isinstance(e, ServerLog) for e in events):
                    await trio.sleep(0.01)
            await server.wait_done()
    notes = [e for e in events if isinstance(e, (ListChanged, ServerLog, ServerNotification))]
    assert notes == [ListChanged("tools"), ServerLog("info", None, "hi")]


async def test_send_raw_writes_exact_bytes_in_pieces(autojump_clock: trio.abc.Clock) -> None:
    script = (
        Script()
        .handshake()
        .send_raw(b'{"jsonrpc":"2.0",')
        .wait(1)
        .send_raw(b'"id":{"nested":[1]},"method":"ping"}\n')
        .expect_answer()
    )
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target):
            await server.wait_done()
    assert server.record.lines()[-1] == INVALID_ID


@pytest.mark.parametrize(
    ("version", "answer"),
    [
        (
            "2025-03-26",
            b'[{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":"b","error":'
            b'{"code":-32601,"message":"Method not found: x/unknown"}}]',
        ),
        (
            "2025-11-25",
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: '
            b"protocol revision 2025-11-25 does not allow JSON-RPC batches; "
            b'send one message per line"}}',
        ),
    ],
)
async def test_send_batch(autojump_clock: trio.abc.Clock, version: str, answer: bytes) -> None:
    script = (
        Script()
        .handshake(version=version)
        .send_batch(
            [
                {"jsonrpc": "2.0", "id": "a", "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {}},
                {"jsonrpc": "2.0", "id": "b", "method": "x/unknown"},
            ]
        )
        .expect_answer()
    )
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target):
            await server.wait_done()
    assert server.record.lines()[-1] == answer


async def test_garbage_and_oversized_lines_are_ignored(autojump_clock: trio.abc.Clock) -> None:
    events: list[Event] = []
    script = (
        Script()
        .handshake()
        .send_garbage()
        .send_oversized(1025)
        .send_oversized(1024)  # just within the bound: taken as the notification it is
        .send_request("ping", id="after")
        .expect_answer()
    )
    with trio.fail_after(5):
        async with (
            serve(script) as server,
            Connection(server.target, max_message_bytes=1024, on_event=events.append),
        ):
            await server.wait_done()
    # Nothing answered the garbage or the dropped line: the next answer is the ping's.
    assert server.record.lines()[3:] == [b'{"jsonrpc":"2.0","id":"after","result":{}}']
    assert [e.level for e in events if isinstance(e, ServerLog)] == ["info"]
    assert [e for e in events if isinstance(e, Disconnected)] == [Disconnected(1, "closed")]


async def test_wait_lets_virtual_time_pass(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().wait(3600).notify("notifications/late")
    events: list[Event] = []
    with trio.fail_after(7200):
        async with serve(script) as server:
            async with Connection(server.target, on_event=events.append):
                start = trio.current_time()
                await _until_notified(events)
                assert trio.current_time() - start >= 3600
            await server.wait_done()


async def _until_notified(events: list[Event]) -> None:
    while not any(isinstance(e, ServerNotification) for e in events):
        await trio.sleep(60)


async def test_ping_answered_during_wait(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().wait(100)
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target) as conn:
            assert await conn.request("ping") == {}
            assert trio.current_time() < 100


async def test_drop_ends_the_connection_cleanly(autojump_clock: trio.abc.Clock) -> None:
    events: list[Event] = []
    script = Script().handshake().expect("tools/list").drop()
    with trio.fail_after(5):
        async with serve(script) as server:
            async with Connection(server.target, on_event=events.append) as conn:
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("tools/list")
                assert info.value.outcome_unknown
            await server.wait_done()
    assert Disconnected(1, "eof") in events


async def test_crash_breaks_the_stream_under_the_reader(autojump_clock: trio.abc.Clock) -> None:
    events: list[Event] = []
    script = Script().handshake().expect("tools/list").crash()
    with trio.fail_after(5):
        async with (
            serve(script) as server,
            Connection(server.target, on_event=events.append) as conn,
        ):
            with pytest.raises(ConnectionClosed) as info:
                await conn.request("tools/list")
            assert info.value.outcome_unknown
    assert Disconnected(1, "read-failed") in events


async def test_drop_before_any_connection_accepts_and_closes(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().drop().handshake()
    with trio.fail_after(5):
        async with serve(script) as server:
            # The stream is closed before the host writes initialize (or reads an answer).
            with pytest.raises(TransportError):
                async with Connection(server.target):
                    pytest.fail("connected")
            async with Connection(server.target) as conn:
                assert conn.protocol_version == "2025-11-25"
            await server.wait_done()
    assert server.record.connections == 2


async def test_refuse_connections(autojump_clock: trio.abc.Clock) -> None:
    script = Script().refuse_connections(2).handshake()
    with trio.fail_after(5):
        async with serve(script) as server:
            for _ in range(2):
                with pytest.raises(TransportError) as info:
                    async with Connection(server.target):
                        pytest.fail("connected")
                assert info.value.reason == "connect-failed"
            async with Connection(server.target):
                pass
            await server.wait_done()
    assert (server.record.refused, server.record.connections) == (2, 1)


async def test_attempts_after_the_script_are_refused(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().expect_close()
    with trio.fail_after(5):
        async with serve(script) as server:
            async with Connection(server.target):
                pass
            await server.wait_done()
            with pytest.raises(TransportError, match="no more connections"):
                async with Connection(server.target):
                    pytest.fail("connected")


async def test_serve_forever(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().serve_forever()
    with trio.fail_after(5):
        async with serve(script) as server:
            async with Connection(server.target) as conn:
                assert await conn.request("ping") == {}
                assert await conn.request("tools/list") == {"tools": []}
                with pytest.raises(RequestError) as info:
                    await conn.request("resources/list")
                assert (info.value.code, info.value.error_message) == (
                    -32601,
                    "Method not found: resources/list",
                )
                await conn.notify("notifications/roots/list_changed")
            await server.wait_done()  # the host hung up: serve_forever is over
    server.record.assert_sent("notifications/roots/list_changed")


async def test_steps_after_serve_forever_run_on_the_next_connection(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().handshake().serve_forever().handshake(version="2024-11-05").expect_close()
    with trio.fail_after(5):
        async with serve(script) as server:
            async with Connection(server.target) as conn:
                assert conn.protocol_version == "2025-11-25"
            async with Connection(server.target) as conn:
                assert conn.protocol_version == "2024-11-05"
            await server.wait_done()
    assert server.record.connections == 2
    assert len(server.record.requests("initialize", connection=2)) == 1


async def test_expect_close_fails_when_the_host_stays(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().expect_close(timeout=3)
    with trio.fail_after(10):
        async with serve(script) as server, Connection(server.target) as conn:
            assert await conn.request("ping") == {}  # answered, so not listed below
            await conn.notify("notifications/roots/list_changed")
            with pytest.raises(ScriptFailed) as info:
                await server.wait_done()
    assert str(info.value) == (
        "scripted server, step 2 expect_close() on connection 1: the host kept the "
        "connection open for 3 s; the host sent instead: notification "
        "'notifications/roots/list_changed'"
    )


async def test_mismatch_surfaces_within_the_timeout(autojump_clock: trio.abc.Clock) -> None:
    """The host sends something else: the script fails after its timeout, the server
    goes away, and the host's waiting request ends instead of hanging (left unanswered
    here: by default an unplanned request is answered at once)."""
    script = Script(timeout=2).handshake().ignore_unplanned().expect("tools/call").reply({})
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target) as conn:
            with pytest.raises(ConnectionClosed):
                await conn.request("tools/list")
            assert trio.current_time() == pytest.approx(2, abs=0.1)
            assert server.error is not None
            with pytest.raises(ScriptFailed) as info:
                await server.wait_done()
    assert info.value.step_number == 3
    assert info.value.step == "expect('tools/call')"
    assert str(info.value) == (
        "scripted server, step 3 expect('tools/call') on connection 1: no matching message "
        "came within 2 s; the host sent instead: request 'tools/list' (id 3)"
    )


async def test_host_closing_during_expect_fails(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().expect("tools/call")
    with trio.fail_after(5):
        async with serve(script) as server:
            async with Connection(server.target) as conn:
                await conn.notify("notifications/roots/list_changed")
            with pytest.raises(
                ScriptFailed,
                match="the host closed the connection instead; the "
                "host sent instead: notification 'notifications/roots/list_changed'",
            ):
                await server.wait_done()


async def test_no_connection_within_the_timeout(autojump_clock: trio.abc.Clock) -> None:
    with trio.fail_after(30):
        async with serve(Script().handshake(timeout=20)) as server:
            with pytest.raises(ScriptFailed) as info:
                await server.wait_done()
    assert str(info.value) == (
        "scripted server, step 1 handshake(): the host opened no connection within 20 s"
    )


async def test_reply_without_a_request_fails(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().reply({})
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target):
            with pytest.raises(ScriptFailed, match="no request was expected on this connection"):
                await server.wait_done()


async def test_reply_to_a_notification_fails(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().expect("notifications/roots/list_changed").reply({})
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target) as conn:
            await conn.notify("notifications/roots/list_changed")
            with pytest.raises(ScriptFailed, match="has no id"):
                await server.wait_done()


async def test_expect_answer_with_nothing_sent_fails(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().expect_answer()
    with trio.fail_after(5):
        async with serve(script) as server, Connection(server.target):
            with pytest.raises(ScriptFailed, match="has sent no request"):
                await server.wait_done()


async def test_an_unlooked_at_failure_is_raised_on_exit(autojump_clock: trio.abc.Clock) -> None:
    script = Script(timeout=1).handshake().expect("tools/call")
    with trio.fail_after(5), pytest.raises(ScriptFailed, match="expect"):
        async with serve(script) as server, Connection(server.target):
            await trio.sleep(2)


async def test_a_body_error_is_not_replaced_by_the_script_failure(
    autojump_clock: trio.abc.Clock,
) -> None:
    async def body() -> None:
        async with serve(Script(timeout=1).handshake()) as server:
            await trio.sleep(2)
            assert server.record.connections == 0  # the script has failed by now, unseen
            raise KeyError("the test's own")

    with trio.fail_after(5), pytest.raises(KeyError):
        await body()


async def test_target_before_entering(autojump_clock: trio.abc.Clock) -> None:
    server = serve(Script())
    with pytest.raises(RuntimeError, match="enter the memory server first"):
        _ = server.target


async def test_record_per_connection(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().expect("tools/list").drop().handshake().expect_close()
    with trio.fail_after(5):
        async with serve(script) as server:
            async with Connection(server.target) as conn:
                with pytest.raises(ConnectionClosed):
                    await conn.request("tools/list")
            async with Connection(server.target):
                pass
            await server.wait_done()
    record = server.record
    assert record.connections == 2
    assert [m["method"] for m in record.messages(connection=1)] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
    assert [m["method"] for m in record.messages(connection=2)] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
    ]
    assert (
        record.lines(connection=2)[2] == b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    )
