"""A transport epoch: one transport's lifetime, and the answers bound to it.

Everything that belongs to one transport lives here: its outbox and its one writer, its
negotiated profile, its handshake, and the server requests read on it. A responder writes through
its epoch, so an answer can only ever reach the transport its request came on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

import trio

from .._log import get_logger
from ..protocol.batch import BatchAnswers
from ..protocol.discover import Discovery, Fallback, Retry
from ..protocol.envelope import RequestId
from ..protocol.errors import ConnectionClosed
from ..protocol.handshake import Established, Failed, Handshake
from ..protocol.messages import ErrorAnswer, ResultAnswer, encode
from ..protocol.profiles import Profile
from ..transports import Transport
from .pending import Pending
from .responder import Responder

if TYPE_CHECKING:
    from ..telemetry._otel import ConnectionSpan, Instruments

__all__ = ["DEFAULT_WRITE_TIMEOUT", "BatchReply", "BatchSlot", "Epoch", "Flush", "ReadRole"]

_log = get_logger("mcpl_host.connection")
# A write the peer does not take within this long (it stopped reading) ends the
# transport: long enough for any server that reads at all, short enough that a deaf one
# cannot hold the host's answers for long.
DEFAULT_WRITE_TIMEOUT: Final = 30.0


class ReadRole(Protocol):
    """Who reads the epoch's stream (mcpl_host.driver.reading.Reading)."""

    # Callers may read it themselves (else only the reader task reads).
    shared: bool

    async def answer(self, pending: Pending) -> None:
        """Wait for ``pending``'s answer as its caller, reading when nobody else does."""
        ...

    def ended(self) -> None:
        """The epoch ended: whoever waits to read looks again."""
        ...


class Epoch:
    """One transport's lifetime: its stream, outbox, profile and inbound work.

    ``on_lost(epoch, reason)`` is called (once) when a write fails; ``spawn`` starts a
    task in the connection's nursery; ``on_wire(direction, line)`` sees every line
    written (a wire trace); ``telemetry`` counts the bytes written and read, and serves
    the spans of the server's requests read on it (None: off).
    """

    def __init__(
        self,
        number: int,
        transport: Transport,
        *,
        server: str,
        on_lost: Callable[[Epoch, str], None],
        spawn: Callable[..., None],
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        log: Any = None,
        on_wire: Callable[[str, bytes], None] | None = None,
        telemetry: Instruments | None = None,
    ) -> None:
        self.epoch_number = number
        self.telemetry = telemetry
        # The mcpl_host.connect span that opened this transport (linked from a reconnect).
        self.connect_span: ConnectionSpan | None = None
        self.write_timeout = write_timeout
        self.transport = transport
        self.server = server
        self.on_lost = on_lost
        self.spawn = spawn
        self.on_wire = on_wire
        # Lines wait here for the epoch's one writer task (write_loop), which sends all
        # that queued up since its last write in one send_all: concurrent callers share a
        # system call, and no caller is ever cancelled halfway through a line.
        self._outbox: list[_Entry] = []
        self._writing = False  # the writer is in send_all
        # The reader just handed out several answers, whose callers all run in the next
        # scheduler round: their requests are written in groups of half the requests
        # that were in flight, not one system call each, and not all in one: the server
        # works on the first group while the next is made (measured on 2 cores with 64
        # in flight: 53k calls/s one write each, 64k in groups of 32, 47k of 64).
        self._group = 0
        # A stream that can write without waiting lets a caller skip the writer task
        # when nothing is queued (one task switch less per request).
        self._send_nowait: Callable[[bytes | memoryview], int] | None = getattr(
            transport.stream, "send_nowait", None
        )
        self._flush: Flush | None = None  # what callers of write() wait on
        self._work = trio.Event()
        self.on_late_write: Callable[[Epoch, Pending], None] | None = None
        self.profile: Profile | None = None
        # The exchange that opens the epoch (initialize, or server/discover) and what it
        # settled; the driver may run a second one after a Fallback or a Retry.
        self.handshake: Handshake | Discovery | None = None
        self.handshake_step: Established | Failed | Fallback | Retry | None = None
        self.handshake_done = trio.Event()
        # When the handshake's time is up (initialize_timeout): a handshake request
        # cancelled past it timed out, one cancelled before was cancelled.
        self.handshake_deadline = math.inf
        # The write carrying notifications/initialized, queued by the reader.
        self.initialized: Flush | None = None
        # When the handshake finished (Connected or Reconnected was due); None before.
        self.connected_at: float | None = None
        self.open = True
        self.reading: ReadRole | None = None  # set by the driver before it reads
        self.end_reason: str | None = None
        self.ended = trio.Event()
        # Server requests in flight (by id, or a private key for id null), so that
        # notifications/cancelled and the epoch's end can cancel them.
        self.inbound: dict[Any, trio.CancelScope] = {}
        # Answers queued by the reader itself (refusals, pings, invalid requests, a
        # batch's array), not yet written: the reader stops reading while too many wait.
        self.queued_answers = 0
        self.queued_bytes = 0  # their bytes: an answer repeats the peer's id
        self.unwritten_answers = 0  # queued answers the transport ended before writing
        self._written = trio.Event()  # set after each write, and when the epoch ends
        self.log = (log if log is not None else _log).bind(server=server, epoch=number)

    def closed_error(self, *, outcome_unknown: bool) -> ConnectionClosed:
        reason = self.end_reason or "closed"
        text = "connection lost, outcome unknown" if outcome_unknown else "connection closed"
        return ConnectionClosed(
            f"{text} ({reason})", reason=reason, outcome_unknown=outcome_unknown, server=self.server
        )

    def send_request(self, line: bytes, pending: Pending) -> None:
        """Queue a request's line, and write the queue at once when the stream can take
        it without waiting: alone, or (right after the reader handed out several
        answers) once half as many lines have gathered. ``pending.written`` becomes true
        once the line is whole on the wire; a request settled before its turn in the
        queue is never sent."""
        self._outbox.append((line, pending, False, False))
        if (
            self._send_nowait is None
            or self._writing
            or self._flush is not None
            or len(self._outbox) < self._group
        ):
            self._work.set()  # the writer sends it (with whatever joins it meanwhile)
            return
        self._write_now(self._send_nowait)

    def _write_now(self, send_nowait: Callable[[bytes | memoryview], int]) -> None:
        """Write the queue as far as the stream takes it without waiting; the rest stays
        queued for the writer."""
        batch = _due(self._outbox)
        try:
            sent = send_nowait(_joined(batch))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            sent = 0  # the writer meets the same error and ends the epoch
        if self.telemetry is not None and sent:
            self.telemetry.io("transmit", sent)
        written: list[_Entry] = []
        rest: list[_Entry] = []
        for entry in batch:
            line, pending, _, answer = entry
            if sent >= len(line):
                sent -= len(line)
                written.append(entry)
            elif sent:
                # Part of the line is out: the rest must follow, whatever the caller does.
                if self.on_wire is not None:
                    self.on_wire("out", bytes(line).rstrip(b"\n"))
                rest.append((memoryview(line)[sent:], pending, True, answer))
                if answer:  # the rest stays counted, by its own length
                    self.queued_bytes -= sent
                sent = 0
            else:
                rest.append(entry)
        self._outbox = rest
        self._mark_written(written)
        self._trace(written)
        if rest:
            self._work.set()

    async def write(self, data: bytes) -> None:
        """Write one line (or batch) and return once it is on the wire.

        Raises :class:`ConnectionClosed` when the epoch is over or the write fails.
        """
        if not self.open:
            raise self.closed_error(outcome_unknown=False)
        await self.written(self.enqueue(data))

    def enqueue(self, data: bytes) -> Flush:
        """Queue one line without waiting; :meth:`written` waits for it."""
        flush = self._flush
        if flush is None:
            flush = self._flush = Flush()
        self._outbox.append((data, None, True, False))
        self._work.set()
        return flush

    async def written(self, flush: Flush) -> None:
        """Return once the write that carries a line :meth:`enqueue` queued is done.

        Raises :class:`ConnectionClosed` when that write failed or the epoch ended first.
        """
        await flush.done.wait()
        if not flush.ok:
            raise self.closed_error(outcome_unknown=False)

    def expect_burst(self, in_flight: int) -> None:
        """Several answers were just read at once, with ``in_flight`` requests waiting
        before them: group the requests that follow."""
        self._group = in_flight // 2

    def end(self, reason: str) -> None:
        """Nothing more is written to this epoch; its writer stops."""
        self.open = False
        self.end_reason = reason
        self._work.set()
        self._written.set()
        if self.reading is not None:
            self.reading.ended()

    def queue_answer(self, line: bytes) -> bool:
        """Queue an answer the reader gives at once (a refusal, a ping's answer, a
        batch's array): no task waits for it, and it counts toward the answers owed
        until it is written. False when the transport has ended."""
        if not self.open:
            self.unwritten_answers += 1
            return False
        self._outbox.append((line, None, True, True))
        self.queued_answers += 1
        self.queued_bytes += len(line)
        self._work.set()
        return True

    async def wait_for_writes(self) -> None:
        """Return after the writer's next write, or when the epoch ends."""
        if self._written.is_set():
            self._written = trio.Event()
        if self.open:
            await self._written.wait()

    async def write_loop(self) -> None:
        """The epoch's one writer: everything queued since its last write, in one
        send_all. A failed write, or one that takes longer than ``write_timeout`` (a
        peer that stopped reading), ends the epoch."""
        try:
            while self.open:
                if not self._outbox:
                    await self._work.wait()
                    self._work = trio.Event()
                    continue
                batch, self._outbox = self._outbox, []
                flush, self._flush = self._flush, None
                self._group = 0
                ok = await self._write_batch(batch)
                if flush is not None:
                    flush.ok = ok
                    flush.done.set()  # not ok: its callers get ConnectionClosed
                if not ok:
                    return
        finally:
            if self._flush is not None:
                self._flush.done.set()
            self._forget(self._outbox)
            self._outbox.clear()
            self._written.set()
            if self.unwritten_answers:
                # One line for all of them: a flood of requests must not become a
                # flood of log lines at close. Closing on purpose drops them too.
                closing = self.end_reason == "closed"
                (self.log.info if closing else self.log.warning)(
                    "answers not written",
                    count=self.unwritten_answers,
                    reason=f"the transport ended ({self.end_reason or 'closed'})",
                )

    def _forget(self, entries: list[_Entry]) -> None:
        """Queued answers that will never be written: counted, for one log line."""
        for entry in entries:
            if entry[3]:
                self.queued_answers -= 1
                self.queued_bytes -= len(entry[0])
                self.unwritten_answers += 1

    async def _write_batch(self, batch: list[_Entry]) -> bool:
        sent = _due(batch)
        if not sent:
            return True
        self._writing = True
        reason = "write-timeout"
        data = _joined(sent)
        try:
            with trio.move_on_after(self.write_timeout):
                await self.transport.stream.send_all(data)
                reason = ""
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            reason = "write-failed"
        finally:
            self._writing = False
        if reason:
            # Every line but the last may be whole on the wire (send_all fails only with
            # bytes left to send): its requests count as written, so that only those
            # safe to repeat are ever sent again; its answers count as not written.
            self._mark_written([entry for entry in sent[:-1] if not entry[3]])
            self._forget(sent)
            self.on_lost(self, reason)
            return False
        self._mark_written(sent)
        self._trace(sent)
        if self.telemetry is not None:  # one add per write: the batch's bytes
            self.telemetry.io("transmit", len(data))
        self._written.set()
        return True

    def _trace(self, sent: list[_Entry]) -> None:
        if self.on_wire is not None:
            for line, pending, must, _ in sent:
                if not (must and pending):  # the rest of a line traced already
                    self.on_wire("out", bytes(line).rstrip(b"\n"))

    def _mark_written(self, sent: list[_Entry]) -> None:
        for line, pending, _, answer in sent:
            if answer:
                self.queued_answers -= 1
                self.queued_bytes -= len(line)
                self._written.set()  # a paused reader may read on
            elif pending is not None and pending.epoch is self:
                pending.written = True
                if pending.abandoned and self.on_late_write is not None:
                    self.on_late_write(self, pending)  # its caller stopped waiting meanwhile

    async def deliver(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> bool:
        """A responder's single answer: written here or nowhere."""
        return await self.write_answer(encode(answer), responder)

    def queue(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> None:
        """A responder's single answer, given at once by the reader: queued here or
        nowhere."""
        if not self.queue_answer(encode(answer)):
            self.log.info(
                "not answering request",
                **responder.log_fields(),
                reason=f"its transport (epoch {self.epoch_number}) has closed",
            )

    def withdraw(self, responder: Responder) -> None:
        pass  # a single request withdrawn simply gets no answer

    async def write_answer(self, line: bytes, responder: Responder) -> bool:
        """Write an answer (or a batch's answer array) on this epoch only."""
        reason = None
        if self.open:
            try:
                await self.write(line)
            except ConnectionClosed:
                reason = "the write failed"
            else:
                return True
        self.log.warning(
            "not answering request",
            **responder.log_fields(),
            reason=reason or f"its transport (epoch {self.epoch_number}) has closed",
        )
        return False

    def track(self, request_id: RequestId, scope: trio.CancelScope) -> Any:
        """Remember a server request in flight; returns the key to forget it by."""
        key: Any = request_id
        if key is None or key in self.inbound:
            # id null cannot be cancelled by id; a duplicate id (the peer's error) must not
            # hide the first request. Either still counts toward the in-flight bound.
            key = object()
        self.inbound[key] = scope
        return key


# An outbox entry: the bytes, the request they carry (None for write()'s lines), whether
# they must go out even if that request settled (part of it is out already), and whether
# they are an answer the reader queued (counted in queued_answers until written).
_Entry: TypeAlias = tuple[bytes | memoryview, Pending | None, bool, bool]


def _due(entries: list[_Entry]) -> list[_Entry]:
    """What still goes out: a request settled before its turn is dropped."""
    return [e for e in entries if e[2] or e[1] is None or not e[1].settled]


def _joined(entries: list[_Entry]) -> bytes | memoryview:
    return entries[0][0] if len(entries) == 1 else b"".join(e[0] for e in entries)


class Flush:
    """One write of the writer task, for the callers of :meth:`Epoch.write` in it."""

    __slots__ = ("done", "ok")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.ok = False


class BatchReply:
    """An inbound batch's answers, and whether their array went out: written once, by
    whichever answer completes it (the reader's own, or a handler's)."""

    __slots__ = ("answers", "sent")

    def __init__(self, answers: BatchAnswers) -> None:
        self.answers = answers
        self.sent = False

    def line(self) -> bytes | None:
        """The array to write now: None until the batch is complete, once it went out,
        or when it held no request."""
        if self.sent or not self.answers.complete:
            return None
        self.sent = True
        return self.answers.encode()


class BatchSlot:
    """A responder's answer for one entry of an inbound batch."""

    __slots__ = ("epoch", "epoch_number", "index", "reply")

    def __init__(self, epoch: Epoch, reply: BatchReply, index: int) -> None:
        self.epoch = epoch
        self.epoch_number = epoch.epoch_number
        self.reply = reply
        self.index = index

    async def deliver(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> bool:
        self.reply.answers.fill(self.index, answer)
        return await self._flush(responder)

    def queue(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> None:  # noqa: ARG002 - AnswerSink's signature
        self.reply.answers.fill(self.index, answer)
        self._queue_if_complete()

    def withdraw(self, responder: Responder) -> None:  # noqa: ARG002 - AnswerSink's signature
        self.reply.answers.drop(self.index)
        self._queue_if_complete()

    def _queue_if_complete(self) -> None:
        line = self.reply.line()
        if line is not None:
            self.epoch.queue_answer(line)

    async def _flush(self, responder: Responder) -> bool:
        line = self.reply.line()
        if line is None:
            return True  # the array goes out with the last answer (or went already)
        return await self.epoch.write_answer(line, responder)
