"""The driver: one per server connection, the trio machinery under the typed client.

It owns a transport (a byte stream), reads it (a reader task, or on stdio and sockets
the caller waiting for its answer: mcpl_host.driver.reading), feeds every line to the
protocol core and does what the core decides, correlates the host's requests with their
answers, and serves the server's requests through transport-bound responders. Each
transport is an *epoch*; everything bound to an epoch (its profile, its responders, its
in-flight server requests) dies with it. With a :class:`~mcpl_host.Reconnect` policy a
lost transport is replaced by a new one, and the host's pending requests are rebound
onto it by the rule in :mod:`mcpl_host.driver.rebind`.

The driver knows nothing of MCP's typed calls, hooks or list caches: the public
:class:`~mcpl_host.Connection` (``mcpl_host.client.connection``) is a driver with those
on top. What the client adds reaches down only through what it passes in (handlers,
capabilities) and three methods it overrides: ``_on_notification``,
``_transport_up`` and ``_transport_replaced``.

Every inbound message ends with one typed outcome, logged as one structured event.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import itertools
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Self, TypeAlias, TypeVar, overload

import trio
from msgspec import UNSET, Raw

from .._log import PeerLogBudget, get_logger
from ..events import (
    Closed,
    Connected,
    Disconnected,
    Event,
    EventCallback,
    Reconnected,
    Reconnecting,
    ServerNotification,
    StderrLine,
)
from ..mcpl.host import Mcpl
from ..protocol.batch import DEFAULT_MAX_BATCH_ENTRIES, MAX_BATCH_ENTRIES_CEILING
from ..protocol.discover import LOG_LEVEL, Discovery, request_meta
from ..protocol.errors import (
    ConfigurationError,
    ConnectionClosed,
    McplHostError,
    RequestError,
    RequestTimeout,
    TransportError,
)
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.handshake import Established, Failed, InitializeResult
from ..protocol.messages import OutNotification, encode
from ..protocol.profiles import Profile, handshake_era, validate_allowlist
from ..protocol.redact import Redactor
from ..telemetry import Telemetry, instruments_for
from ..transports import Transport, open_transport
from ..transports.targets import StdioTarget, Target, describe, parse_target, redactor_for
from .epoch import DEFAULT_WRITE_TIMEOUT, Epoch
from .inbound import Inbound
from .lifespans import ConnectionSpans, connect_step, initialized_written
from .lifetime import OwnsNursery
from .mcpl_session import McplSession
from .negotiate import DEFAULT_DISCOVER_TIMEOUT, Negotiator
from .outbound import Outbound
from .pending import Pending, ProgressCallback
from .reading import Reading
from .reconnect import Reconnect
from .responder import Handler, ping

if TYPE_CHECKING:
    from ..telemetry._otel import ConnectionSpan, Instruments

__all__ = ["Driver", "ProgressCallback", "TransportFactory"]

_log = get_logger("mcpl_host.connection")  # the name embedders filter on
# What starts an address: a URL scheme and its colon (``unix:``, ``tcp://``...).
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# A new HTTP session after the server ended one (404), when no reconnect policy is set.
_RENEW_SESSION: Final = Reconnect(initial=0.1, maximum=1.0, jitter=0.1, max_attempts=3)

T = TypeVar("T")

TransportFactory: TypeAlias = Callable[[], Awaitable[Transport]]
"""Opens a transport of the embedder's own making (a memory stream, a custom socket)."""

DEFAULT_INITIALIZE_TIMEOUT: Final = 30.0
DEFAULT_REQUEST_TIMEOUT: Final = 60.0
DEFAULT_MAX_SERVER_REQUESTS: Final = 64
# Answers the reader has queued for a server that is not taking them (refusals, pings,
# invalid requests): past this many the host stops reading from it until they drain.
DEFAULT_MAX_OWED_ANSWERS: Final = 256


def _check_bounds(
    max_owed_answers: int, max_batch_entries: int, write_timeout: float, discover_timeout: float
) -> None:
    if max_owed_answers < 1:
        raise ConfigurationError("max_owed_answers must be at least 1")
    if not 1 <= max_batch_entries <= MAX_BATCH_ENTRIES_CEILING:
        raise ConfigurationError(
            f"max_batch_entries must be between 1 and {MAX_BATCH_ENTRIES_CEILING}"
        )
    if not write_timeout > 0:
        raise ConfigurationError("write_timeout must be positive")
    if not discover_timeout > 0:
        raise ConfigurationError("discover_timeout must be positive")


def _parse_address(text: str) -> Target:
    """A string target is an address (:func:`parse_target`). What users write first is a
    command line, which is never split: its error says what to write instead."""
    try:
        return parse_target(text)
    except ConfigurationError as error:
        if _SCHEME.match(text):
            raise
        raise ConfigurationError(
            f"{error}; a program to run is a StdioTarget: "
            'StdioTarget.of(["python", "-m", "server"]) (a command line is never split)'
        ) from None


class _State(enum.Enum):
    NEW = "new"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    CLOSED = "closed"


class Driver(OwnsNursery):
    """The connection machinery for one server: transports, handshake, requests both
    ways, reconnects. Used through its subclass :class:`~mcpl_host.Connection`; run it
    as an async context manager, or ``await nursery.start(driver.run)``."""

    # The connection's own spans (with telemetry), from its run on.
    _spans: ConnectionSpans | None = None

    def __init__(
        self,
        target: Target | str | TransportFactory,
        *,
        name: str | None = None,
        versions: list[str] | tuple[str, ...] | None = None,
        client_info: Mapping[str, Any] | None = None,
        handlers: Mapping[str, Handler] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        stateless_capabilities: Mapping[str, Any] | None = None,
        on_event: EventCallback | None = None,
        initialize_timeout: float = DEFAULT_INITIALIZE_TIMEOUT,
        discover_timeout: float = DEFAULT_DISCOVER_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS,
        max_owed_answers: int = DEFAULT_MAX_OWED_ANSWERS,
        max_batch_entries: int = DEFAULT_MAX_BATCH_ENTRIES,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        secrets: tuple[str, ...] = (),
        reconnect: Reconnect | None = None,
        on_wire: Callable[[str, bytes], None] | None = None,
        mcpl: Mcpl | None = None,
        telemetry: Telemetry | bool | None = None,
    ) -> None:
        """Raises :class:`~mcpl_host.ConfigurationError` for a bad target or allowlist.

        ``handlers`` serve the server's requests by method (``ping`` is built in);
        ``capabilities`` are the client capabilities ``initialize`` offers (MCPL's are
        added when ``mcpl`` is given), ``stateless_capabilities`` those every request
        names on the stateless revision. The other options are
        :class:`~mcpl_host.Connection`'s.
        """
        self.target: Target | TransportFactory = (
            _parse_address(target) if isinstance(target, str) else target
        )
        if callable(self.target):
            self.redactor = Redactor(secrets)
            self.name = name or "custom"
        else:
            self.redactor = redactor_for(self.target, extra_secrets=secrets)
            self.name = name or describe(self.target)
        self.allowlist = validate_allowlist(versions)
        if mcpl is not None:
            # MCPL extends the handshake era (its grant rides on initialize): an MCPL
            # connection never asks server/discover and never speaks 2026-07-28.
            self.allowlist = handshake_era(self.allowlist)
            if not self.allowlist:
                raise ConfigurationError("MCPL needs a handshake-era revision in versions")
        self.client_info = dict(client_info or {"name": "mcpl_host", "version": "0.1.0"})
        self.request_timeout = request_timeout
        self.initialize_timeout = initialize_timeout
        self.max_message_bytes = max_message_bytes
        self.max_server_requests = max_server_requests
        _check_bounds(max_owed_answers, max_batch_entries, write_timeout, discover_timeout)
        self.max_owed_answers = max_owed_answers
        self.write_timeout = write_timeout
        # One budget of log lines for everything this connection's server can cause.
        self._log_budget = PeerLogBudget()
        self._on_event = on_event
        self._handlers: dict[str, Handler] = {"ping": ping, **(handlers or {})}
        self._capabilities = dict(capabilities or {})
        self._stateless_capabilities = dict(stateless_capabilities or {})
        # 2026-07-28: the level of server logs every request asks for (None: no logs).
        self._log_level: str | None = None
        self._mcpl: McplSession | None = None
        if mcpl is not None:
            self._capabilities.update(McplSession.capabilities())

        self._ids = itertools.count(1)  # never reused on this connection
        self._epoch_numbers = itertools.count(1)
        self._reconnect = reconnect
        self._state = _State.NEW
        self._outbound = Outbound(
            telemetry=instruments_for(
                telemetry, server=self.name, target=self.target, redactor=self.redactor
            ),
            server=self.name,
            next_id=lambda: next(self._ids),
            redactor=self.redactor,
            spawn=self._spawn,
        )
        self._reconnect_scope: trio.CancelScope | None = None
        self._progress_listeners: dict[str, ProgressCallback] = {}
        self._inbound = Inbound(
            server=self.name,
            pending=self._outbound.pending,
            abandoned=self._outbound.abandoned,
            progress=self._outbound.progress,
            timeouts=self._outbound.timeouts,
            handlers=self._handlers,
            redactor=self.redactor,
            max_message_bytes=max_message_bytes,
            max_server_requests=max_server_requests,
            max_owed_answers=max_owed_answers,
            max_batch_entries=max_batch_entries,
            log_budget=self._log_budget,
            spawn=self._spawn,
            on_notification=self._on_notification,
            on_lost=self._end_epoch_soon,
            on_wire=on_wire,
            progress_listeners=self._progress_listeners,
        )
        self._on_wire = on_wire
        if mcpl is not None:
            self._mcpl = self._inbound.mcpl = McplSession(
                mcpl,
                server=self.name,
                redactor=self.redactor,
                call=self._call_on,
                dispatch=self._inbound.dispatch,
                spawn=self._spawn,
                emit=self._emit,
                on_refused_close=lambda: self._spawn(self.aclose),
                max_held_requests=max_server_requests,
                log_budget=self._log_budget,
            )
        self._negotiator = Negotiator(
            allowlist=self.allowlist,
            capabilities=self._capabilities,
            stateless_capabilities=self._stateless_capabilities,
            client_info=self.client_info,
            redactor=self.redactor,
            next_id=lambda: next(self._ids),
            discover_timeout=discover_timeout,
            # A target of the embedder's own making has no name to remember an era by.
            era_key=None if callable(self.target) else self.target,
        )
        self._epoch: Epoch | None = None
        self._nursery: trio.Nursery | None = None
        self._closing = False
        self._closed = trio.Event()
        self._closed_reason = "closed"
        self.initialize_result: InitializeResult | None = None
        self.timings_ms: dict[str, float] = {}
        self._log = self._log_budget.wrap(_log).bind(server=self.name)

    @property
    def telemetry(self) -> Instruments | None:
        """The connection's OpenTelemetry instruments (None: telemetry is off)."""
        return self._outbound.telemetry

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
    def transport(self) -> Transport | None:
        """The current transport (a stdio one has ``pid``), None between transports."""
        epoch = self._epoch
        return epoch.transport if epoch is not None and epoch.open else None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the host told the server it can do: on the stateless revision, what each
        request names; else what ``initialize`` offered."""
        profile = self.profile
        if profile is not None and profile.stateless:
            return dict(self._stateless_capabilities)
        return dict(self._capabilities)

    # -- lifetime ----------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[Self] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect, then serve (and reconnect, with a policy) until closed. Use with
        ``nursery.start``.

        Raises (before ``started``) :class:`~mcpl_host.SpawnError`,
        :class:`~mcpl_host.TransportError`, :class:`~mcpl_host.InitializeError`,
        :class:`~mcpl_host.VersionError`, :class:`~mcpl_host.RequestTimeout` (handshake
        timeout) or :class:`~mcpl_host.ProtocolError`. The first connect is not retried:
        a reconnect policy applies once a connection has been established.
        """
        failure: McplHostError | None = None
        if self.telemetry is not None:
            self.telemetry.leave_ambient()
            self._spans = ConnectionSpans(self.telemetry)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._outbound.timeouts.run)
            try:
                started = trio.current_time()
                await self._open_epoch(started)
            except McplHostError as exc:
                failure = exc
                self._state = _State.CLOSED
                self._closed.set()
            else:
                self._state = _State.CONNECTED
                self._transport_up()
                task_status.started(self)
                await self._supervise()
            nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def aclose(self) -> None:
        """Close the connection: pending requests fail with ConnectionClosed, a reconnect in
        progress stops, the transport is shut down (a stdio server stopped and reaped).
        Idempotent; safe to call from any task."""
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        with trio.CancelScope(shield=True):
            await self._outbound.flush_notices()
            if self._reconnect_scope is not None:
                self._reconnect_scope.cancel()
            if self._epoch is not None:
                await self._end_epoch(self._epoch, "closed")
            self._finish("closed")

    # -- connecting --------------------------------------------------------------------

    async def _open_epoch(self, started: float) -> Epoch:
        """Open a transport and run the handshake on it; on any failure (cancellation
        included) the transport is shut down before the error propagates. With
        telemetry, in a ``mcpl_host.connect`` span (driver.lifespans)."""
        if self._spans is None:
            return await self._open_epoch_in(started, None)
        return await self._spans.connect(functools.partial(self._open_epoch_in, started))

    async def _open_epoch_in(self, started: float, connect: ConnectionSpan | None) -> Epoch:
        nursery = self._nursery
        assert nursery is not None
        # A program is spawned; any other transport is opened.
        with connect_step(connect, "spawn" if isinstance(self.target, StdioTarget) else "open"):
            transport = await self._open_transport(nursery)
        opened = trio.current_time()
        epoch = self._new_epoch(transport, connect)
        epoch.reading = reading = Reading(epoch, self._inbound, self._outbound.pending)
        nursery.start_soon(reading.run)
        nursery.start_soon(epoch.write_loop)
        failed: McplHostError | None = None  # the handshake's own failure, raised as is
        try:
            with connect_step(connect, "handshake") as handshake:
                epoch.handshake_deadline = trio.current_time() + self.initialize_timeout
                with trio.fail_at(epoch.handshake_deadline):
                    step = await self._negotiator.run(epoch, handshake)
                if isinstance(step, Established):
                    if epoch.initialized is not None:
                        await initialized_written(epoch, epoch.initialized, handshake)
                    if not epoch.open:  # lost right after: it never served as a connection
                        raise epoch.closed_error(outcome_unknown=False)  # noqa: TRY301 - as a lost write
                else:
                    assert isinstance(step, Failed)
                    failed = step.error
                    failed.server = self.name
                    raise failed  # noqa: TRY301 - inside the step: its span ends failed
        except trio.TooSlowError:
            await self._end_epoch(epoch, "initialize-timeout")
            method = "server/discover" if isinstance(epoch.handshake, Discovery) else "initialize"
            raise RequestTimeout(
                f"no answer to {method} within {self.initialize_timeout:g} s",
                method=method,
                timeout=self.initialize_timeout,
                server=self.name,
            ) from None
        except ConnectionClosed as exc:
            if exc is failed:
                await self._end_epoch(epoch, epoch.end_reason or "initialize-failed")
                raise
            reason = epoch.end_reason or "write-failed"
            await self._end_epoch(epoch, reason)
            raise TransportError(
                f"the transport closed during initialize ({reason})",
                reason=reason,
                server=self.name,
            ) from exc
        except McplHostError:
            await self._end_epoch(epoch, epoch.end_reason or "initialize-failed")
            raise
        except BaseException:  # cancelled (close() during a reconnect, say)
            await self._end_epoch(epoch, "closed")
            raise
        assert isinstance(step, Established)
        self._connected(epoch, step, started, opened)
        return epoch

    def _new_epoch(self, transport: Transport, connect: ConnectionSpan | None) -> Epoch:
        """The epoch of a transport just opened, made the current one."""
        epoch = Epoch(
            next(self._epoch_numbers),
            transport,
            server=self.name,
            on_lost=self._end_epoch_soon,
            spawn=self._spawn,
            write_timeout=self.write_timeout,
            log=self._log_budget.wrap(_log),
            on_wire=self._on_wire,
            telemetry=self.telemetry,
        )
        if connect is not None:
            epoch.connect_span = connect
            assert self.telemetry is not None
            # The current transport's span: a request rebound onto it links to it.
            self.telemetry.connection = connect
        epoch.on_late_write = self._outbound.written_late
        self._attach_stateless_http(transport, epoch)
        self._epoch = epoch
        return epoch

    def _attach_stateless_http(self, transport: Transport, epoch: Epoch) -> None:
        """What an HTTP transport needs of the connection on 2026-07-28: the tools'
        ``x-mcp-header`` annotations (for ``Mcp-Param-*``), and where to report the
        requests whose response stream broke (re-issued or failed by the rebinding rule).
        Other transports have neither hook."""
        use_tool_headers = getattr(transport, "use_tool_headers", None)
        if use_tool_headers is not None:
            use_tool_headers(self._outbound.tool_headers.plan)
        on_broken = getattr(transport, "on_broken_streams", None)
        if on_broken is not None:
            on_broken(lambda ids: self._outbound.reissue(epoch, ids))
        on_failed = getattr(transport, "on_failed_requests", None)
        if on_failed is not None:
            on_failed(lambda ids, error: self._fail_requests(epoch, ids, error))
        if self._on_wire is not None and hasattr(transport, "on_http"):
            on_wire = self._on_wire
            transport.on_http = lambda text: on_wire("http", text.encode())

    def _fail_requests(self, epoch: Epoch, request_ids: list[Any], error: McplHostError) -> None:
        """The transport failed ``request_ids`` at the HTTP level, with a typed error of
        its own: every request is settled with it. The handshake's request is judged by
        the handshake's own rule when the error stands for an answer (a -32603 for an
        HTTP refusal: initialize fails, server/discover may fall back), and fails the
        connect as it is otherwise (authorization)."""
        error.server = self.name
        handshake = epoch.handshake
        for request_id in request_ids:
            if (
                handshake is not None
                and epoch.handshake_step is None
                and request_id == handshake.request_id
            ):
                if isinstance(error, RequestError) and error.code is not None:
                    self._inbound.answer_handshake(epoch, request_id, error)
                else:
                    epoch.handshake_step = Failed(error)
                    epoch.handshake_done.set()
                continue
            self._outbound.fail(epoch, request_id, error)

    def _use_log_level(self, level: str) -> None:
        """2026-07-28 has no logging/setLevel: every request from now on asks for the
        server's log messages at ``level`` and above in its ``_meta``."""
        self._log_level = level
        if self._outbound.meta is not None:
            self._outbound.meta = {**self._outbound.meta, LOG_LEVEL: level}

    def _tool_rejected(self, name: str) -> str | None:
        """Why the last listing rejected tool ``name`` (2026-07-28), or None."""
        return self._outbound.tool_headers.rejected(name) if self._outbound.meta else None

    def _connected(self, epoch: Epoch, step: Established, started: float, opened: float) -> None:
        epoch.connected_at = now = trio.current_time()
        self.initialize_result = step.result
        if self.telemetry is not None:
            self.telemetry.protocol_version = step.profile.revision
        # Every request from now on names the revision in force (or none: handshake era).
        self._outbound.meta = (
            request_meta(
                step.profile.revision,
                self._stateless_capabilities,
                self.client_info,
                self._log_level,
            )
            if step.profile.stateless
            else None
        )
        if self._mcpl is not None:
            self._mcpl.start(epoch)
        if not self.timings_ms:
            self.timings_ms = {
                "connect": round((opened - started) * 1000, 3),
                "initialize": round((now - opened) * 1000, 3),
                "total": round((now - started) * 1000, 3),
            }
        epoch.log.info("connected", protocol_version=step.profile.revision)
        if epoch.epoch_number == 1:
            self._emit(
                Connected(epoch.epoch_number, step.profile.revision, step.result.server_info)
            )

    async def _open_transport(self, nursery: trio.Nursery) -> Transport:
        # Opening is bounded too: a TCP connect to a black hole must not hold an attempt.
        transport: Transport | None = None
        with trio.move_on_after(self.initialize_timeout):
            if callable(self.target):
                transport = await self.target()
            else:
                transport = await open_transport(
                    self.target,
                    nursery=nursery,
                    on_stderr=self._on_stderr,
                    redactor=self.redactor,
                    max_message_bytes=self.max_message_bytes,
                )
        if transport is None:
            raise TransportError(
                f"could not open the transport within {self.initialize_timeout:g} s",
                reason="connect-timeout",
                server=self.name,
            )
        return transport

    # -- supervising -------------------------------------------------------------------

    async def _supervise(self) -> None:
        """Wait for each transport to end; replace it (with a policy) or finish."""
        failed = 0  # attempts that failed since the last connection that proved stable
        while True:
            epoch = self._epoch
            assert epoch is not None
            await epoch.ended.wait()
            if self._closing:
                return
            policy = self._reconnect
            if policy is None and epoch.end_reason == "session-expired":
                # The server ended the HTTP session (404): MCP says start a new one.
                policy = _RENEW_SESSION
            if policy is None:
                self._finish(epoch.end_reason or "closed")
                return
            assert epoch.connected_at is not None  # only a connected epoch is supervised
            lived = trio.current_time() - epoch.connected_at
            failed = failed + 1 if lived < policy.stable else 0
            self._state = _State.RECONNECTING
            try:
                with trio.CancelScope() as self._reconnect_scope:
                    new, failed = await self._replace(epoch, policy, failed)
            except McplHostError as exc:
                self._log.warning("reconnect failed", error=self.redactor.log_value(str(exc)))
                self._finish("reconnect-failed", cause=exc)
                return
            finally:
                self._reconnect_scope = None
            if self._closing:
                return
            self._state = _State.CONNECTED
            assert new is not None
            # Before the rebound requests are queued: what the subclass asks the new
            # transport for first (the server's forgotten state) goes out ahead of them.
            self._transport_replaced()
            profile = new.profile
            assert profile is not None
            assert self.initialize_result is not None
            self._emit(
                Reconnected(new.epoch_number, profile.revision, self.initialize_result.server_info)
            )
            self._outbound.resend(new)

    async def _replace(
        self, lost: Epoch, policy: Reconnect, failed: int
    ) -> tuple[Epoch | None, int]:
        """:meth:`_reconnect_once`, with telemetry in a ``mcpl_host.reconnect`` span."""
        replace = functools.partial(self._reconnect_once, policy, failed)
        if self._spans is None:
            return await replace()
        return await self._spans.reconnect(lost.connect_span, replace)

    def _attempted(self, number: int, error: BaseException | None) -> None:
        if self._spans is not None:
            self._spans.attempted(number, error)

    async def _reconnect_once(self, policy: Reconnect, failed: int) -> tuple[Epoch | None, int]:
        """Connect+handshake under the policy's backoff, going on from ``failed`` attempts
        that already failed; return the new epoch (None when cancelled by close()) and
        the attempts that failed before it.

        Raises the last error when the error is permanent or the attempts run out.
        """
        if policy.max_attempts is not None and failed >= policy.max_attempts:
            raise TransportError(
                f"gave up after {failed} failed attempts in a row (a connection that ends "
                f"within {policy.stable:g} s of its handshake counts as one)",
                reason="unstable",
                server=self.name,
            )
        delay = policy.delay(failed + 1)
        self._emit(Reconnecting(failed + 1, delay))
        await trio.sleep(delay)
        retrying = policy.retrying(
            lambda attempt, delay: self._emit(Reconnecting(attempt, delay)), failed_before=failed
        )
        async for attempt in retrying:
            with attempt:
                number = failed + attempt.retry_state.attempt_number
                try:
                    epoch = await self._open_epoch(trio.current_time())
                except McplHostError as exc:
                    self._attempted(number, exc)
                    raise
                self._attempted(number, None)
                return epoch, number - 1
        return None, failed  # pragma: no cover - tenacity either returns or raises

    def _finish(self, reason: str, cause: McplHostError | None = None) -> None:
        """The connection is over for good: every request still waiting fails."""
        if self._state is _State.CLOSED and self._closed.is_set():
            return
        self._closing = True
        self._state = _State.CLOSED
        self._closed_reason = reason
        text = f"connection closed ({reason})"
        if cause is not None:
            text += f": {self.redactor.log_value(str(cause))}"
        self._outbound.fail_all(text, reason, cause)
        self._log.info("closed", reason=reason)
        self._log_budget.flush()
        self._emit(Closed(reason, cause))
        self._closed.set()

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
        rebind: bool | None = ...,
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
        rebind: bool | None = ...,
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
        rebind: bool | None = None,
    ) -> Any:
        """Send a request and wait for its answer; return the result decoded as
        ``result_type`` (plain JSON values by default, ``msgspec.Raw`` to keep it raw).

        ``timeout`` defaults to the connection's ``request_timeout`` (60 s).
        ``on_progress(progress, total, message)`` adds ``_meta.progressToken``; with
        ``progress_resets_timeout`` each progress notification restarts the timeout, never
        past ``max_timeout`` from the start (default: 10 x ``timeout``).

        On timeout or cancellation of the caller, ``notifications/cancelled`` is sent for
        the request (bounded, shielded) before the error or the cancellation propagates.

        While the connection is reconnecting the request waits (within its timeout) for
        the new transport. If its transport is lost after it was written, it is sent
        again on the next one only when safe to repeat (see docs/reconnect.md);
        ``rebind=True`` always allows that, ``rebind=False`` never.

        Raises :class:`~mcpl_host.RequestError` (the server's error answer, with code,
        message and data), :class:`~mcpl_host.RequestTimeout`,
        :class:`~mcpl_host.ConnectionClosed` (``outcome_unknown`` when the request was
        written and never answered), :class:`~mcpl_host.ProtocolError` (an answer with
        neither result nor error, or a result that does not decode as ``result_type``),
        ``TypeError`` for params JSON cannot carry, and, on an MCPL connection,
        :class:`~mcpl_host.CapabilityDenied` (nothing written) for a host-to-server MCPL
        method the grant in force does not allow; a granted one is never rebound onto
        another transport.
        """
        self._check_open()
        epoch = self._epoch
        ready = (
            epoch if self._state is _State.CONNECTED and epoch is not None and epoch.open else None
        )
        pinned = self._mcpl is not None and self._mcpl.check_send(
            method, connected=ready is not None
        )
        return await self._outbound.call(
            ready,
            method,
            params,
            result_type=result_type,
            timeout=self.request_timeout if timeout is None else timeout,
            on_progress=on_progress,
            progress_resets_timeout=progress_resets_timeout,
            max_timeout=max_timeout,
            rebind=rebind,
            pinned=pinned,
        )

    async def notify(
        self, method: str, params: Any = UNSET, *, timeout: float | None = None
    ) -> None:
        """Send a notification, returning once it is written.

        Raises :class:`~mcpl_host.ConnectionClosed` when the connection is not up (closed,
        or between transports) or the write fails; :class:`~mcpl_host.RequestTimeout`
        when it is not written within ``timeout`` (default: ``request_timeout``; the
        server is not reading; the line may still go out later); on an MCPL connection,
        :class:`~mcpl_host.CapabilityDenied` (nothing written) for a host-to-server MCPL
        method the grant in force does not allow.
        """
        self._check_open()
        epoch = self._ready_epoch()
        if epoch is None:
            raise ConnectionClosed(
                "no transport right now (reconnecting)", reason="reconnecting", server=self.name
            )
        if self._mcpl is not None:
            self._mcpl.check_send(method, connected=True)
        line = encode(OutNotification(method=method, params=params))
        limit = self.request_timeout if timeout is None else timeout
        with trio.move_on_after(limit):
            await epoch.write(line)
            return
        raise RequestTimeout(
            f"{method} not written within {limit:g} s: the server is not reading",
            method=method,
            timeout=limit,
            server=self.name,
        )

    async def _call_on(
        self,
        epoch: Epoch,
        method: str,
        params: Any,
        timeout: float,
        on_settle: Callable[[Pending], None],
    ) -> Raw:
        """A request written on ``epoch`` itself, never rebound to another transport (the
        grant of a new transport is sent anew)."""
        result: Raw = await self._outbound.call(
            epoch,
            method,
            params,
            result_type=Raw,
            timeout=timeout,
            on_progress=None,
            progress_resets_timeout=False,
            max_timeout=None,
            rebind=False,
            on_settle=on_settle,
            pinned=True,
        )
        return result

    def _request_now(
        self, method: str, params: Any, *, timeout: float | None = None
    ) -> Pending | None:
        """Queue a request on the current transport at once, ahead of anything queued
        after this call, and bound to that transport (never rebound); None between
        transports. :meth:`_answer` waits for its answer. ``timeout`` defaults to
        ``request_timeout``; ``math.inf`` for a request the server answers only when it
        is done with it (``subscriptions/listen``), which its transport's end, closing
        the connection or the caller's cancellation still ends."""
        epoch = self._ready_epoch()
        if epoch is None:
            return None
        limit = self.request_timeout if timeout is None else timeout
        return self._outbound.start(epoch, method, params, timeout=limit, rebind=False, pinned=True)

    @contextlib.contextmanager
    def _listening_for_progress(self, callback: ProgressCallback) -> Iterator[str]:
        """A progress token of the host's own, live while the block runs: progress
        notifications naming it go to ``callback``. For a task, whose progress goes on
        after the request that named the token was answered (a request's own token dies
        with its answer). A string, so it never meets a request's integer token."""
        token = f"mcpl_host/{next(self._ids)}"  # ids are never reused: neither is this
        self._progress_listeners[token] = callback
        try:
            yield token
        finally:
            del self._progress_listeners[token]

    async def _answer(self, pending: Pending, *, timeout: float | None = None) -> Raw:
        """The answer to a request :meth:`_request_now` queued (``timeout``: the one it
        was queued with, for the error's text); raises what :meth:`request` raises."""
        result: Raw = await self._outbound.finish(
            pending, result_type=Raw, timeout=self.request_timeout if timeout is None else timeout
        )
        return result

    @property
    def mcpl_grant(self) -> frozenset[str]:
        """The MCPL capability paths granted now (empty without MCPL or before the
        receipt of the grant)."""
        return self._mcpl.grant.granted if self._mcpl is not None else frozenset()

    async def set_mcpl_grants(self, grants: Iterable[str]) -> None:
        """Change the MCPL grant patterns and send the new grant (``featureSets/update``),
        returning once it is settled: what it takes away stops at once, what it adds
        applies only when the server's receipt accepts it.

        Raises ``ValueError`` when the connection was made without ``mcpl``.
        """
        if self._mcpl is None:
            raise ValueError("this connection does not speak MCPL: pass mcpl=Mcpl(...)")
        await self._mcpl.regrant(self._ready_epoch(), tuple(grants))

    def _ready_epoch(self) -> Epoch | None:
        """The transport to write on now; None between transports."""
        epoch = self._epoch
        if self._state is _State.CONNECTED and epoch is not None and epoch.open:
            return epoch
        return None

    def _check_open(self) -> None:
        if self._state is _State.NEW or self._state is _State.CLOSED or self._closing:
            raise ConnectionClosed(
                f"the connection is not open ({self._closed_reason})",
                reason=self._closed_reason,
                server=self.name,
            )

    # -- ending an epoch ---------------------------------------------------------------

    def _end_epoch_soon(self, epoch: Epoch, reason: str) -> None:
        """Mark the epoch over now (nothing more is written to it); shut it down in a task."""
        if epoch.open:
            self._mark_ended(epoch, reason)
            self._spawn(self._end_epoch, epoch, reason)

    def _mark_ended(self, epoch: Epoch, reason: str) -> None:
        epoch.end(reason)
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
        renews = self._reconnect is not None or reason == "session-expired"
        self._outbound.rebind(epoch, reconnecting=renews and not self._closing)

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
            if epoch.connected_at is not None:
                if self.telemetry is not None:
                    self.telemetry.session_ended(trio.current_time() - epoch.connected_at)
                self._emit(Disconnected(epoch.epoch_number, epoch.end_reason or reason))

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
            self._log.exception("event callback failed", kind=type(event).__name__)

    def _on_stderr(self, line: str) -> None:
        self._emit(StderrLine(line))

    # -- what a subclass adds ----------------------------------------------------------

    def _on_notification(self, method: str, params: Raw | None) -> None:
        """A server notification the request machinery does not consume itself
        (progress is, and a cancellation of a server request in flight). A
        ``notifications/cancelled`` that comes here names none of the server's own
        requests: one of the host's, which the subclass may act on (a listen)."""
        if method != "notifications/cancelled":
            self._emit(ServerNotification(method, params))

    def _transport_up(self) -> None:
        """The first transport is up (its profile bound), before ``run`` reports
        started: what the subclass opens on it now goes out ahead of the embedder's
        first request."""

    def _transport_replaced(self) -> None:
        """A new transport is up after a reconnect: it may reach a changed server, one
        that forgot what the last one was told. Called before the rebound requests are
        queued on it; :meth:`_request_now` puts a request ahead of them."""
