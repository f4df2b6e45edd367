"""The read side any task may drive (NonblockingStream): waiting consumes nothing, an
interrupt wakes the waiter and nothing else, the end and a closed stream are told apart;
over the pipe stream of stdio and the direct socket stream of TCP and Unix sockets."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing

from mcpl_host.transports._nonblocking import NonblockingStream
from mcpl_host.transports._pipes import PipeStream
from mcpl_host.transports.sockets import DirectSocketStream, open_tcp, open_unix
from mcpl_host.transports.targets import TcpTarget, UnixTarget

from .test_sockets import serve_tcp, serve_unix


@asynccontextmanager
async def pipe_streams() -> AsyncIterator[tuple[PipeStream, PipeStream]]:
    """Two pipe streams, each writing what the other reads."""
    a_r, a_w = os.pipe()
    b_r, b_w = os.pipe()
    one = PipeStream(trio.lowlevel.FdStream(a_w), trio.lowlevel.FdStream(b_r))
    other = PipeStream(trio.lowlevel.FdStream(b_w), trio.lowlevel.FdStream(a_r))
    try:
        yield one, other
    finally:
        await one.aclose()
        await other.aclose()


@asynccontextmanager
async def socket_streams() -> AsyncIterator[tuple[DirectSocketStream, DirectSocketStream]]:
    """Two direct socket streams over a connected socket pair."""
    left, right = trio.socket.socketpair()
    one = DirectSocketStream(trio.SocketStream(left))
    other = DirectSocketStream(trio.SocketStream(right))
    try:
        yield one, other
    finally:
        await one.aclose()
        await other.aclose()


Pair = Callable[[], AbstractAsyncContextManager[tuple[NonblockingStream, NonblockingStream]]]
STREAMS: list[Pair] = [pipe_streams, socket_streams]


@pytest.mark.parametrize("streams", STREAMS)
async def test_nothing_to_read_is_none_and_the_end_is_empty(streams: Pair) -> None:
    with trio.fail_after(5):
        async with streams() as (one, other):
            assert one.receive_nowait(100) is None
            await other.send_all(b"hello\n")
            await one.wait_readable()
            assert one.receive_nowait(100) == b"hello\n"
            assert one.receive_nowait(100) is None
            if isinstance(other, PipeStream):
                await other.close_send()
            else:
                assert isinstance(other, DirectSocketStream)
                other.socket_stream.socket.shutdown(socket.SHUT_WR)
            await one.wait_readable()
            assert one.receive_nowait(100) == b""


@pytest.mark.parametrize("streams", STREAMS)
async def test_an_interrupt_wakes_the_waiter_and_consumes_nothing(streams: Pair) -> None:
    with trio.fail_after(5):
        async with streams() as (one, other):
            woken = trio.Event()

            async def wait() -> None:
                await one.wait_readable()
                woken.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait)
                await trio.testing.wait_all_tasks_blocked()
                one.interrupt_wait()
                await woken.wait()
            assert one.receive_nowait(100) is None  # woken with nothing to read
            await other.send_all(b"after\n")
            assert await one.receive_some(100) == b"after\n"  # and waiting works again


@pytest.mark.parametrize("streams", STREAMS)
async def test_a_waiter_cancelled_has_read_nothing(streams: Pair) -> None:
    with trio.fail_after(5):
        async with streams() as (one, other):
            with trio.move_on_after(0.05) as scope:
                await one.wait_readable()
            assert scope.cancelled_caught
            await other.send_all(b"whole\n")
            assert await one.receive_some(100) == b"whole\n"


@pytest.mark.parametrize("streams", STREAMS)
async def test_closing_wakes_the_waiter_with_closed(streams: Pair) -> None:
    with trio.fail_after(5):
        async with streams() as (one, _):

            async def close_soon() -> None:
                await trio.testing.wait_all_tasks_blocked()
                await one.aclose()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(close_soon)
                with pytest.raises(trio.ClosedResourceError):
                    await one.wait_readable()
            with pytest.raises(trio.ClosedResourceError):
                one.receive_nowait(100)
            one.interrupt_wait()  # a closed stream: nothing to wake, no error


async def test_an_interrupt_leaves_a_socket_writer_waiting_to_write_intact() -> None:
    """One descriptor both ways: interrupting the reader wakes a writer parked on the
    full socket too, and that writer just carries on; every byte arrives, in order."""
    data = bytes(range(256)) * 8192  # 2 MiB: far more than the socket buffers hold
    received = bytearray()
    with trio.fail_after(10):
        async with socket_streams() as (one, other):

            async def read_all() -> None:
                await trio.sleep(0.05)  # the writer fills the buffers first
                while len(received) < len(data):
                    received.extend(await other.receive_some(65536))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(one.send_all, data)
                nursery.start_soon(one.wait_readable)  # the read side waits too
                await trio.testing.wait_all_tasks_blocked()
                one.interrupt_wait()  # wakes the reader and the writer
                nursery.start_soon(read_all)
    assert bytes(received) == data


async def test_tcp_and_unix_transports_use_the_direct_socket_stream(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await serve_tcp(nursery)
            transport = await open_tcp(TcpTarget("127.0.0.1", port))
            assert isinstance(transport.stream, DirectSocketStream)
            assert isinstance(transport.stream, NonblockingStream)
            await transport.aclose()
            if hasattr(socket, "AF_UNIX"):
                path = tmp_path / "s.sock"
                await serve_unix(nursery, path)
                transport = await open_unix(UnixTarget(str(path)))
                assert isinstance(transport.stream, DirectSocketStream)
                await transport.aclose()
            nursery.cancel_scope.cancel()


async def test_a_full_read_is_followed_by_a_read_without_waiting() -> None:
    """After a read that filled the buffer the next wait is only a checkpoint (more is
    probably there), so a reader drains a burst without an I/O wait per chunk."""
    with trio.fail_after(5):
        async with pipe_streams() as (one, other):
            await other.send_all(b"x" * 300)
            assert await one.receive_some(100) == b"x" * 100
            # Only a checkpoint: it returns even with the peer's bytes all read later.
            await one.wait_readable()
            assert one.receive_nowait(200) == b"x" * 200
            assert one.receive_nowait(200) is None
