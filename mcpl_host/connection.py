"""The trio driver: one Connection per server.

It owns a transport (a byte stream), runs one reader task that feeds every line to the
protocol core and does what the core decides, correlates the host's requests with their
answers, and serves the server's requests through transport-bound responders. Each
transport is an *epoch*; everything bound to an epoch (its profile, its responders, its
in-flight server requests) dies with it.

Every inbound message ends with one typed outcome, logged as one structured event.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Final, TypeAlias, TypeVar, overload

import msgspec
import structlog
import trio
from msgspec import UNSET, Raw

from ._epoch import Epoch
from ._inbound import Inbound
from ._pending import Pending, ProgressCallback, result_decoder, with_progress_token
from ._timeouts import TimeoutWatch
from .events import Connected, Disconnected, Event, EventCallback, StderrLine
from .protocol.errors import (
    ConnectionClosed,
    McplHostError,
    ProtocolError,
    RequestTimeout,
    TransportError,
)
from .protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from .protocol.handshake import Failed, Handshake, InitializeResult
from .protocol.messages import OutNotification, OutRequest, encode
from .protocol.profiles import Profile, validate_allowlist
from .protocol.redact import Redactor
from .responder import Handler, ServerRequest
from .transports import Transport, open_transport
from .transports.targets import Target, describe, parse_target, redactor_for

__all__ = ["Connection", "ProgressCallback", "TransportFactory"]

_log = structlog.get_logger("mcpl_host.connection")

T = TypeVar("T")

TransportFactory: TypeAlias = Callable[[], Awaitable[Transport]]
"""Opens a transport of the embedder's own making (a memory stream, a custom socket)."""

DEFAULT_INITIALIZE_TIMEOUT: Final = 30.0
DEFAULT_REQUEST_TIMEOUT: Final = 60.0
DEFAULT_MAX_SERVER_REQUESTS: Final = 64
# notifications/cancelled is a courtesy: it must never hold up the caller for long.
_CANCEL_NOTICE_BOUND: Final = 1.0
# Ids of requests given up on (timeout, cancel), so that their late answers are logged
# quietly rather than as strays. Bounded: a long-lived connection must not grow it.
_ABANDONED_MEMORY: Final = 1024


class Connection:
    """A connection to one MCP server.

    Open it as an async context manager (it owns its nursery)::

        async with Connection(StdioTarget.of(["python3", "server.py"])) as conn:
            result = await conn.request("tools/list")

    or run it in a nursery of yours: ``conn = await nursery.start(Connection(...).run)``
    and ``await conn.aclose()`` when done. Either way a failure to connect raises one
    typed exception (a :class:`~mcpl_host.McplHostError`), never an exception group.

    ``handlers`` maps server-request methods to handlers; ``ping`` is built in.
    ``roots``, ``sampling`` and ``elicitation`` are handlers for ``roots/list``,
    ``sampling/createMessage`` and ``elicitation/create``: the matching client capability
    is advertised only when one is given, and each is served only on revisions that
    define it.
    """

    def __init__(
        self,
        target: Target | str | TransportFactory,
        *,
        name: str | None = None,
        versions: list[str] | tuple[str, ...] | None = None,
        client_info: Mapping[str, Any] | None = None,
        handlers: Mapping[str, Handler] | None = None,
        roots: Handler | None = None,
        sampling: Handler | None = None,
        elicitation: Handler | None = None,
        on_event: EventCallback | None = None,
        initialize_timeout: float = DEFAULT_INITIALIZE_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS,
        secrets: tuple[str, ...] = (),
    ) -> None:
        """Raises :class:`~mcpl_host.ConfigurationError` for a bad target or allowlist."""
        self.target: Target | TransportFactory = (
            parse_target(target) if isinstance(target, str) else target
        )
        if callable(self.target):
            self.redactor = Redactor(secrets)
            self.name = name or "custom"
        else:
            self.redactor = redactor_for(self.target, extra_secrets=secrets)
            self.name = name or describe(self.target)
        self.allowlist = validate_allowlist(versions)
        self.client_info = dict(client_info or {"name": "mcpl_host", "version": "0.1.0"})
        self.request_timeout = request_timeout
        self.initialize_timeout = initialize_timeout
        self.max_message_bytes = max_message_bytes
        self.max_server_requests = max_server_requests
        self._on_event = on_event
        self._handlers: dict[str, Handler] = {"ping": _ping}
        self._capabilities: dict[str, Any] = {}
        for method, handler, capability in (
            ("roots/list", roots, "roots"),
            ("sampling/createMessage", sampling, "sampling"),
            ("elicitation/create", elicitation, "elicitation"),
        ):
            if handler is not None:
                self._handlers[method] = handler
                self._capabilities[capability] = {}
        self._handlers.update(handlers or {})
        self._ids = itertools.count(1)  # never reused on this connection
        self._epoch_numbers = itertools.count(1)
        self._pending: dict[int, Pending] = {}
        self._timeouts = TimeoutWatch()
        self._abandoned: deque[int] = deque(maxlen=_ABANDONED_MEMORY)
        self._inbound = Inbound(
            server=self.name,
            pending=self._pending,
            abandoned=self._abandoned,
            timeouts=self._timeouts,
            handlers=self._handlers,
            redactor=self.redactor,
            max_message_bytes=max_message_bytes,
            max_server_requests=max_server_requests,
            spawn=self._spawn,
            emit=self._emit,
            on_lost=self._end_epoch_soon,
        )
        self._epoch: Epoch | None = None
        self._nursery: trio.Nursery | None = None
        self._closing = False
        self._closed = trio.Event()
        self._own_nursery: Any = None
        self.initialize_result: InitializeResult | None = None
        self.timings_ms: dict[str, float] = {}
        self._log = _log.bind(server=self.name)

    # -- what the server said about itself ----------------------------------------------

    @property
    def profile(self) -> Profile | None:
        """The negotiated profile of the current transport epoch (None when not connected)."""
        return self._epoch.profile if self._epoch is not None and self._epoch.open else None

    @property
    def protocol_version(self) -> str | None:
        profile = self.profile
        return profile.revision if profile else None

    @property
    def server_info(self) -> dict[str, Any]:
        return self.initialize_result.server_info if self.initialize_result else {}

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self.initialize_result.capabilities if self.initialize_result else {}

    @property
    def instructions(self) -> str | None:
        return self.initialize_result.instructions if self.initialize_result else None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return dict(self._capabilities)

    # -- lifetime ----------------------------------------------------------------------

    async def __aenter__(self) -> Connection:
        self._own_nursery = trio.open_nursery()
        nursery = await self._own_nursery.__aenter__()
        try:
            await nursery.start(self.run)
        except BaseException:
            # run() failed before it started: its exception comes out bare, as the
            # caller should see it; leave the (empty) nursery without it.
            nursery.cancel_scope.cancel()
            await self._own_nursery.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        await self.aclose()
        # Our tasks never raise, so the nursery has nothing to report; the body's own
        # exception propagates as itself, not wrapped in a group.
        await self._own_nursery.__aexit__(None, None, None)
        return False

    async def run(
        self, *, task_status: trio.TaskStatus[Connection] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Connect, then serve until closed. Use with ``nursery.start``.

        Raises (before ``started``) :class:`~mcpl_host.SpawnError`,
        :class:`~mcpl_host.TransportError`, :class:`~mcpl_host.InitializeError`,
        :class:`~mcpl_host.VersionError`, :class:`~mcpl_host.RequestTimeout` (handshake
        timeout) or :class:`~mcpl_host.ProtocolError`.
        """
        failure: McplHostError | None = None
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                await self._connect(nursery)
            except McplHostError as exc:
                failure = exc
                nursery.cancel_scope.cancel()
            else:
                task_status.started(self)
                await self._closed.wait()
                nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def aclose(self) -> None:
        """Close the connection: pending requests fail, the transport is shut down (a stdio
        server stopped and reaped). Idempotent; safe to call from any task."""
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        with trio.CancelScope(shield=True):
            if self._epoch is not None:
                await self._end_epoch(self._epoch, "closed")
        self._closed.set()

    # -- connecting --------------------------------------------------------------------

    async def _connect(self, nursery: trio.Nursery) -> None:
        started = trio.current_time()
        if callable(self.target):
            transport = await self.target()
        else:
            transport = await open_transport(
                self.target, nursery=nursery, on_stderr=self._on_stderr, redactor=self.redactor
            )
        opened = trio.current_time()
        epoch = Epoch(
            next(self._epoch_numbers),
            transport,
            server=self.name,
            on_lost=self._end_epoch_soon,
            spawn=self._spawn,
        )
        self._epoch = epoch
        handshake = Handshake(
            allowlist=self.allowlist,
            request_id=next(self._ids),
            capabilities=self._capabilities,
            client_info=self.client_info,
            redactor=self.redactor,
        )
        epoch.handshake = handshake
        nursery.start_soon(self._inbound.read, epoch)
        nursery.start_soon(self._timeouts.run)
        try:
            with trio.fail_after(self.initialize_timeout):
                await epoch.write(handshake.request())
                await epoch.handshake_done.wait()
        except trio.TooSlowError:
            await self._end_epoch(epoch, "initialize-timeout")
            raise RequestTimeout(
                f"no answer to initialize within {self.initialize_timeout:g} s",
                method="initialize",
                timeout=self.initialize_timeout,
                server=self.name,
            ) from None
        except McplHostError:
            await self._end_epoch(epoch, "write-failed")
            raise
        step = epoch.handshake_step
        assert step is not None
        if isinstance(step, Failed):
            await self._end_epoch(epoch, "initialize-failed")
            step.error.server = self.name
            raise step.error
        epoch.profile = step.profile
        self.initialize_result = step.result
        await epoch.write(step.initialized)
        now = trio.current_time()
        self.timings_ms = {
            "connect": round((opened - started) * 1000, 3),
            "initialize": round((now - opened) * 1000, 3),
            "total": round((now - started) * 1000, 3),
        }
        epoch.log.info("connected", protocol_version=step.profile.revision)
        self._emit(Connected(epoch.epoch_number, step.profile.revision, step.result.server_info))

    # -- the host's requests -----------------------------------------------------------

    @overload
    async def request(
        self,
        method: str,
        params: Any = ...,
        *,
        result_type: type[T],
        timeout: float | None = ...,
        on_progress: Any = ...,
        progress_resets_timeout: bool = ...,
        max_timeout: float | None = ...,
    ) -> T: ...

    @overload
    async def request(
        self,
        method: str,
        params: Any = ...,
        *,
        timeout: float | None = ...,
        on_progress: Any = ...,
        progress_resets_timeout: bool = ...,
        max_timeout: float | None = ...,
    ) -> Any: ...

    async def request(
        self,
        method: str,
        params: Any = UNSET,
        *,
        result_type: Any = Any,
        timeout: float | None = None,
        on_progress: Any = None,
        progress_resets_timeout: bool = False,
        max_timeout: float | None = None,
    ) -> Any:
        """Send a request and wait for its answer; return the result decoded as
        ``result_type`` (plain JSON values by default, ``msgspec.Raw`` to keep it raw).

        ``timeout`` defaults to the connection's ``request_timeout`` (60 s).
        ``on_progress(progress, total, message)`` adds ``_meta.progressToken``; with
        ``progress_resets_timeout`` each progress notification restarts the timeout, never
        past ``max_timeout`` from the start (default: 10 x ``timeout``).

        On timeout or cancellation of the caller, ``notifications/cancelled`` is sent for
        the request (bounded, shielded) before the error or the cancellation propagates.

        Raises :class:`~mcpl_host.RequestError` (the server's error answer, with code,
        message and data), :class:`~mcpl_host.RequestTimeout`,
        :class:`~mcpl_host.ConnectionClosed` (``outcome_unknown`` when the request was
        written and never answered), :class:`~mcpl_host.ProtocolError` (an answer with
        neither result nor error, or a result that does not decode as ``result_type``),
        ``TypeError`` for params JSON cannot carry.
        """
        epoch = self._current_epoch()
        timeout = self.request_timeout if timeout is None else timeout
        request_id = next(self._ids)
        pending = Pending(method, trio.current_time() + timeout)
        if on_progress is not None:
            params = with_progress_token(params, request_id)
            pending.on_progress = on_progress
            if progress_resets_timeout:
                hard = max_timeout if max_timeout is not None else timeout * 10
                pending.progress_reset = (timeout, trio.current_time() + hard)
        try:
            line = encode(OutRequest(id=request_id, method=method, params=params))
        except msgspec.EncodeError as exc:
            raise TypeError(f"params for {method!r} cannot be encoded as JSON: {exc}") from None
        self._pending[request_id] = pending
        self._timeouts.watch(pending)
        try:
            await epoch.write(line)
            pending.written = True
            await pending.done.wait()
        finally:
            self._pending.pop(request_id, None)
            if not pending.settled:
                pending.settled = True  # its timeout entry goes stale
                self._abandoned.append(request_id)
                if pending.written and epoch.open:
                    reason = "timeout" if pending.timed_out else "cancelled by the caller"
                    await self._send_cancelled(epoch, request_id, reason)
        if pending.timed_out:
            raise RequestTimeout(
                f"no answer to {method!r} within {timeout:g} s",
                method=method,
                timeout=timeout,
                server=self.name,
            )
        if pending.error is not None:
            raise pending.error
        if pending.result is None:  # pragma: no cover - settle() always sets one
            raise ProtocolError(f"empty answer to {method!r}", server=self.name)
        if result_type is Raw:
            return pending.result
        try:
            return result_decoder(result_type).decode(pending.result)
        except msgspec.DecodeError as exc:
            raise ProtocolError(
                f"the result of {method!r} does not fit: {self.redactor.log_value(str(exc))}",
                server=self.name,
            ) from None

    async def notify(self, method: str, params: Any = UNSET) -> None:
        """Send a notification.

        Raises :class:`~mcpl_host.ConnectionClosed` when the connection is not up or the
        write fails.
        """
        await self._current_epoch().write(encode(OutNotification(method=method, params=params)))

    async def _send_cancelled(self, epoch: Epoch, request_id: int, reason: str) -> None:
        line = encode(
            OutNotification(
                method="notifications/cancelled",
                params={"requestId": request_id, "reason": reason},
            )
        )
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + _CANCEL_NOTICE_BOUND
            # If the transport is gone, so is the request: nothing to tell.
            with contextlib.suppress(ConnectionClosed):
                await epoch.write(line)
        epoch.log.debug("cancel sent", request_id=request_id, reason=reason)

    def _current_epoch(self) -> Epoch:
        epoch = self._epoch
        if epoch is None or not epoch.open or epoch.profile is None or self._closing:
            raise ConnectionClosed("the connection is not open", reason="closed", server=self.name)
        return epoch

    # -- ending an epoch ---------------------------------------------------------------

    def _end_epoch_soon(self, epoch: Epoch, reason: str) -> None:
        """Mark the epoch over now (nothing more is written to it); shut it down in a task."""
        if epoch.open:
            self._mark_ended(epoch, reason)
            self._spawn(self._end_epoch, epoch, reason)

    def _mark_ended(self, epoch: Epoch, reason: str) -> None:
        epoch.open = False
        epoch.end_reason = reason
        for scope in epoch.inbound.values():
            scope.cancel()  # their answers could go nowhere
        if epoch.handshake_step is None:
            epoch.handshake_step = Failed(
                TransportError(
                    f"the transport closed during initialize ({reason})",
                    reason=reason,
                    server=self.name,
                )
            )
            epoch.handshake_done.set()
        for pending in list(self._pending.values()):
            pending.settle(error=epoch.closed_error(outcome_unknown=pending.written))

    async def _end_epoch(self, epoch: Epoch, reason: str) -> None:
        if epoch.open:
            self._mark_ended(epoch, reason)
        if epoch.ended.is_set():
            return
        with trio.CancelScope(shield=True):
            await epoch.transport.aclose()
        if not epoch.ended.is_set():
            epoch.ended.set()
            epoch.log.info("disconnected", reason=epoch.end_reason)
            self._emit(Disconnected(epoch.epoch_number, epoch.end_reason or reason))
        if not self._closing and epoch is self._epoch:
            # No reconnect (yet): the connection ends with its transport.
            self._closing = True
            self._closed.set()

    # -- small helpers -----------------------------------------------------------------

    def _spawn(self, fn: Any, *args: Any) -> None:
        nursery = self._nursery
        if nursery is not None:
            nursery.start_soon(fn, *args)

    def _emit(self, event: Event) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:
            self._log.exception("event callback failed", event=type(event).__name__)

    def _on_stderr(self, line: str) -> None:
        self._emit(StderrLine(line))


async def _ping(_request: ServerRequest) -> Any:
    return {}
