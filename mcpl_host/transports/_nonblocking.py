"""A trio stream over non-blocking file descriptors, readable by whichever task holds
the connection's read role.

trio's ``FdStream`` and ``SocketStream`` yield to the scheduler around every system
call: before it, and (sockets) after a successful ``recv`` too. This stream makes the
system calls in the order the situation makes likely to succeed, with no scheduling
round that is not a wait:

- a read after a short read (the descriptor was drained) waits for readability first; a
  read after a full one (more is probably there) reads at once, after a checkpoint so
  that a flooding peer cannot starve the other tasks;
- a write goes straight to ``write``, and waits only if the descriptor is full;
  ``send_nowait`` lets a caller write without a task switch when nothing is queued.

Its read side is split in two so that the connection can let a task that waits for an
answer read it itself (mcpl_host.driver.reading): :meth:`NonblockingStream.wait_readable`
waits (and consumes nothing: a task cancelled there loses no byte),
:meth:`NonblockingStream.receive_nowait` reads what is there without waiting, and
:meth:`NonblockingStream.interrupt_wait` wakes the task parked in ``wait_readable``
(trio's ``notify_closing``; the descriptor stays open and the woken task just looks
again). ``receive_some`` is the two halves in a loop, for every other reader.

A stream whose producer can exit while another process holds its end open (a stdio
child's stdout) is ended by :meth:`NonblockingStream.end_after_exit`: reads then return
what is there without waiting, boundedly, and then the end of the stream.

Cancellation is checked on entry to every operation. Closing goes through the owners of
the descriptors (a subclass's ``aclose``), which wake any waiter.
"""

from __future__ import annotations

import errno
import os

import trio

__all__ = ["NonblockingStream"]

_DEFAULT_READ = 64 * 1024


class NonblockingStream(trio.abc.Stream):
    """Writes to ``send_fd``, reads from ``receive_fd`` (one descriptor for a socket,
    two for a pair of pipes); a subclass closes them."""

    def __init__(self, send_fd: int, receive_fd: int) -> None:
        self._send_fd = send_fd
        self._receive_fd = receive_fd
        self._send_closed = False
        self._receive_closed = False
        self._full = False  # the last read filled the buffer: more is probably waiting
        # The producer is gone (end_after_exit): reads return what is there, never
        # wait, and then the end.
        self._draining = False
        self._drain_left = 0
        self.end_reason: str | None = None  # "exited" when it ended so

    # -- writing -----------------------------------------------------------------------

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        with memoryview(data) as view:
            sent, length = 0, len(view)
            while sent < length:
                if self._send_closed:
                    raise trio.ClosedResourceError("the stream was closed")
                try:
                    sent += os.write(self._send_fd, view[sent:])
                except BlockingIOError:
                    await self._wait_writable()
                except OSError as exc:
                    raise _translate(exc) from exc

    def send_nowait(self, data: bytes | memoryview) -> int:
        """Write what the descriptor takes now, without waiting; returns the bytes
        written.

        Raises ``trio.ClosedResourceError`` or ``trio.BrokenResourceError`` like
        :meth:`send_all`.
        """
        if self._send_closed:
            raise trio.ClosedResourceError("the stream was closed")
        try:
            return os.write(self._send_fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise _translate(exc) from exc

    async def wait_send_all_might_not_block(self) -> None:
        if self._send_closed:
            raise trio.ClosedResourceError("the stream was closed")
        await self._wait_writable()

    async def _wait_writable(self) -> None:
        try:
            await trio.lowlevel.wait_writable(self._send_fd)
        except trio.ClosedResourceError:
            if self._send_closed:
                raise
            # One descriptor both ways (a socket): interrupt_wait() woke the writer
            # too. It tries again.

    # -- reading -----------------------------------------------------------------------

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if max_bytes is None:
            max_bytes = _DEFAULT_READ
        while True:
            await self.wait_readable()
            data = self.receive_nowait(max_bytes)
            if data is not None:
                return data

    async def wait_readable(self) -> None:
        """Return once a read will probably find something (or the end), or when
        :meth:`interrupt_wait` is called. A checkpoint; consumes nothing.

        Raises ``trio.ClosedResourceError`` once the stream is closed.
        """
        if self._receive_closed:
            raise trio.ClosedResourceError("the stream was closed")
        if self._full or self._draining:
            await trio.lowlevel.checkpoint()
            return
        try:
            await trio.lowlevel.wait_readable(self._receive_fd)
        except trio.ClosedResourceError:
            if self._receive_closed:
                raise
            # interrupt_wait() woke us: the caller looks again.

    def receive_nowait(self, max_bytes: int) -> bytes | None:
        """What is readable now, at most ``max_bytes``: None when nothing is, ``b""``
        at the end of the stream.

        Raises ``trio.ClosedResourceError`` once the stream is closed,
        ``trio.BrokenResourceError`` when the read fails.
        """
        if self._receive_closed:
            raise trio.ClosedResourceError("the stream was closed")
        if self._draining:
            return self._drain(max_bytes)
        try:
            data = os.read(self._receive_fd, max_bytes)
        except BlockingIOError:
            self._full = False
            return None
        except OSError as exc:
            raise _translate(exc) from exc
        self._full = len(data) == max_bytes
        return data

    def end_after_exit(self, drain_bytes: int) -> None:
        """The producer has exited (a stdio child): from now on a read returns what is
        readable at once, at most ``drain_bytes`` more in all, and then the end of the
        stream, even if a process it started keeps the pipe open (or keeps writing). A
        reader waiting now is woken."""
        if self._draining or self._receive_closed:
            return
        self._draining = True
        self._drain_left = drain_bytes
        # Wakes a reader parked in wait_readable, which then reads on without waiting;
        # the descriptor stays open.
        self.interrupt_wait()

    def _drain(self, max_bytes: int) -> bytes:
        if self._drain_left <= 0:
            self.end_reason = "exited"  # more may come, but the server is gone
            return b""
        try:
            data = os.read(self._receive_fd, min(max_bytes, self._drain_left))
        except BlockingIOError:
            self.end_reason = "exited"  # nothing more now, yet someone holds the pipe
            return b""
        except OSError as exc:
            raise _translate(exc) from exc
        self._drain_left -= len(data)
        return data

    def interrupt_wait(self) -> None:
        """Wake the task parked in :meth:`wait_readable`, if any; it returns and looks
        again. The descriptor stays open."""
        if not self._receive_closed:
            trio.lowlevel.notify_closing(self._receive_fd)


def _translate(exc: OSError) -> trio.ClosedResourceError | trio.BrokenResourceError:
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("the stream was closed")
    return trio.BrokenResourceError(str(exc))
