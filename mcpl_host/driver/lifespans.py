"""The connection's own spans (mcpl_host.telemetry): ``mcpl_host.connect`` for each
transport opened, with its steps; ``mcpl_host.reconnect`` for each lost transport
replaced, with an event per attempt. Made only with telemetry on: without it the driver
holds None and none of this runs."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from ..telemetry._otel import ConnectionSpan, Instruments
    from .epoch import Epoch, Flush

__all__ = ["ConnectionSpans", "connect_step", "initialized_written"]

T = TypeVar("T")


class ConnectionSpans:
    """One connection's spans of its own life."""

    def __init__(self, telemetry: Instruments) -> None:
        self._telemetry = telemetry
        self._reconnect: ConnectionSpan | None = None  # while a lost transport is replaced

    async def connect(self, open_in: Callable[[ConnectionSpan], Awaitable[T]]) -> T:
        """``open_in(span)`` (a transport opened and its handshake run) in one
        ``mcpl_host.connect`` span, a child of the reconnect span when it replaces a
        lost transport; ended once connected or failed, never held for the connection's
        life."""
        span = self._telemetry.connection_span("connect", parent=self._reconnect)
        try:
            opened = await open_in(span)
        except BaseException as exc:
            span.end(exc)
            raise
        span.end()
        return opened

    async def reconnect(
        self, lost: ConnectionSpan | None, replace: Callable[[], Awaitable[T]]
    ) -> T:
        """``replace()`` in a ``mcpl_host.reconnect`` span linked to the lost transport's
        connect span: from the loss to the next transport up, or to giving up."""
        links = None if lost is None else [lost.link()]
        span = self._reconnect = self._telemetry.connection_span("reconnect", links=links)
        try:
            replaced = await replace()
        except BaseException as exc:
            span.end(exc)
            raise
        finally:
            self._reconnect = None
        span.end()
        return replaced

    def attempted(self, number: int, error: BaseException | None) -> None:
        """One reconnect attempt is over: counted by outcome, an event on the span."""
        outcome = "failure" if error is not None else "success"
        self._telemetry.reconnect_attempt(outcome)
        span = self._reconnect
        if span is not None:
            attributes: dict[str, str | int] = {
                "mcpl_host.attempt": number,
                "mcpl_host.outcome": outcome,
            }
            if error is not None:  # the class only: the text may quote the server
                attributes["error.type"] = type(error).__name__
            span.event("attempt", **attributes)


def connect_step(
    span: ConnectionSpan | None, name: str
) -> contextlib.AbstractContextManager[Span | None]:
    """A step of a connect span (nothing without telemetry)."""
    return contextlib.nullcontext() if span is None else span.step(name)


async def initialized_written(epoch: Epoch, flush: Flush, parent: Span | None) -> None:
    """Wait until ``notifications/initialized`` is on the wire (the reader queued it
    right after the answer): with telemetry, a CLIENT span of its own under ``parent``
    (the handshake step)."""
    telemetry = epoch.telemetry
    if telemetry is None:
        await epoch.written(flush)
        return
    trace = telemetry.request("notifications/initialized", None, parent=parent)
    try:
        await epoch.written(flush)
    except BaseException as exc:
        trace.end(exc)
        raise
    trace.end()
