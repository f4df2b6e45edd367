"""Who reads a transport (mcpl_host.driver.reading): over real pipes, a caller waiting
for its answer reads it itself when nobody else reads, and everything
the reader task guarantees still holds: lines handled in order and whole, server
requests answered, notifications passed on, the end of the stream met with no call
pending, timeouts and cancellation at any point, the owed-answers pause, rebinding."""

from __future__ import annotations

import contextvars
import fcntl
import math
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from structlog.testing import capture_logs

from mcpl_host import (
    Connection,
    ConnectionClosed,
    Reconnect,
    RequestTimeout,
    ServerRequest,
)
from mcpl_host.driver import reading
from mcpl_host.driver.reading import Reading
from mcpl_host.events import Closed, Disconnected, Event, ServerNotification
from mcpl_host.transports.memory import StreamTransport

from .peer import Peer, PeerSupply, memory_connection, pipe_pair

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="connection")


@asynccontextmanager
async def connected(peer: Peer, host: Any, **kwargs: Any) -> AsyncIterator[Connection]:
    """A connection over ``host`` (a pipe stream) whose handshake ``peer`` answers."""

    async def opener() -> StreamTransport:
        return StreamTransport(host, "pipes")

    kwargs.setdefault("request_timeout", 10)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.handshake)
        async with Connection(opener, **kwargs) as conn:
            yield conn
        nursery.cancel_scope.cancel()
    await peer.stream.aclose()


def _reading(conn: Connection) -> Reading:
    epoch = conn._epoch
    assert epoch is not None
    assert isinstance(epoch.reading, Reading)
    return epoch.reading


class ReaderSteps(trio.abc.Instrument):
    """Counts the steps the reader task of ``conn``'s transport runs."""

    def __init__(self, conn: Connection) -> None:
        self.task = _reading(conn)._reader
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.count += 1


def _result(message: dict[str, Any], result: Any) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "id": message["id"], "result": result}) + b"\n"


def _note(method: str, params: Any = None) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "method": method, "params": params or {}}) + b"\n"


def _pings(count: int) -> bytes:
    """``count`` ping requests (ids 1 to ``count``) in one write."""
    return b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % n for n in range(1, count + 1))


async def _echo(peer: Peer) -> None:
    """Answer every request with its own params, at once."""
    while True:
        message = await peer.recv()
        if "id" in message and "method" in message:
            await peer.send(_result(message, message.get("params") or {}))


async def _warm(conn: Connection, peer: Peer, calls: int = 1) -> None:
    """A few calls the peer answers at once: the reader task reads the first answer,
    then leaves the reading to the caller (which is vacant once each call is over)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_echo, peer)
        for n in range(calls):
            assert await conn.request("tools/call", {"warm": n}) == {"warm": n}
        nursery.cancel_scope.cancel()


@contextmanager
def reader_steps(conn: Connection) -> Iterator[ReaderSteps]:
    """Count the steps of ``conn``'s reader task while the block runs."""
    steps = ReaderSteps(conn)
    trio.lowlevel.add_instrument(steps)
    try:
        yield steps
    finally:
        trio.lowlevel.remove_instrument(steps)


@pytest.fixture
def long_linger(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader task does not take the role back within the test (only when handed)."""
    monkeypatch.setattr(reading, "LINGER", 30.0)


async def test_a_caller_in_a_loop_reads_its_own_answers(long_linger: None) -> None:
    host, peer = pipe_pair()
    with trio.fail_after(10):
        async with connected(peer, host) as conn:
            assert _reading(conn).shared
            # The reader task reads the first answer, then leaves the role: the caller
            # just answered calls again, and reads its answers itself from then on.
            await _warm(conn, peer)
            with reader_steps(conn) as steps:
                await _warm(conn, peer, calls=20)
    assert steps.count == 0


async def test_a_memory_stream_is_read_by_the_reader_task_alone() -> None:
    conn, peer = memory_connection(request_timeout=10)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake)
            async with conn:
                assert not _reading(conn).shared
                with reader_steps(conn) as steps:
                    await _warm(conn, peer, calls=5)
                nursery.cancel_scope.cancel()
    assert steps.count >= 5  # the reader task woke for every answer


async def test_what_a_caller_reads_is_handled_in_the_reader_tasks_context(
    long_linger: None,
) -> None:
    """A notification and the server's requests read by a caller are handled as the
    reader task would: events and handler tasks never see the caller's contextvars."""
    events: list[tuple[Event, str]] = []
    served: list[str] = []

    async def handler(request: ServerRequest) -> Any:
        served.append(VAR.get())
        return {"served": True}

    host, peer = pipe_pair()
    with trio.fail_after(10):
        async with connected(
            peer,
            host,
            handlers={"x/serve": handler},
            on_event=lambda event: events.append((event, VAR.get())),
        ) as conn:
            await _warm(conn, peer)
            VAR.set("caller")
            with reader_steps(conn) as steps:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(conn.request, "tools/call", {"name": "slow"})
                    request = await peer.recv()
                    await peer.send(
                        _note("notifications/custom", {"k": 1})
                        + b'{"jsonrpc":"2.0","id":"p-1","method":"ping"}\n'
                        + b'{"jsonrpc":"2.0","id":7,"method":"x/serve","params":{}}\n'
                    )
                    answers = {(await peer.recv())["id"] for _ in range(2)}
                    assert answers == {"p-1", 7}
                    await peer.send(_result(request, {"done": True}))
    assert steps.count == 0  # the caller read all of it
    notes = [(e, var) for e, var in events if isinstance(e, ServerNotification)]
    assert [(e.method, var) for e, var in notes] == [("notifications/custom", "connection")]
    assert served == ["connection"]


async def test_what_arrives_between_calls_is_read_by_the_reader_task() -> None:
    """With no call waiting, the reader task takes the role back within LINGER and
    reads on: a notification between calls is passed on without another call."""
    events: list[Event] = []
    host, peer = pipe_pair()
    with trio.fail_after(10):
        async with connected(peer, host, on_event=events.append) as conn:
            await _warm(conn, peer, calls=3)
            await peer.send(_note("notifications/between"))
            while not any(isinstance(e, ServerNotification) for e in events):
                await trio.sleep(0.001)
            role = _reading(conn)
            assert role.holder is role._reader


@pytest.mark.parametrize("right_after_a_call", [True, False])
async def test_the_end_of_the_stream_is_met_with_no_call_pending(right_after_a_call: bool) -> None:
    events: list[Event] = []
    host, peer = pipe_pair()
    with trio.fail_after(10):
        async with connected(peer, host, on_event=events.append) as conn:
            await _warm(conn, peer)
            if not right_after_a_call:
                await trio.sleep(0.05)  # the reader task holds the role again
            await peer.stream.aclose()
            while not any(isinstance(e, Closed) for e in events):
                await trio.sleep(0.001)
    assert [e.reason for e in events if isinstance(e, Disconnected)] == ["eof"]


async def test_the_end_of_the_stream_fails_the_caller_that_reads(long_linger: None) -> None:
    host, peer = pipe_pair()
    with trio.fail_after(10):
        async with connected(peer, host) as conn:
            await _warm(conn, peer)

            async def hang_up() -> None:
                await peer.recv()
                await peer.send(_note("notifications/last"))  # read before the end
                await peer.stream.aclose()

            with reader_steps(conn) as steps:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(hang_up)
                    with pytest.raises(ConnectionClosed) as caught:
                        await conn.request("tools/call", {"name": "never"})
    # The caller read the last line and met the end; the reader task only ended.
    assert steps.count <= 1
    assert caught.value.outcome_unknown
    assert caught.value.reason == "eof"


async def test_a_second_caller_is_served_by_the_first_then_the_reader_task(
    long_linger: None,
) -> None:
    """A caller that finds the role taken waits; when the caller reading is answered
    and leaves, the reader task reads at once for the one still waiting (many callers
    at once are served by the reader task, as before)."""
    host, peer = pipe_pair()
    results: dict[str, Any] = {}

    async def call(name: str) -> None:
        results[name] = await conn.request("tools/call", {"name": name})

    with trio.fail_after(10):
        async with connected(peer, host) as conn:
            await _warm(conn, peer)
            role = _reading(conn)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "a")
                a = await peer.recv()
                await trio.testing.wait_all_tasks_blocked()
                leader = role.holder
                assert leader is not None
                assert leader is not role._reader
                nursery.start_soon(call, "b")
                b = await peer.recv()
                await trio.testing.wait_all_tasks_blocked()
                assert role.holder is leader  # b waits on a's reading
                await peer.send(_result(b, "B") + _result(a, "A"))  # a reads both
                while len(results) < 2:
                    await trio.sleep(0)
                # a's chunk answered b too: callers in flight together are the reader
                # task's to serve, until a chunk answers one request with none waiting.
                assert role.holder is role._reader
                nursery.start_soon(call, "e")
                await peer.send(_result(await peer.recv(), "E"))
                while "e" not in results:
                    await trio.sleep(0)
                await trio.testing.wait_all_tasks_blocked()
                assert role.holder is None  # vacant: the next caller reads
                nursery.start_soon(call, "c")
                c = await peer.recv()
                nursery.start_soon(call, "d")
                d = await peer.recv()
                await trio.testing.wait_all_tasks_blocked()
                assert role.holder not in (None, role._reader)  # c reads, d waits
                await peer.send(_result(c, "C"))
                await trio.testing.wait_all_tasks_blocked()
                # c was answered while d still waits: the reader task reads for d.
                assert role.holder is role._reader
                await peer.send(_result(d, "D"))
    assert results == {"a": "A", "b": "B", "c": "C", "d": "D", "e": "E"}


async def test_a_caller_cancelled_while_it_reads_loses_nothing(long_linger: None) -> None:
    """The caller reading is cancelled right when a chunk becomes readable: it has read
    nothing, and the reader task, handed the role for the caller still waiting, reads
    the whole chunk."""
    events: list[Event] = []
    host, peer = pipe_pair()
    results: dict[str, Any] = {}
    a_scope = trio.CancelScope()

    async def call_a() -> None:
        with a_scope:
            results["a"] = await conn.request("tools/call", {"name": "a"})

    async def call_b() -> None:
        results["b"] = await conn.request("tools/call", {"name": "b"})

    with trio.fail_after(10):
        async with connected(peer, host, on_event=events.append) as conn:
            await _warm(conn, peer)
            role = _reading(conn)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call_a)
                a = await peer.recv()
                await trio.testing.wait_all_tasks_blocked()
                nursery.start_soon(call_b)
                b = await peer.recv()
                await trio.testing.wait_all_tasks_blocked()
                assert role.holder is not role._reader  # a reads; b waits on it
                # One write, then (no checkpoint in between) a is cancelled while it
                # waits for the stream that just became readable.
                await peer.send(_result(a, "A") + _note("notifications/mid") + _result(b, "B"))
                a_scope.cancel()
            cancelled = await peer.expect("notifications/cancelled")
    assert a_scope.cancelled_caught
    assert results == {"b": "B"}
    assert [e.method for e in events if isinstance(e, ServerNotification)] == ["notifications/mid"]
    assert cancelled["params"] == {"requestId": a["id"], "reason": "cancelled by the caller"}


async def test_the_timeout_of_a_caller_that_reads_wakes_it(long_linger: None) -> None:
    host, peer = pipe_pair()
    with trio.fail_after(10):
        async with connected(peer, host) as conn:
            await _warm(conn, peer)
            started = trio.current_time()
            with pytest.raises(RequestTimeout):
                await conn.request("tools/call", {"name": "never"}, timeout=0.2)
            assert trio.current_time() - started < 2
            request = await peer.recv()
            cancelled = await peer.expect("notifications/cancelled")
            assert cancelled["params"]["requestId"] == request["id"]
            async with trio.open_nursery() as nursery:  # the role was given up
                nursery.start_soon(_echo, peer)
                assert await conn.request("tools/call", {"after": 1}) == {"after": 1}
                nursery.cancel_scope.cancel()


async def test_a_pause_met_by_a_caller_is_the_reader_tasks(long_linger: None) -> None:
    """Too many answers owed in the middle of a chunk a caller read: the reader task
    pauses and handles the rest of the chunk, in order."""
    events: list[Event] = []
    host, peer = pipe_pair()
    with trio.fail_after(10), capture_logs() as logs:
        async with connected(peer, host, max_owed_answers=2, on_event=events.append) as conn:
            await _warm(conn, peer)
            with reader_steps(conn) as steps:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(conn.request, "tools/call", {"name": "x"})
                    request = await peer.recv()
                    await peer.send(_pings(3) + _note("notifications/after") + _result(request, {}))
                    answered = sorted([(await peer.recv())["id"] for _ in range(3)])
    assert answered == [1, 2, 3]
    assert [e.method for e in events if isinstance(e, ServerNotification)] == [
        "notifications/after"
    ]
    assert any(log["event"] == "reading paused" for log in logs)
    assert steps.count > 0  # the reader task did the pause and the rest


@pytest.mark.skipif(sys.platform != "linux", reason="F_SETPIPE_SZ is Linux's")
async def test_a_pause_never_holds_a_callers_timeout(long_linger: None) -> None:
    """The server stops reading while it floods requests: the host pauses reading, and
    a caller that was reading times out on time all the same."""
    host, peer = pipe_pair()
    fcntl.fcntl(host._send_fd, 1031, 4096)  # F_SETPIPE_SZ: the host's output pipe is small
    with trio.fail_after(20):
        async with connected(peer, host, max_owed_answers=4) as conn:
            await _warm(conn, peer)
            started = trio.current_time()
            async with trio.open_nursery() as nursery:

                async def flood() -> None:
                    request = await peer.recv()
                    await peer.send(_pings(300) + _result(request, "late"))  # then reads nothing

                nursery.start_soon(flood)
                with pytest.raises(RequestTimeout):
                    await conn.request("tools/call", {"name": "x"}, timeout=0.3)
            assert trio.current_time() - started < 2
            assert _reading(conn)._paused  # still paused: nothing was read meanwhile
            ids = set()
            while len(ids) < 300:  # the server reads again: every ping is answered
                message = await peer.recv()
                if "id" in message and "result" in message:
                    ids.add(message["id"])
            assert ids == set(range(1, 301))


async def test_a_request_with_no_deadline_never_reads(long_linger: None) -> None:
    """A request that may wait as long as the transport lives (a listen) parks; the
    callers that come after read their answers themselves, and its answer too."""
    host, peer = pipe_pair()
    with trio.fail_after(10):
        async with connected(peer, host) as conn:
            listen = conn._request_now("x/listen", {}, timeout=math.inf)
            assert listen is not None
            outcome: dict[str, Any] = {}

            async def wait_listen() -> None:
                assert listen is not None
                outcome["listen"] = await conn._answer(listen, timeout=math.inf)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait_listen)
                listened = await peer.recv()
                await trio.testing.wait_all_tasks_blocked()
                assert _reading(conn).holder is _reading(conn)._reader
                await _warm(conn, peer)  # the reader task leaves it: the listen does not count
                with reader_steps(conn) as steps:
                    await _warm(conn, peer, calls=5)
                async with trio.open_nursery() as inner:  # a caller reads the listen's answer
                    inner.start_soon(conn.request, "tools/call", {"last": True})
                    last = await peer.recv()
                    await peer.send(_result(listened, {"ended": True}) + _result(last, {}))
    assert steps.count == 0
    assert bytes(outcome["listen"]) == b'{"ended":true}'


async def test_a_caller_reading_when_the_transport_is_lost_is_rebound(long_linger: None) -> None:
    """The caller reads when the transport ends under it: its ping (safe to repeat) is
    sent again on the next transport and answered there."""
    supply = PeerSupply(pipes=True)
    policy = Reconnect(initial=0, jitter=0, stable=0)

    async def first_side() -> None:
        first = await supply.handshaken(0)
        warm = await first.recv()
        await first.send(_result(warm, {}))
        await first.expect("ping")
        await trio.testing.wait_all_tasks_blocked()  # the caller waits, reading
        assert _reading(conn).holder is not _reading(conn)._reader
        await first.stream.aclose()  # no answer: the transport ends

    async def second_side() -> None:
        second = await supply.handshaken(1)
        ping = await second.expect("ping")
        await second.send(_result(ping, {}))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supply.handshake_next)
            async with Connection(supply.factory, reconnect=policy, request_timeout=10) as conn:
                nursery.start_soon(first_side)
                await conn.request("tools/call", {"warm": True})
                nursery.start_soon(supply.handshake_next)
                nursery.start_soon(second_side)
                await conn.ping()
            nursery.cancel_scope.cancel()


async def test_progress_read_by_the_caller_moves_its_own_deadline(long_linger: None) -> None:
    host, peer = pipe_pair()
    seen: list[float] = []
    with trio.fail_after(10):
        async with connected(peer, host) as conn:
            await _warm(conn, peer)

            async def slow_server() -> None:
                request = await peer.recv()
                token = request["params"]["_meta"]["progressToken"]
                for step in range(8):  # 0.8 s in all, past the timeout
                    await trio.sleep(0.1)
                    params = {"progressToken": token, "progress": step}
                    await peer.send(_note("notifications/progress", params))
                await peer.send(_result(request, {"done": True}))

            with reader_steps(conn) as steps:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(slow_server)
                    result = await conn.request(
                        "tools/call",
                        {"name": "slow"},
                        timeout=0.5,
                        on_progress=lambda progress, total, message: seen.append(progress),
                        progress_resets_timeout=True,
                    )
    assert result == {"done": True}
    assert seen == list(range(8))
    assert steps.count == 0  # the caller read every progress notification itself


async def test_a_line_past_the_bound_read_by_a_caller_is_dropped(long_linger: None) -> None:
    host, peer = pipe_pair()
    with trio.fail_after(10), capture_logs() as logs:
        async with connected(peer, host, max_message_bytes=1000) as conn:
            await _warm(conn, peer)
            with reader_steps(conn) as steps:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(conn.request, "tools/call", {"name": "x"})
                    request = await peer.recv()
                    huge = b'{"jsonrpc":"2.0","method":"n","params":"' + b"x" * 5000 + b'"}\n'
                    await peer.send(huge + _result(request, {"after": True}))
    assert steps.count == 0
    dropped = [log for log in logs if "exceeds max_message_bytes" in str(log.get("reason"))]
    assert len(dropped) == 1


def test_linger_is_short() -> None:
    """What the server sends with no call waiting is read within a few milliseconds."""
    assert 0 < reading.LINGER <= 0.01
