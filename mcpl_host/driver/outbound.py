"""The host's own requests: from the call to the answer, across transports.

Each request is a :class:`~mcpl_host.driver.pending.Pending` that outlives transports. It is
written on the current transport epoch or, between transports, queued; when an epoch
is lost the rebinding rule (:mod:`mcpl_host.driver.rebind`) decides whether it is sent again
on the next one, under a new id, or fails with a typed error. Timeouts are kept by one
:class:`~mcpl_host.driver.timeouts.TimeoutWatch`; a late answer to an id given up on is
remembered (boundedly) so that the reader can log it for what it is.
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio
from msgspec import Raw

from ..protocol.discover import with_meta
from ..protocol.errors import (
    ConnectionClosed,
    InvalidToolError,
    McplHostError,
    ProtocolError,
    RequestTimeout,
)
from ..protocol.messages import OutNotification, OutRequest, encode
from ..protocol.redact import Redactor
from ..protocol.trace import with_trace
from .epoch import Epoch, Flush
from .foreign import in_trio_task
from .pending import Pending, ProgressCallback, result_decoder, with_progress_token
from .rebind import ToolHints, safe_to_repeat
from .timeouts import TimeoutWatch
from .tool_headers import ToolHeaderTable

if TYPE_CHECKING:
    from ..telemetry._otel import Instruments

__all__ = ["Outbound"]

# notifications/cancelled is a courtesy: it must never hold up anything for long.
_CANCEL_NOTICE_BOUND: Final = 1.0
# Ids the host gave up on (timeout, cancel, rebound onto a new transport), so that a late
# answer is logged for what it is rather than as a stray. Bounded: a long-lived
# connection must not grow it.
_ABANDONED_MEMORY: Final = 1024
# Re-issues of one request whose response stream broke before its answer (2026-07-28
# over HTTP): a server that cuts every stream must not make the host repeat forever.
MAX_REISSUES: Final = 3


class Outbound:
    """The pending requests of one connection, and what happens to them."""

    def __init__(
        self,
        *,
        server: str,
        next_id: Callable[[], int],
        redactor: Redactor,
        spawn: Callable[..., None],
        telemetry: Instruments | None = None,
    ) -> None:
        self.server = server
        self._next_id = next_id
        self.redactor = redactor
        self._spawn = spawn
        self.pending: dict[int, Pending] = {}  # by the id on the wire now
        self.progress: dict[int, Pending] = {}  # by progress token
        self.abandoned: OrderedDict[int, str] = OrderedDict()
        self.timeouts = TimeoutWatch()
        self._unsent: list[Pending] = []  # waiting for a transport
        self._tool_hints = ToolHints()
        # The tools' x-mcp-header annotations, learned on the stateless revision only.
        self.tool_headers = ToolHeaderTable()
        # The ``_meta`` every request carries on the stateless revision; None before
        # and in the handshake era.
        self.meta: dict[str, Any] | None = None
        # Spans and metrics (mcpl_host.telemetry); None: off, and nothing costs.
        self.telemetry = telemetry
        self._notices = 0  # notifications/cancelled still being written
        self._notices_done = trio.Event()

    async def call(
        self,
        epoch: Epoch | None,
        method: str,
        params: Any,
        *,
        result_type: Any,
        timeout: float,
        on_progress: ProgressCallback | None,
        progress_resets_timeout: bool,
        max_timeout: float | None,
        rebind: bool | None,
        on_settle: Callable[[Pending], None] | None = None,
        pinned: bool = False,
    ) -> Any:
        """One request, from its first write (on ``epoch``, or on the next transport when
        None) to its decoded result. The errors are those of ``Connection.request``.
        ``on_settle(pending)`` runs as soon as the answer is read (or the request ends
        otherwise), in the reader's turn. A ``pinned`` request is never sent on a
        transport other than the first it is sent on: if that one is lost, it fails."""
        pending = self.start(
            epoch,
            method,
            params,
            timeout=timeout,
            on_progress=on_progress,
            progress_resets_timeout=progress_resets_timeout,
            max_timeout=max_timeout,
            rebind=rebind,
            on_settle=on_settle,
            pinned=pinned,
        )
        if pending.trace is None:  # no span to end: no layer between
            return await self._finish(pending, result_type=result_type, timeout=timeout)
        return await self.finish(pending, result_type=result_type, timeout=timeout)

    def start(
        self,
        epoch: Epoch | None,
        method: str,
        params: Any,
        *,
        timeout: float,
        on_progress: ProgressCallback | None = None,
        progress_resets_timeout: bool = False,
        max_timeout: float | None = None,
        rebind: bool | None = None,
        on_settle: Callable[[Pending], None] | None = None,
        pinned: bool = False,
    ) -> Pending:
        """The first half of :meth:`call`, without a checkpoint: the request is queued
        now (on ``epoch``, behind what is queued there and ahead of what comes after),
        and :meth:`finish` must follow. Raises ``TypeError`` for params JSON cannot
        carry, and :class:`InvalidToolError` (nothing written) for a ``tools/call`` of a
        tool the last listing rejected."""
        if method == "tools/call" and self.meta is not None:
            self._refuse_rejected(params)
        seq = self._next_id()
        if on_progress is not None:
            params = with_progress_token(params, seq)  # the first id, kept across rebinding
        trace = None
        if self.telemetry is not None:
            trace = self.telemetry.request(method, params)
            params = with_trace(params, trace.carrier)
            if trace.quiet:  # records nothing (no SDK): carried, and no more cost
                trace = None
        pending = Pending(seq, method, params, trio.current_time() + timeout, rebind)
        pending.on_settle = on_settle
        pending.pinned = pinned
        pending.trace = trace
        try:
            line = self._encode(seq, method, params)
        except (msgspec.EncodeError, TypeError) as exc:  # msgspec: TypeError for a type it lacks
            if trace is not None:
                trace.end(exc)
            if isinstance(exc, msgspec.EncodeError):
                raise TypeError(f"params for {method!r} cannot be encoded as JSON: {exc}") from None
            raise
        if on_progress is not None:
            pending.on_progress = on_progress
            self.progress[seq] = pending
            if progress_resets_timeout:
                hard = max_timeout if max_timeout is not None else timeout * 10
                pending.progress_reset = (timeout, trio.current_time() + hard)
        self.timeouts.watch(pending)
        if epoch is not None and epoch.open:
            self.send(pending, epoch, seq, line)
        elif epoch is not None and pinned:
            # Its transport ended before it could be queued there (a task spawned for
            # it ran late): it may go nowhere else.
            pending.settle(error=epoch.closed_error(outcome_unknown=False))
        else:
            self._unsent.append(pending)  # sent once the new transport is up
        return pending

    async def finish(self, pending: Pending, *, result_type: Any, timeout: float) -> Any:
        """The second half of :meth:`call`: wait for the answer to a request
        :meth:`start` queued, and decode it."""
        trace = pending.trace
        if trace is None:
            return await self._finish(pending, result_type=result_type, timeout=timeout)
        try:
            value = await self._finish(pending, result_type=result_type, timeout=timeout)
        except BaseException as exc:
            trace.end(exc)
            raise
        trace.end(result=value)
        return value

    async def _finish(self, pending: Pending, *, result_type: Any, timeout: float) -> Any:
        try:
            while True:
                epoch = pending.epoch
                reading = None if epoch is None else epoch.reading
                # Where callers may read their answers (stdio, sockets), a request with
                # a deadline reads its own when nobody else reads (driver.reading); any
                # other waits for the task that reads to settle it, as does a request
                # awaited from a host loop (driver.foreign: no trio task to read with).
                if (
                    reading is not None
                    and reading.shared
                    and not pending.finished
                    and epoch.open
                    and pending.deadline != math.inf
                    and in_trio_task()
                ):
                    await reading.answer(pending)
                else:
                    await pending.wait()  # a checkpoint even when it is over already
                if pending.finished:
                    break
        finally:
            self._forget(pending)
        method, params = pending.method, pending.params
        # The timeout heap holds the entry until it is compacted: not its payload.
        result, pending.result, pending.params = pending.result, None, None
        if pending.timed_out:
            raise RequestTimeout(
                f"no answer to {method!r} within {timeout:g} s",
                method=method,
                timeout=timeout,
                server=self.server,
            )
        if pending.error is not None:
            raise pending.error
        if result is None:  # pragma: no cover - settle() always sets one
            raise ProtocolError(f"empty answer to {method!r}", server=self.server)
        if method == "tools/list":
            first_page = not (isinstance(params, dict) and params.get("cursor") is not None)
            self._tool_hints.learn(result, first_page=first_page)
            if self.meta is not None:
                self._learn_tool_headers(pending, result, first_page=first_page)
        if result_type is Raw:
            return result
        try:
            return result_decoder(result_type).decode(result)
        except (msgspec.DecodeError, RecursionError) as exc:  # past the decoder's depth
            raise ProtocolError(
                f"the result of {method!r} does not fit: {self.redactor.log_value(str(exc))}",
                server=self.server,
            ) from None

    def send(
        self, pending: Pending, epoch: Epoch, request_id: int | None = None, line: bytes = b""
    ) -> None:
        """Queue a pending request on ``epoch`` under ``request_id`` (a new id by default).

        Until its line is whole on the wire it counts as never written: if the epoch ends
        first, the epoch's end queues it again or fails it.
        """
        if request_id is None:
            request_id = self._next_id()
            line = self._encode(request_id, pending.method, pending.params)
        if pending.trace is not None:
            pending.trace.sent(request_id)
        pending.id = request_id
        pending.epoch = epoch
        pending.written = False
        self.pending[request_id] = pending
        epoch.send_request(line, pending)

    def _refuse_rejected(self, params: Any) -> None:
        name = params.get("name") if isinstance(params, dict) else None
        reason = self.tool_headers.rejected(name)
        if reason is not None:
            assert isinstance(name, str)
            shown = self.redactor.log_value(name, 64)
            raise InvalidToolError(
                f"tool {shown!r} is not used: {reason}",
                tool=name,
                reason=reason,
                server=self.server,
            )

    def _learn_tool_headers(self, pending: Pending, result: Raw, *, first_page: bool) -> None:
        def safe(text: str) -> str:
            return repr(self.redactor.log_value(text, 64))

        for name, reason in self.tool_headers.learn(result, first_page=first_page, safe=safe):
            log = pending.epoch.log if pending.epoch is not None else None
            if log is not None:  # the epoch's log is the server's budget of lines
                log.warning(
                    "tool dropped",
                    tool=self.redactor.log_value(name, 64),
                    reason=reason,
                    outcome="invalid-x-mcp-header",
                )

    def _take(self, epoch: Epoch, request_id: Any) -> Pending | None:
        """Remove and return the unsettled request of ``epoch`` now on the wire as
        ``request_id``; None when there is none (answered, rebound, or not ours)."""
        pending = self.pending.get(request_id) if type(request_id) is int else None
        if pending is None or pending.epoch is not epoch or pending.settled:
            return None
        del self.pending[request_id]
        return pending

    def fail(self, epoch: Epoch, request_id: Any, error: McplHostError) -> None:
        """The transport failed ``request_id`` at the HTTP level: it ends with ``error``."""
        pending = self._take(epoch, request_id)
        if pending is not None:
            pending.settle(error=error)

    def reissue(self, epoch: Epoch, request_ids: list[Any]) -> None:
        """The response streams of ``request_ids`` broke before their answers (2026-07-28
        over HTTP, where a stream cannot be resumed): each safe to repeat (the rebinding
        rule) is sent again on ``epoch`` with a new id, up to :data:`MAX_REISSUES`
        times; each other fails with :class:`ConnectionClosed`, outcome unknown."""
        for request_id in request_ids:
            pending = self._take(epoch, request_id)
            if pending is None:
                continue
            repeat = (
                not pending.pinned
                and pending.reissued < MAX_REISSUES
                and safe_to_repeat(pending.method, pending.params, self._tool_hints, pending.rebind)
            )
            if repeat and epoch.open:
                pending.reissued += 1
                self.remember_abandoned(request_id, "an id whose response stream broke")
                if pending.trace is not None:
                    pending.trace.moved(request_id, reissued=True)
                self.send(pending, epoch)
                epoch.log.debug("request reissued", request_id=request_id, new_id=pending.id)
            else:
                pending.settle(
                    error=ConnectionClosed(
                        "connection lost, outcome unknown (its response stream broke)",
                        reason="stream-broken",
                        outcome_unknown=True,
                        server=self.server,
                    )
                )

    def _encode(self, request_id: int, method: str, params: Any) -> bytes:
        if self.meta is not None:
            params = with_meta(params, self.meta)
        return encode(OutRequest(id=request_id, method=method, params=params))

    def written_late(self, epoch: Epoch, pending: Pending) -> None:
        """A request went out after its caller stopped waiting: tell the server."""
        if epoch.open and pending.id is not None:
            reason = "timeout" if pending.timed_out else "cancelled by the caller"
            self._spawn_cancel_notice(epoch, pending.id, reason)

    def _forget(self, pending: Pending) -> None:
        """The caller is done waiting: drop every reference; if it gave up, say so."""
        if pending.id is not None:
            self.pending.pop(pending.id, None)
        self.progress.pop(pending.seq, None)
        if pending in self._unsent:
            self._unsent.remove(pending)
        if not pending.settled:
            pending.settled = pending.abandoned = True  # its timeout entry goes stale
            reason = "timeout" if pending.timed_out else "cancelled by the caller"
            if pending.id is not None:
                self.remember_abandoned(pending.id, f"a late answer after {reason}")
            epoch = pending.epoch
            if pending.written and epoch is not None and epoch.open and pending.id is not None:
                self._spawn_cancel_notice(epoch, pending.id, reason)

    def _spawn_cancel_notice(self, epoch: Epoch, request_id: int, reason: str) -> None:
        # Queued now, so that it goes out before whatever the caller writes next (from
        # whichever loop it runs in); waited for in the connection's nursery: the caller
        # may be cancelled already, and the notice must not make it wait.
        line = encode(
            OutNotification(
                method="notifications/cancelled",
                params={"requestId": request_id, "reason": reason},
            )
        )
        flush = epoch.enqueue(line)
        self._notices += 1  # counted now: close() must wait even before the task runs
        self._spawn(self._cancel_notice_written, epoch, flush, request_id, reason)

    def remember_abandoned(self, request_id: int, reason: str) -> None:
        self.abandoned[request_id] = reason
        while len(self.abandoned) > _ABANDONED_MEMORY:
            self.abandoned.popitem(last=False)

    async def _cancel_notice_written(
        self, epoch: Epoch, flush: Flush, request_id: int, reason: str
    ) -> None:
        try:
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + _CANCEL_NOTICE_BOUND
                # If the transport is gone, so is the request: nothing to tell.
                with contextlib.suppress(ConnectionClosed):
                    await epoch.written(flush)
        finally:
            self._notices -= 1
            if not self._notices:
                self._notices_done.set()
                self._notices_done = trio.Event()
        epoch.log.debug("cancel sent", request_id=request_id, reason=reason)

    async def flush_notices(self) -> None:
        """Wait (bounded) for the cancel notices already started: closing right after a
        timeout must not beat the notice to the wire."""
        with trio.move_on_after(_CANCEL_NOTICE_BOUND):
            while self._notices:
                await self._notices_done.wait()

    def resend(self, epoch: Epoch) -> None:
        """Send the requests that wait for a transport, oldest call first, with new ids."""
        waiting = sorted(self._unsent, key=lambda p: p.seq)
        self._unsent.clear()
        for pending in waiting:
            if pending.settled:
                continue
            if not epoch.open:
                self._unsent.append(pending)
                continue
            self.send(pending, epoch)

    def rebind(self, epoch: Epoch, *, reconnecting: bool) -> None:
        """Decide, for each request pending on the lost epoch, re-send or fail (the rule
        and its table: mcpl_host.driver.rebind)."""
        for request_id, pending in list(self.pending.items()):
            if pending.epoch is not epoch:
                continue
            del self.pending[request_id]
            repeat = not pending.pinned and (
                not pending.written
                or safe_to_repeat(pending.method, pending.params, self._tool_hints, pending.rebind)
            )
            if reconnecting and repeat:
                self.remember_abandoned(request_id, "an id from an earlier transport")
                if pending.trace is not None:
                    pending.trace.moved(request_id, reissued=False)
                pending.id = None
                pending.written = False
                self._unsent.append(pending)
            else:
                pending.settle(error=epoch.closed_error(outcome_unknown=pending.written))

    def fail_all(self, text: str, reason: str, cause: McplHostError | None) -> None:
        """The connection is over for good: every request still waiting fails."""
        for pending in [*self.pending.values(), *self._unsent]:
            error = ConnectionClosed(
                text, reason=reason, outcome_unknown=pending.written, server=self.server
            )
            error.__cause__ = cause
            pending.settle(error=error)
        self.pending.clear()
        self._unsent.clear()
