"""A child's stdin and stdout as one trio stream, with fewer scheduler rounds per message.

trio's ``FdStream`` yields to the scheduler before every read and every write and then
tries the system call, so a reader that has just drained the pipe pays a full scheduling
round and a failed ``read`` before it even starts waiting. Measured on the benchmark's
round trip that was a sixth of the client's time. This stream is a
:class:`~mcpl_host.transports._nonblocking.NonblockingStream` over the two pipes: the
system calls in the order the situation makes likely to succeed, and a read side that
the task waiting for an answer may drive itself. The ``FdStream`` objects stay the
owners of the file descriptors: closing goes through them (``notify_closing`` wakes any
waiter).

Once the child has exited (``end_after_exit``), reading no longer waits: what is
readable is returned, up to a bound, and then the end of the stream, even while a process
the child started still holds the pipe open (``end_reason`` is then ``"exited"``; a pipe
that reached its own EOF leaves it None).
"""

from __future__ import annotations

import trio

from ._nonblocking import NonblockingStream

__all__ = ["PipeStream"]


class PipeStream(NonblockingStream):
    """Writes to ``send`` and reads from ``receive`` (the parent's ends of two pipes)."""

    def __init__(self, send: trio.lowlevel.FdStream, receive: trio.lowlevel.FdStream) -> None:
        super().__init__(send.fileno(), receive.fileno())
        self._send = send
        self._receive = receive

    async def close_send(self) -> None:
        """Close the child's stdin (end of input); reading goes on."""
        self._send_closed = True
        await self._send.aclose()

    async def aclose(self) -> None:
        self._send_closed = self._receive_closed = True
        try:
            await self._send.aclose()
        finally:
            await self._receive.aclose()
