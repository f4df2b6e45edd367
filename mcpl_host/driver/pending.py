"""The host's own requests while they wait: the pending entry and progress reporting."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import msgspec
import trio
from msgspec import UNSET, Raw

from ..protocol.errors import McplHostError
from .foreign import host, in_trio_task

if TYPE_CHECKING:
    from ..telemetry._otel import RequestTrace

__all__ = ["PROGRESS", "Pending", "ProgressCallback", "result_decoder", "with_progress_token"]

ProgressCallback: TypeAlias = Callable[[float, float | None, str | None], None]
"""``on_progress(progress, total, message)``; total and message may be None."""


class Pending:
    """One request of the host's, from the caller's call until its answer or its end.

    It outlives transports: when one is lost the request may be rebound onto the next
    with a new id (``id`` and ``epoch`` then change), while the caller keeps waiting on
    the same object.
    """

    __slots__ = (
        "abandoned",
        "deadline",
        "epoch",
        "error",
        "finished",
        "foreign",
        "id",
        "interrupt",
        "method",
        "on_progress",
        "on_settle",
        "params",
        "pinned",
        "progress_reset",
        "rebind",
        "reissued",
        "result",
        "seq",
        "settled",
        "timed_out",
        "trace",
        "waiter",
        "written",
    )

    def __init__(
        self, seq: int, method: str, params: Any, deadline: float, rebind: bool | None
    ) -> None:
        self.seq = seq  # the first id: the order of the calls, and the progress token
        self.method = method
        self.params = params
        self.deadline = deadline
        self.rebind = rebind
        # Bound to the transport it is first sent on: never moved to another, whatever
        # the rebinding rule says (what allowed it there, a grant say, is not the next
        # transport's to give).
        self.pinned = False
        # Times it was sent again on the same transport after its response stream broke
        # (2026-07-28 over HTTP): bounded, so a server that always cuts cannot loop it.
        self.reissued = 0
        self.id: int | None = None  # the id on the wire now; None while queued
        self.epoch: Any = None  # the transport epoch it was last sent on
        self.written = False  # whole on the wire of ``epoch``
        # Set once, by settle() or expire(): the caller may stop waiting. (A parked task
        # rather than a trio.Event: one request, one waiter, no allocation per call.)
        self.finished = False
        self.waiter: trio.lowlevel.Task | Callable[[], None] | None = None
        # Set while its caller reads the transport itself (mcpl_host.driver.reading):
        # wakes that caller from its wait on the stream once the request is over.
        self.interrupt: Callable[[], None] | None = None
        # Awaited by a host loop's task (driver.foreign), which never reads: the reader
        # task does not leave the read role for it (driver.reading).
        self.foreign = False
        self.result: Raw | None = None
        self.error: McplHostError | None = None
        self.settled = False
        self.abandoned = False  # its caller stopped waiting (timeout, cancellation)
        self.timed_out = False
        self.on_progress: ProgressCallback | None = None
        self.progress_reset: tuple[float, float] | None = None  # (timeout, hard deadline)
        # Called at once when the answer is read (or the timeout passes), before the
        # caller's task runs again: what the answer changes must hold for the next line.
        self.on_settle: Callable[[Pending], None] | None = None
        # Its span, when the connection reports to OpenTelemetry (mcpl_host.telemetry).
        self.trace: RequestTrace | None = None

    async def wait(self) -> None:
        """Until settled or expired (a checkpoint either way; cancellable). Awaited by a
        task of the host loop that trio is the guest of, it waits on the host's terms
        (:mod:`mcpl_host.driver.foreign`)."""
        if not in_trio_task():
            self.foreign = True
            await host().park(self)
            return
        if self.finished:
            await trio.lowlevel.checkpoint()
            return
        self.waiter = trio.lowlevel.current_task()

        def abort(_: object) -> trio.lowlevel.Abort:
            self.waiter = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def _finish(self) -> None:
        self.finished = True
        waiter, self.waiter = self.waiter, None
        if type(waiter) is trio.lowlevel.Task:
            trio.lowlevel.reschedule(waiter)
        elif waiter is not None:
            waiter()  # a host loop's task (foreign.Host.park)
        elif self.interrupt is not None:
            self.interrupt()

    def expire(self) -> None:
        """The timeout passed with no answer (called by the TimeoutWatch)."""
        if not self.settled:
            self.timed_out = True
            self._finish()
            if self.on_settle is not None:
                self.on_settle(self)

    def settle(self, result: Raw | None = None, error: McplHostError | None = None) -> None:
        if not self.settled:
            self.settled = True
            self.result = result
            self.error = error
            self._finish()
            if self.on_settle is not None:
                self.on_settle(self)


class Progress(msgspec.Struct):
    """``notifications/progress`` params (field names are the wire's)."""

    progressToken: Any = None
    progress: float = math.nan
    total: float | None = None
    message: str | None = None


PROGRESS: Final = msgspec.json.Decoder(Progress)
_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def result_decoder(type_: Any) -> msgspec.json.Decoder[Any]:
    """A decoder per result type, built once."""
    decoder = _DECODERS.get(type_)
    if decoder is None:
        decoder = _DECODERS[type_] = msgspec.json.Decoder(type_)
    return decoder


def with_progress_token(params: Any, token: int) -> Any:
    """``params`` with ``_meta.progressToken`` set (a copy; the caller's dict is untouched).

    Raises ``TypeError`` when params are not a dict (progress needs one to carry ``_meta``).
    """
    if params is UNSET or params is None:
        params = {}
    if not isinstance(params, dict):
        raise TypeError("progress needs params to be a dict (it carries _meta.progressToken)")
    meta = dict(params.get("_meta") or {})
    meta["progressToken"] = token
    return {**params, "_meta": meta}
