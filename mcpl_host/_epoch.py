"""A transport epoch: one transport's lifetime, and the answers bound to it.

Everything that belongs to one transport lives here: its write lock, its negotiated
profile, its handshake, and the server requests read on it. A responder writes through
its epoch, so an answer can only ever reach the transport its request came on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
import trio

from .protocol.batch import BatchAnswers
from .protocol.envelope import RequestId
from .protocol.errors import ConnectionClosed
from .protocol.handshake import Established, Failed, Handshake
from .protocol.messages import ErrorAnswer, ResultAnswer, encode
from .protocol.profiles import Profile
from .responder import Responder
from .transports import Transport

__all__ = ["BatchSlot", "Epoch"]

_log = structlog.get_logger("mcpl_host.connection")


class Epoch:
    """One transport's lifetime: its stream, write lock, profile and inbound work.

    ``on_lost(epoch, reason)`` is called (once) when a write fails; ``spawn`` starts a
    task in the connection's nursery; ``on_wire(direction, line)`` sees every line
    written (a wire trace).
    """

    def __init__(
        self,
        number: int,
        transport: Transport,
        *,
        server: str,
        on_lost: Callable[[Epoch, str], None],
        spawn: Callable[..., None],
        on_wire: Callable[[str, bytes], None] | None = None,
    ) -> None:
        self.epoch_number = number
        self.transport = transport
        self.server = server
        self.on_lost = on_lost
        self.spawn = spawn
        self.on_wire = on_wire
        self.write_lock = trio.StrictFIFOLock()
        self.profile: Profile | None = None
        self.handshake: Handshake | None = None
        self.handshake_step: Established | Failed | None = None
        self.handshake_done = trio.Event()
        self.open = True
        self.end_reason: str | None = None
        self.ended = trio.Event()
        # Server requests in flight (by id, or a private key for id null), so that
        # notifications/cancelled and the epoch's end can cancel them.
        self.inbound: dict[Any, trio.CancelScope] = {}
        self.log = _log.bind(server=server, epoch=number)

    def closed_error(self, *, outcome_unknown: bool) -> ConnectionClosed:
        reason = self.end_reason or "closed"
        text = "connection lost, outcome unknown" if outcome_unknown else "connection closed"
        return ConnectionClosed(
            f"{text} ({reason})", reason=reason, outcome_unknown=outcome_unknown, server=self.server
        )

    async def write(self, data: bytes) -> None:
        """Write one line (or batch). A failed write ends the epoch.

        Raises :class:`ConnectionClosed` when the epoch is over or the write fails.
        """
        if not self.open:
            raise self.closed_error(outcome_unknown=False)
        lock = self.write_lock
        # Uncontended, take the lock without the extra scheduling round its acquire()
        # costs; send_all checkpoints anyway.
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            await lock.acquire()
        try:
            if not self.open:
                raise self.closed_error(outcome_unknown=False)
            await self.transport.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self.on_lost(self, "write-failed")
            raise self.closed_error(outcome_unknown=False) from exc
        finally:
            lock.release()
        if self.on_wire is not None:
            self.on_wire("out", data.rstrip(b"\n"))

    async def write_quietly(self, line: bytes) -> None:
        """Write an answer that has no responder (a refused batch); log if it cannot go."""
        try:
            await self.write(line)
        except ConnectionClosed:
            self.log.warning("answer not written", reason="the transport has closed")

    async def deliver(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> bool:
        """A responder's single answer: written here or nowhere."""
        return await self.write_answer(encode(answer), responder)

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
            request_id=responder.id,
            method=responder.method,
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


class BatchSlot:
    """A responder's answer for one entry of an inbound batch."""

    __slots__ = ("answers", "epoch", "epoch_number", "index")

    def __init__(self, epoch: Epoch, answers: BatchAnswers, index: int) -> None:
        self.epoch = epoch
        self.epoch_number = epoch.epoch_number
        self.answers = answers
        self.index = index

    async def deliver(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> bool:
        self.answers.fill(self.index, answer)
        return await self._flush(responder)

    def withdraw(self, responder: Responder) -> None:
        self.answers.drop(self.index)
        if self.answers.complete:
            self.epoch.spawn(self._flush, responder)

    async def _flush(self, responder: Responder) -> bool:
        if not self.answers.complete:
            return True  # the array goes out with the last answer
        line = self.answers.encode()
        if line is None:
            return True
        return await self.epoch.write_answer(line, responder)
