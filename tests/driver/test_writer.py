"""The writer of a transport, over real pipes (the stdio stream, without a process):
whole lines only, requests grouped after a burst of answers, a request given up before
its turn never written, one given up while its line was being written cancelled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

from mcpl_host import Connection, RequestTimeout
from mcpl_host.driver.epoch import Epoch
from mcpl_host.transports._pipes import PipeStream
from mcpl_host.transports.memory import StreamTransport

from .peer import Peer, pipe_pair


class Counting(PipeStream):
    """Counts the host's write system calls."""

    writes = 0

    def send_nowait(self, data: bytes | memoryview) -> int:
        self.writes += 1
        return super().send_nowait(data)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.writes += 1
        await super().send_all(data)


def pipes() -> tuple[Counting, Peer]:
    """The host's stream over two pipes, and the scripted peer on their other ends."""
    return pipe_pair(Counting)


@asynccontextmanager
async def connected(host: Counting, peer: Peer) -> AsyncIterator[Connection]:
    async def opener() -> StreamTransport:
        return StreamTransport(host, "pipes")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.handshake)
        async with Connection(opener, request_timeout=10) as conn:
            yield conn
        await peer.stream.aclose()


async def test_answers_read_at_once_are_followed_by_grouped_requests() -> None:
    host, peer = pipes()

    async def worker(n: int) -> None:
        for step in range(2):
            await conn.request("tools/call", {"name": "echo", "n": n, "step": step})

    with trio.fail_after(10):
        async with connected(host, peer) as conn, trio.open_nursery() as nursery:
            for n in range(64):
                nursery.start_soon(worker, n)
            first = [await peer.recv() for _ in range(64)]
            before = host.writes
            # All 64 answers in one write: the host reads them at once, and the 64
            # callers' next requests go out in a few writes, not one each.
            await peer.send(b"".join(_answer(r) for r in first))
            second = [await peer.recv() for _ in range(64)]
            grouped = host.writes - before
            await peer.send(b"".join(_answer(r) for r in second))
    assert sorted(r["params"]["n"] for r in second) == list(range(64))
    assert {r["params"]["step"] for r in second} == {1}
    assert grouped <= 4  # two groups of 32 (one more if a chunk boundary splits them)


async def test_a_request_given_up_before_its_turn_is_never_written() -> None:
    host, peer = pipes()
    with trio.fail_after(10):
        async with connected(host, peer) as conn:
            big = "x" * (1 << 20)  # far more than a pipe holds: the writer waits on it
            async with trio.open_nursery() as nursery:
                nursery.start_soon(conn.request, "tools/call", {"name": "big", "text": big})
                await trio.testing.wait_all_tasks_blocked()
                with trio.move_on_after(0.05):  # queued behind the big one, then given up
                    await conn.request("tools/call", {"name": "queued"})
                request = await peer.recv()
                assert request["params"]["text"] == big  # whole, though written in pieces
                await peer.send(_answer(request))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(conn.request, "ping")
                ping = await peer.recv()  # the next line on the wire: not the given-up one
                assert ping["method"] == "ping"
                await peer.send(_answer(ping))
    assert not [line for line in peer.received if b'"queued"' in line]


async def test_a_request_given_up_while_its_line_is_written_is_cancelled() -> None:
    host, peer = pipes()
    with trio.fail_after(10):
        async with connected(host, peer) as conn:
            big = "x" * (1 << 20)
            with pytest.raises(RequestTimeout):
                await conn.request("tools/call", {"name": "big", "text": big}, timeout=0.05)
            request = await peer.recv()  # the line went out whole
            assert request["params"]["text"] == big
            cancelled = await peer.expect("notifications/cancelled")
            assert cancelled["params"] == {"requestId": request["id"], "reason": "timeout"}


def _answer(request: dict[str, Any]) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % request["id"]


class QuarterNowait(trio.abc.Stream):
    """Takes a quarter of what send_nowait offers; send_all takes everything."""

    def __init__(self) -> None:
        self.data = b""

    def send_nowait(self, data: bytes | memoryview) -> int:
        taken = len(data) // 4
        self.data += bytes(data[:taken])
        return taken

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()
        self.data += bytes(data)

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:  # noqa: ARG002
        await trio.sleep_forever()
        return b""  # pragma: no cover

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


class _Pending:
    settled = written = abandoned = False
    epoch = None


async def test_an_answer_written_in_part_stays_counted_by_what_is_left() -> None:
    """The answers owed are counted in bytes too: a part written must leave the count,
    or it would drift up until the reader paused for good."""
    stream = QuarterNowait()
    async with trio.open_nursery() as nursery:
        epoch = Epoch(
            1,
            StreamTransport(stream),
            server="s",
            on_lost=lambda *_: None,
            spawn=nursery.start_soon,
        )
        answer = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
        epoch.queue_answer(answer)
        request = b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
        epoch.send_request(request, _Pending())  # type: ignore[arg-type]
        part = (len(answer) + len(request)) // 4
        assert part < len(answer)  # the answer went out in part
        assert epoch.queued_bytes == len(answer) - part
        nursery.start_soon(epoch.write_loop)
        with trio.fail_after(5):
            while epoch.queued_answers:
                await epoch.wait_for_writes()
        assert (epoch.queued_answers, epoch.queued_bytes) == (0, 0)
        assert stream.data == answer + request
        epoch.end("closed")
