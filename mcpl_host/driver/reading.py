"""Who reads a transport epoch's stream, and the reading itself.

Reading is a role that one task holds at a time. The holder waits for the stream, reads
a chunk, frames it and hands every line to :meth:`Inbound.on_line
<mcpl_host.driver.inbound.Inbound.on_line>` (a response settles its pending request, a
server request goes to its handler, a notification is consumed or passed on) before it
reads again; lines are handled in the order read, by one code path, whoever holds the
role.

The connection's reader task (:meth:`Reading.run`) holds it by default. On a stream whose
read side any task may drive (``wait_readable``, ``receive_nowait`` and
``interrupt_wait``: :class:`~mcpl_host.transports._nonblocking.NonblockingStream`, so
stdio and TCP and Unix sockets), a caller that waits for its answer while nobody holds
the role takes it: its answer is read in the same scheduling round that wakes it,
instead of a round for the reader task and another for the caller. Other
transports (HTTP, WebSocket, memory) keep the reader task as the only reader.

The rules, and what each keeps:

- A chunk read is handled whole by the task that read it, with no checkpoint in
  between: a task cancelled while it waits for the stream has read nothing, and none is
  cancelled halfway through a chunk. The one wait inside a chunk, the pause while too
  many answers are owed (``max_owed_answers``), is always the reader task's: a caller
  that meets it hands the rest of the chunk and the role to the reader task, so a
  caller's timeout or cancellation is never held up by a pause.
- A caller takes the role only when it is vacant, never from another holder; while
  some task holds it, a caller parks on its request until the holder settles it (or its
  timeout passes). A caller gives the role up as soon as its own request is over
  (answered, timed out, cancelled): to the reader task at once when other requests
  still wait for answers (and see the next rule), else the role falls vacant and the
  reader task takes it back within :data:`LINGER` unless a caller claims it first (a
  caller in a loop claims it again at once: that is the single round per call). So the
  stream is read without a pause while any request waits, and within :data:`LINGER`
  when none does: server requests, notifications and the end of the stream are met
  then at the latest (meanwhile the bytes wait in the kernel, as for any busy reader).
- Callers in flight together are served by the reader task, as before the callers read
  (one task reads each burst of answers, and the callers' next requests go out in
  groups: mcpl_host.driver.epoch): a caller whose last chunk answered other requests
  too hands the role to the reader task, and the reader task gives it up only after a
  chunk that answered exactly one request, when no other request with a deadline still
  waits: the caller just answered, alone, will probably call again, and then reads.
- A request with no deadline (``subscriptions/listen``) never leads: it may wait for as
  long as the transport lives, and nobody could take the role from it meanwhile.
- Lines are handled in the reader task's contextvars context, whoever reads them: a
  caller's context never leaks into log events or into the tasks that serve the
  server's requests.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Mapping
from typing import Final, Protocol, cast

import trio

from ..protocol.framing import LineDecoder, OversizedLine
from .epoch import Epoch
from .inbound import Inbound
from .pending import Pending

__all__ = ["LINGER", "Reading"]

_READ_CHUNK: Final = 64 * 1024
# How long a vacant role waits for a caller before the reader task takes it back. Short
# enough that what the server sends between calls is read promptly; long enough that the
# reader task wakes only now and then while callers keep claiming the role (once per
# LINGER: a task switch and a cancel scope, against ≈20 calls on a stdio round trip).
LINGER: Final = 0.002


class _SharedStream(Protocol):
    """A stream whose read side any task may drive (NonblockingStream's methods)."""

    async def wait_readable(self) -> None: ...

    def receive_nowait(self, max_bytes: int) -> bytes | None: ...

    def interrupt_wait(self) -> None: ...


class Reading:
    """The read role of one epoch, and the reading itself (see the module's docstring)."""

    def __init__(self, epoch: Epoch, inbound: Inbound, pending: Mapping[int, Pending]) -> None:
        self.epoch = epoch
        self._inbound = inbound
        self._pending = pending
        stream = epoch.transport.stream
        self._stream = stream
        # Callers may read only a stream whose read side any task can drive.
        self.shared = all(
            callable(getattr(stream, name, None))
            for name in ("wait_readable", "receive_nowait", "interrupt_wait")
        )
        self._shared_stream = cast(_SharedStream, stream)  # used only when shared
        self._framer = LineDecoder(inbound.max_message_bytes)
        # Whoever reads, lines are handled in this context (the reader task's).
        self._context = contextvars.copy_context()
        self.holder: trio.lowlevel.Task | None = None  # None: the role is vacant
        self._on_stream = False  # the holder is parked waiting for the stream
        # The rest of a chunk, left when too many answers were owed; the reader task
        # pauses, then handles it before it reads again.
        self._backlog: list[bytes | OversizedLine] = []
        self._paused = False
        self._reader: trio.lowlevel.Task | None = None
        self._reader_parked = False
        self._idle_scope: trio.CancelScope | None = None
        self._armed = False  # the parked reader task has a deadline
        self._end_reason = "eof"
        self._interrupt = self.interrupt  # bound once: set on every leading request

    # -- the reader task ---------------------------------------------------------------

    async def run(self) -> None:
        """The epoch's reader task: it reads whenever no caller does. Nothing raised by
        a message escapes it; the end of the stream, or a read that fails, ends the
        epoch."""
        me = self._reader = trio.lowlevel.current_task()
        epoch = self.epoch
        inbound = self._inbound
        try:
            while epoch.open:
                if self.holder is None:
                    self.holder = me
                if self.holder is not me:
                    await self._idle(math.inf)  # a caller reads
                    continue
                if self._paused:
                    await self._resume()
                    continue
                if not self.shared:
                    await self._receive_once()
                    continue
                answered = inbound.answered
                await self._read_once(me)
                if (
                    inbound.answered - answered == 1
                    and epoch.open
                    and self.holder is me
                    and not self._paused
                    and not self._requests_waiting()
                ):
                    self.holder = None  # the caller just answered may read next
                    await self._idle(trio.current_time() + LINGER)
        finally:
            self._reader = None
            if epoch.open:
                inbound.on_lost(epoch, self._end_reason)

    async def _idle(self, deadline: float) -> None:
        """Park the reader task until the role is handed to it or the epoch ends, or
        until ``deadline`` (set later by :meth:`_arm` when the role falls vacant)."""
        with trio.CancelScope(deadline=deadline) as scope:
            self._idle_scope = scope
            self._armed = deadline != math.inf
            self._reader_parked = True
            try:
                await trio.lowlevel.wait_task_rescheduled(self._abort_idle)
            finally:
                self._idle_scope = None

    def _abort_idle(self, _: object) -> trio.lowlevel.Abort:
        self._reader_parked = False
        return trio.lowlevel.Abort.SUCCEEDED

    def _wake_reader(self) -> None:
        if self._reader_parked:
            self._reader_parked = False
            assert self._reader is not None
            trio.lowlevel.reschedule(self._reader)

    def _arm(self) -> None:
        """The role fell vacant: the reader task takes it back within LINGER, unless a
        caller claims it first. (A reader not parked takes it when it runs next.)"""
        scope = self._idle_scope
        if self._reader_parked and not self._armed and scope is not None:
            self._armed = True
            scope.deadline = trio.current_time() + LINGER

    def _requests_waiting(self, own: Pending | None = None) -> bool:
        """A request with a deadline (other than ``own``) still waits for its answer on
        this transport."""
        epoch = self.epoch
        for pending in self._pending.values():
            if (
                pending.epoch is epoch
                and not pending.finished
                and not pending.settled
                and pending.deadline != math.inf
                and pending is not own
            ):
                return True
        return False

    async def _resume(self) -> None:
        """The pause while too many answers are owed, then the rest of the chunk."""
        await self._inbound.wait_for_answers(self.epoch)
        if not self.epoch.open:
            return
        backlog, self._backlog = self._backlog, []
        self._paused = False
        self._context.run(self._dispatch, backlog, False)

    # -- a caller ----------------------------------------------------------------------

    async def answer(self, pending: Pending) -> None:
        """Wait, as its caller, for the answer to ``pending`` (a request on this epoch
        with a deadline): read the stream while the role is vacant, else park until the
        holder settles the request. Returns once the request is over, or no longer on
        this epoch, or the epoch has ended (at least one checkpoint whenever it was none
        of these on entry). Cancellable at every wait; a cancelled caller has read
        nothing it did not handle."""
        me = trio.lowlevel.current_task()
        epoch = self.epoch
        inbound = self._inbound
        answered = 0  # requests the last chunk answered
        try:
            while not pending.finished and pending.epoch is epoch and epoch.open:
                if self.holder is None:
                    self.holder = me
                elif self.holder is not me:
                    await pending.wait()  # the holder reads for it (or its timeout)
                    return
                pending.interrupt = self._interrupt
                before = inbound.answered
                await self._read_once(me)
                answered = inbound.answered - before
        finally:
            pending.interrupt = None
            if self.holder is me:
                self._leave(pending, answered)

    def _leave(self, own: Pending, answered: int) -> None:
        """A caller gives the role up: to the reader task at once when other requests
        still wait, or when its last chunk answered others too (callers in flight
        together are served by the reader task); else it falls vacant (see _arm)."""
        if not self.epoch.open:
            self.holder = None
            self._wake_reader()  # it ends
        elif answered > 1 or self._requests_waiting(own):
            self.holder = self._reader
            self._wake_reader()
        else:
            self.holder = None
            self._arm()

    def interrupt(self) -> None:
        """The leading caller's request is over while it waits for the stream (its
        timeout passed, the transport is ending): wake it."""
        if self._on_stream:
            self._shared_stream.interrupt_wait()

    def ended(self) -> None:
        """The epoch ended: the reader task stops, a caller reading looks again."""
        self._wake_reader()
        if self._on_stream and self.holder is not self._reader:
            self._shared_stream.interrupt_wait()

    # -- reading and handling ----------------------------------------------------------

    async def _read_once(self, me: trio.lowlevel.Task) -> None:
        """Wait for the stream, read what is there and handle it (a shared stream)."""
        stream = self._shared_stream
        self._on_stream = True
        try:
            try:
                await stream.wait_readable()
            finally:
                self._on_stream = False
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self._lost()
            return
        # Nobody takes the role from its holder: while this task waited, nobody read.
        assert self.holder is me
        # From here to the end of the chunk: no checkpoint.
        try:
            chunk = stream.receive_nowait(_READ_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self._lost()
            return
        if chunk is None:  # woken by interrupt_wait, or nothing after all
            return
        if not chunk:
            self._end_of_stream()
            return
        if self.epoch.telemetry is not None:  # one add per chunk read
            self.epoch.telemetry.io("receive", len(chunk))
        self._context.run(self._dispatch, self._framer.feed(chunk), True)

    async def _receive_once(self) -> None:
        """Read and handle one chunk (a stream only the reader task reads)."""
        try:
            chunk = await self._stream.receive_some(_READ_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self._lost()
            return
        if not chunk:
            self._end_of_stream()
            return
        if self.epoch.telemetry is not None:
            self.epoch.telemetry.io("receive", len(chunk))
        self._context.run(self._dispatch, self._framer.feed(chunk), True)

    def _dispatch(self, items: list[bytes | OversizedLine], burst: bool) -> None:
        epoch = self.epoch
        inbound = self._inbound
        if burst and len(items) > 1:
            epoch.expect_burst(len(self._pending))
        for index, item in enumerate(items):
            inbound.on_line(epoch, item)
            if inbound.owes_too_much(epoch):
                # The reader task pauses, then handles the rest (it may be the one
                # here; else a caller hands it the role and parks or returns).
                assert self._reader is not None  # it runs while the epoch is open
                self._backlog = items[index + 1 :]
                self._paused = True
                self.holder = self._reader
                self._wake_reader()
                return

    def _end_of_stream(self) -> None:
        items = self._framer.close()
        for item in items:
            self._context.run(self._inbound.on_line, self.epoch, item)
        # A transport may say why it ended (stdio: "exited"; HTTP: "session-expired").
        self._lost(getattr(self._stream, "end_reason", None) or "eof")

    def _lost(self, reason: str | None = None) -> None:
        epoch = self.epoch
        if reason is None:
            reason = "read-failed" if epoch.open else "closed"
        self._end_reason = reason
        if epoch.open:
            self._inbound.on_lost(epoch, reason)
