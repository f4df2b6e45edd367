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
import math
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Final, TypeAlias, TypeVar, overload

import msgspec
import structlog
import trio
from msgspec import UNSET, Raw

from ._timeouts import TimeoutWatch
from .events import Connected, Disconnected, Event, EventCallback, ServerNotification, StderrLine
from .protocol.batch import BatchAnswers, BatchPlan, BatchRefused, plan_batch
from .protocol.envelope import (
    Batch,
    Classified,
    Ignored,
    InvalidRequest,
    Notification,
    Outcome,
    Request,
    RequestId,
    Response,
    decode_line,
)
from .protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ConnectionClosed,
    McplHostError,
    ProtocolError,
    RequestError,
    RequestTimeout,
    TransportError,
)
from .protocol.framing import DEFAULT_MAX_MESSAGE_BYTES, LineDecoder, OversizedLine
from .protocol.handshake import (
    Established,
    Failed,
    Handshake,
    InitializeResult,
    Send,
    Skip,
    describe_error_member,
)
from .protocol.messages import (
    ErrorAnswer,
    OutNotification,
    OutRequest,
    ResultAnswer,
    encode,
    error_answer,
)
from .protocol.profiles import Profile, validate_allowlist
from .protocol.redact import Redactor
from .responder import Handler, Responder, ServerRequest
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
_READ_CHUNK: Final = 256 * 1024
# Ids of requests given up on (timeout, cancel), so that their late answers are logged
# quietly rather than as strays. Bounded: a long-lived connection must not grow it.
_ABANDONED_MEMORY: Final = 1024
# Server requests the core profiles gate by revision; a custom handler for any other
# method is served on every revision.
_GATED: Final = frozenset({"roots/list", "sampling/createMessage", "elicitation/create"})


class ProgressCallback:
    """Type of ``on_progress``: called with (progress, total, message)."""

    def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class _Pending:
    """One request of the host's, from its write until its answer or its end."""

    __slots__ = (
        "deadline",
        "done",
        "error",
        "method",
        "on_progress",
        "progress_reset",
        "result",
        "settled",
        "timed_out",
        "written",
    )

    def __init__(self, method: str, deadline: float) -> None:
        self.method = method
        self.deadline = deadline
        self.done = trio.Event()
        self.result: Raw | None = None
        self.error: McplHostError | None = None
        self.settled = False
        self.timed_out = False
        self.written = False
        self.on_progress: Any = None
        self.progress_reset: tuple[float, float] | None = None  # (timeout, hard deadline)

    def expire(self) -> None:
        """The timeout passed with no answer (called by the TimeoutWatch)."""
        if not self.settled:
            self.timed_out = True
            self.done.set()

    def settle(self, result: Raw | None = None, error: McplHostError | None = None) -> None:
        if not self.settled:
            self.settled = True
            self.result = result
            self.error = error
            self.done.set()


class _Epoch:
    """One transport's lifetime: its stream, write lock, profile and inbound work."""

    def __init__(self, conn: Connection, number: int, transport: Transport) -> None:
        self.conn = conn
        self.epoch_number = number
        self.transport = transport
        self.write_lock = trio.StrictFIFOLock()
        self.profile: Profile | None = None
        self.handshake: Handshake | None = None
        self.handshake_step: Established | Failed | None = None
        self.handshake_done = trio.Event()
        self.open = True
        self.end_reason: str | None = None
        self.ended = trio.Event()
        # Server requests in flight, for notifications/cancelled.
        self.inbound: dict[RequestId, trio.CancelScope] = {}
        self.log = _log.bind(server=conn.name, epoch=number)

    async def write(self, data: bytes) -> None:
        """Write one line (or batch). A failed write ends the epoch.

        Raises :class:`ConnectionClosed` when the epoch is over or the write fails.
        """
        if not self.open:
            raise self.conn._closed_error(self, outcome_unknown=False)
        lock = self.write_lock
        # Uncontended, take the lock without the extra scheduling round its acquire()
        # costs; send_all checkpoints anyway.
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            await lock.acquire()
        try:
            if not self.open:
                raise self.conn._closed_error(self, outcome_unknown=False)
            await self.transport.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self.conn._end_epoch_soon(self, "write-failed")
            raise self.conn._closed_error(self, outcome_unknown=False) from exc
        finally:
            lock.release()

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


class _BatchSlot:
    """A responder's answer for one entry of an inbound batch."""

    __slots__ = ("answers", "epoch", "epoch_number", "index")

    def __init__(self, epoch: _Epoch, answers: BatchAnswers, index: int) -> None:
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
            self.epoch.conn._spawn(self._flush, responder)

    async def _flush(self, responder: Responder) -> bool:
        if not self.answers.complete:
            return True  # the array goes out with the last answer
        line = self.answers.encode()
        if line is None:
            return True
        return await self.epoch.write_answer(line, responder)


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
        self._pending: dict[int, _Pending] = {}
        self._timeouts = TimeoutWatch()
        self._abandoned: deque[int] = deque(maxlen=_ABANDONED_MEMORY)
        self._epoch: _Epoch | None = None
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
        epoch = _Epoch(self, next(self._epoch_numbers), transport)
        self._epoch = epoch
        handshake = Handshake(
            allowlist=self.allowlist,
            request_id=next(self._ids),
            capabilities=self._capabilities,
            client_info=self.client_info,
            redactor=self.redactor,
        )
        epoch.handshake = handshake
        nursery.start_soon(self._reader, epoch)
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
        pending = _Pending(method, trio.current_time() + timeout)
        if on_progress is not None:
            params = _with_progress_token(params, request_id)
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
            return _decoder(result_type).decode(pending.result)
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

    async def _send_cancelled(self, epoch: _Epoch, request_id: int, reason: str) -> None:
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

    def _current_epoch(self) -> _Epoch:
        epoch = self._epoch
        if epoch is None or not epoch.open or epoch.profile is None or self._closing:
            raise ConnectionClosed("the connection is not open", reason="closed", server=self.name)
        return epoch

    def _closed_error(self, epoch: _Epoch, *, outcome_unknown: bool) -> ConnectionClosed:
        reason = epoch.end_reason or "closed"
        text = "connection lost, outcome unknown" if outcome_unknown else "connection closed"
        return ConnectionClosed(
            f"{text} ({reason})", reason=reason, outcome_unknown=outcome_unknown, server=self.name
        )

    # -- reading -----------------------------------------------------------------------

    async def _reader(self, epoch: _Epoch) -> None:
        """The one reader of an epoch. Nothing raised by a message escapes it."""
        framer = LineDecoder(self.max_message_bytes)
        stream = epoch.transport.stream
        reason = "eof"
        try:
            while epoch.open:
                try:
                    chunk = await stream.receive_some(_READ_CHUNK)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    reason = "read-failed" if epoch.open else "closed"
                    break
                if not chunk:
                    items = framer.close()
                    for item in items:
                        self._on_line(epoch, item)
                    break
                for item in framer.feed(chunk):
                    self._on_line(epoch, item)
        finally:
            if epoch.open:
                self._end_epoch_soon(epoch, reason)

    def _on_line(self, epoch: _Epoch, item: bytes | OversizedLine) -> None:
        try:
            if type(item) is OversizedLine:
                epoch.log.warning(
                    "message",
                    direction="in",
                    outcome=Outcome.IGNORED,
                    reason=f"line of {item.size} bytes exceeds max_message_bytes",
                )
                return
            assert isinstance(item, bytes)
            message = decode_line(item)
            if epoch.handshake_step is None:
                self._during_handshake(epoch, message)
            elif type(message) is Batch:
                self._on_batch(epoch, message)
            else:
                assert not isinstance(message, Batch)
                self._on_message(epoch, message, None, 0)
        except Exception:  # a bug must not kill the reader; say so loudly
            epoch.log.exception("internal error while handling a message")

    def _during_handshake(self, epoch: _Epoch, message: Classified | Batch) -> None:
        assert epoch.handshake is not None
        step = epoch.handshake.receive(message)
        if isinstance(step, Send):
            epoch.log.debug("message", direction="in", method="ping", outcome=step.outcome)
            self._spawn(self._write_quietly, epoch, step.line)
        elif isinstance(step, Skip):
            epoch.log.info(
                "message",
                direction="in",
                outcome=step.outcome,
                reason=step.reason,
                **self._describe(message),
            )
        else:
            epoch.log.debug("message", direction="in", method="initialize", outcome=step.outcome)
            epoch.handshake_step = step
            epoch.handshake_done.set()

    def _on_batch(self, epoch: _Epoch, batch: Batch) -> None:
        plan = plan_batch(batch, epoch.profile)
        if isinstance(plan, Ignored):
            epoch.log.info("message", direction="in", outcome=Outcome.IGNORED, reason=plan.reason)
            return
        if isinstance(plan, BatchRefused):
            epoch.log.info(
                "message", direction="in", outcome=plan.outcome, reason=plan.answer.error.message
            )
            self._spawn(self._write_quietly, epoch, encode(plan.answer))
            return
        assert isinstance(plan, BatchPlan)
        answers = BatchAnswers(plan)
        for index, entry in enumerate(plan.entries):
            self._on_message(epoch, entry, answers, index)
        if answers.complete:  # nothing was dispatched that still has to answer
            line = answers.encode()
            if line is not None:
                self._spawn(self._write_quietly, epoch, line)

    def _on_message(
        self, epoch: _Epoch, message: Classified, batch: BatchAnswers | None, index: int
    ) -> None:
        kind = type(message)
        if kind is Response:
            assert isinstance(message, Response)
            self._on_response(epoch, message)
        elif kind is Request:
            assert isinstance(message, Request)
            self._on_request(epoch, message, batch, index)
        elif kind is Notification:
            assert isinstance(message, Notification)
            self._on_notification(epoch, message)
        elif kind is InvalidRequest:
            assert isinstance(message, InvalidRequest)
            epoch.log.info(
                "message",
                direction="in",
                id=message.answer_id,
                method=message.method,
                outcome=Outcome.ANSWERED_INVALID,
                reason=message.message,
            )
            if batch is None:  # a batch's invalid entries are already in its answer
                answer = error_answer(message.answer_id, INVALID_REQUEST, message.message)
                responder = Responder(epoch, message.answer_id, message.method or "")
                self._spawn(responder._sink.deliver, answer, responder)
        else:
            assert isinstance(message, Ignored)
            epoch.log.info(
                "message", direction="in", outcome=Outcome.IGNORED, reason=message.reason
            )

    def _on_response(self, epoch: _Epoch, response: Response) -> None:
        pending = self._pending.get(response.id) if type(response.id) is int else None
        if pending is None or pending.settled:
            late = type(response.id) is int and response.id in self._abandoned
            (epoch.log.debug if late else epoch.log.warning)(
                "message",
                direction="in",
                id=response.id if response.id is not None else response.id_kind,
                outcome=Outcome.RESPONSE_UNMATCHED,
                reason="a late answer to a request given up on"
                if late
                else "matches no pending request",
                error=None if response.error is None else self.redactor.log_json(response.error),
            )
            return
        epoch.log.debug("message", direction="in", id=response.id, outcome=Outcome.RESPONSE_MATCHED)
        if response.error is not None:
            code, message, data = describe_error_member(response.error, self.redactor)
            pending.settle(
                error=RequestError(
                    code if code is not None else INTERNAL_ERROR, message, data, server=self.name
                )
            )
        elif response.result is not None:
            pending.settle(result=response.result)
        else:
            pending.settle(
                error=ProtocolError(
                    f"the answer to {pending.method!r} has neither result nor error",
                    server=self.name,
                )
            )

    def _on_request(
        self, epoch: _Epoch, request: Request, batch: BatchAnswers | None, index: int
    ) -> None:
        sink = epoch if batch is None else _BatchSlot(epoch, batch, index)
        responder = Responder(sink, request.id, request.method)
        handler = self._handlers.get(request.method)
        profile = epoch.profile
        assert profile is not None
        if handler is None or (
            request.method in _GATED and request.method not in profile.server_requests
        ):
            epoch.log.info(
                "message",
                direction="in",
                id=request.id,
                method=request.method,
                outcome=Outcome.DISPATCHED,
                reason="method not found",
            )
            self._spawn(responder.error, METHOD_NOT_FOUND, f"Method not found: {request.method}")
            return
        if len(epoch.inbound) >= self.max_server_requests:
            epoch.log.warning(
                "message",
                direction="in",
                id=request.id,
                method=request.method,
                outcome=Outcome.DISPATCHED,
                reason="too many server requests in flight",
            )
            self._spawn(
                responder.error,
                INTERNAL_ERROR,
                f"host busy: {self.max_server_requests} server requests already in flight",
            )
            return
        epoch.log.debug(
            "message",
            direction="in",
            id=request.id,
            method=request.method,
            outcome=Outcome.DISPATCHED,
        )
        scope = trio.CancelScope()
        if request.id is not None:
            epoch.inbound[request.id] = scope
        else:  # id null: cannot be cancelled by id, but still counts toward the bound
            epoch.inbound[object()] = scope  # type: ignore[index]
        self._spawn(
            self._serve,
            epoch,
            ServerRequest(request.method, request.id, request.params, responder),
            handler,
            scope,
        )

    async def _serve(
        self, epoch: _Epoch, request: ServerRequest, handler: Handler, scope: trio.CancelScope
    ) -> None:
        responder = request.responder
        try:
            with scope:
                try:
                    result = await handler(request)
                except RequestError as exc:
                    await self._fail_request(
                        epoch, responder, exc.code, exc.error_message, exc.data
                    )
                except msgspec.ValidationError as exc:
                    await self._fail_request(
                        epoch,
                        responder,
                        INVALID_PARAMS,
                        f"Invalid params: {self.redactor.log_value(str(exc))}",
                        UNSET,
                    )
                except Exception as exc:
                    epoch.log.error(  # noqa: TRY400 - a traceback could carry secrets
                        "handler failed",
                        request_id=request.id,
                        method=request.method,
                        error=self.redactor.log_value(repr(exc)),
                    )
                    await self._fail_request(
                        epoch, responder, INTERNAL_ERROR, "Internal error", UNSET
                    )
                else:
                    if not responder.answered:
                        await responder.respond(result)
            if scope.cancelled_caught:
                responder.withdraw()
                epoch.log.info(
                    "server request cancelled", request_id=request.id, method=request.method
                )
        finally:
            for key, value in list(epoch.inbound.items()):
                if value is scope:
                    del epoch.inbound[key]

    async def _fail_request(
        self, epoch: _Epoch, responder: Responder, code: int, message: str, data: Any
    ) -> None:
        if responder.answered:
            epoch.log.error(
                "handler failed after answering; no second answer",
                request_id=responder.id,
                method=responder.method,
            )
            return
        await responder.error(code, message, data)

    def _on_notification(self, epoch: _Epoch, note: Notification) -> None:
        epoch.log.debug("message", direction="in", method=note.method, outcome=Outcome.DISPATCHED)
        if note.method == "notifications/cancelled":
            request_id = _field(note.params, "requestId")
            scope = epoch.inbound.get(request_id) if isinstance(request_id, (str, int)) else None
            if scope is not None:
                scope.cancel()
            return
        if note.method == "notifications/progress":
            self._on_progress(note.params)
            return
        self._emit(ServerNotification(note.method, note.params))

    def _on_progress(self, params: Raw | None) -> None:
        try:
            progress = _PROGRESS.decode(params or b"{}")
        except msgspec.DecodeError:
            self._log.info("progress notification ignored", reason="malformed params")
            return
        pending = (
            self._pending.get(progress.progressToken)
            if type(progress.progressToken) is int
            else None
        )
        if pending is None or pending.on_progress is None:
            return
        if pending.progress_reset is not None:
            timeout, hard = pending.progress_reset
            pending.deadline = min(trio.current_time() + timeout, hard)
            self._timeouts.watch(pending)
        try:
            pending.on_progress(progress.progress, progress.total, progress.message)
        except Exception:
            self._log.exception("progress callback failed", method=pending.method)

    # -- ending an epoch ---------------------------------------------------------------

    def _end_epoch_soon(self, epoch: _Epoch, reason: str) -> None:
        """Mark the epoch over now (nothing more is written to it); shut it down in a task."""
        if epoch.open:
            self._mark_ended(epoch, reason)
            self._spawn(self._end_epoch, epoch, reason)

    def _mark_ended(self, epoch: _Epoch, reason: str) -> None:
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
            pending.settle(error=self._closed_error(epoch, outcome_unknown=pending.written))

    async def _end_epoch(self, epoch: _Epoch, reason: str) -> None:
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

    async def _write_quietly(self, epoch: _Epoch, line: bytes) -> None:
        try:
            await epoch.write(line)
        except ConnectionClosed:
            epoch.log.warning("answer not written", reason="the transport has closed")

    def _emit(self, event: Event) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:
            self._log.exception("event callback failed", event=type(event).__name__)

    def _on_stderr(self, line: str) -> None:
        self._emit(StderrLine(line))

    def _describe(self, message: Classified | Batch) -> dict[str, Any]:
        if isinstance(message, (Request, Notification)):
            return {"method": message.method}
        if isinstance(message, Response):
            info: dict[str, Any] = {"id": message.id if message.id is not None else message.id_kind}
            if message.error is not None:
                info["error"] = self.redactor.log_json(message.error)
            return info
        return {}


class _Progress(msgspec.Struct):
    progressToken: Any = None  # the wire's name
    progress: float = math.nan
    total: float | None = None
    message: str | None = None


_PROGRESS: Final = msgspec.json.Decoder(_Progress)
_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder(type_: Any) -> msgspec.json.Decoder[Any]:
    decoder = _DECODERS.get(type_)
    if decoder is None:
        decoder = _DECODERS[type_] = msgspec.json.Decoder(type_)
    return decoder


def _field(params: Raw | None, name: str) -> Any:
    if params is None:
        return None
    try:
        value = msgspec.json.decode(params)
    except msgspec.DecodeError:
        return None
    return value.get(name) if isinstance(value, dict) else None


def _with_progress_token(params: Any, token: int) -> Any:
    if params is UNSET or params is None:
        params = {}
    if not isinstance(params, dict):
        raise TypeError("progress needs params to be a dict (it carries _meta.progressToken)")
    meta = dict(params.get("_meta") or {})
    meta["progressToken"] = token
    return {**params, "_meta": meta}


async def _ping(_request: ServerRequest) -> Any:
    return {}
