"""One managed server: its supervisor task, its status, and its events.

The first connect is retried under the manager's policy (a server may start after the
host); once ready, the Connection's own policy replaces lost transports and rebinds
pending requests. The status follows the attempts and the connection's events. Nothing
here raises out of :meth:`ManagedServer.supervise` but cancellation: one server's
failure stays its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeAlias

import trio

from .._log import get_logger
from ..client.connection import Connection, TransportFactory
from ..driver.reconnect import Reconnect
from ..events import (
    Closed,
    Connected,
    Disconnected,
    Event,
    EventCallback,
    Reconnected,
    Reconnecting,
)
from ..protocol.errors import ConfigurationError, ConnectionClosed, McplHostError
from ..protocol.redact import Redactor
from ..transports.targets import Target
from .status import ServerState, ServerStatus

__all__ = ["ConnectionMaker", "ManagedServer", "ManagerEventCallback"]

_log = get_logger("mcpl_host.manager")

ConnectionMaker: TypeAlias = Callable[
    [str, Target | str | TransportFactory, EventCallback], Connection
]
"""Builds one Connection (name, target, event callback) with the manager's options."""

ManagerEventCallback: TypeAlias = Callable[[str, Event], None]
"""Called with the server's name and each event of its connection."""


class ManagedServer:
    """Supervises one configured server: run :meth:`supervise` as a task, end it with
    :meth:`close`."""

    def __init__(
        self,
        name: str,
        target: Target | str | TransportFactory | None,
        *,
        problem: ConfigurationError | None,
        disabled: bool,
        policy: Reconnect | None,
        make_connection: ConnectionMaker,
        on_event: ManagerEventCallback | None,
        on_status: Callable[[ServerStatus], None] | None,
    ) -> None:
        self.name = name
        self._target = target
        self._policy = policy
        self._make_connection = make_connection
        self._on_event = on_event
        self._on_status = on_status
        if disabled:
            self.status = ServerStatus(name, "disabled")
        elif problem is not None:
            self.status = ServerStatus(name, "failed", error=problem)
        else:
            self.status = ServerStatus(name, "connecting")
        self.connection: Connection | None = None
        self._live: Connection | None = None  # started: close() must aclose it
        self._connect_scope = trio.CancelScope()
        self._over = trio.Event()  # the ready Connection has closed for good
        self._last_error: McplHostError | None = None  # of the attempt that just failed
        self._started = False
        self._closing = False
        self._finished = trio.Event()
        self._log = _log.bind(server=name)
        # An error can carry the server's text: logged through its connection's
        # redactor (escape and cut only until a connection exists).
        self._redactor = Redactor()

    # -- the supervisor task -------------------------------------------------------------

    async def supervise(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Connect (retrying), then stay until the connection closes for good. Use with
        ``nursery.start``: started once the first state is reported, before any attempt
        (the manager is usable at once, whatever its servers do).

        Never raises but cancellation; a failure ends as status ``failed``.
        """
        self._started = True
        reported = False
        try:
            if self._closing:  # closed before it ever ran
                if self.status.state == "connecting":
                    self._set("closed")
                return
            # Stamps `since` and reports the first state of every server, started or not.
            self._set(self.status.state)
            task_status.started()
            reported = True
            if self.status.state == "connecting":  # not disabled, nor failed for its config
                await self._supervise()
        except Exception as exc:
            # A bug reached here: it must cost this server only, never the manager.
            self._log.exception("supervisor failed")
            error = McplHostError(f"the supervisor failed ({type(exc).__name__})", server=self.name)
            error.__cause__ = exc
            self._set("failed", error=error, retrying=False, retry_at=None)
        finally:
            self._finished.set()
            if not reported:  # whatever happened, the manager's start goes on
                task_status.started()

    async def _supervise(self) -> None:
        async with trio.open_nursery() as nursery:
            conn = None  # stays None when close() cancels the attempts
            with self._connect_scope:
                conn = await self._connect(nursery)
            if conn is not None:
                try:
                    if not self._closing:  # close() may have come while start() returned
                        await self._over.wait()
                finally:
                    # Graceful even when the manager itself is cancelled: pending requests
                    # fail with ConnectionClosed, a stdio server is stopped and reaped.
                    with trio.CancelScope(shield=True):
                        await conn.aclose()
        if self._closing and (
            self.status.state in ("connecting", "ready", "reconnecting") or self.status.retrying
        ):
            self._set("closed", error=None, retrying=False, retry_at=None)

    async def _connect(self, nursery: trio.Nursery) -> Connection | None:
        """The first connection, retried under the policy; None when given up."""
        try:
            if self._policy is None:
                return await self._attempt(nursery)
            async for attempt in self._policy.retrying(self._before_retry):
                with attempt:
                    return await self._attempt(nursery)
        except McplHostError as exc:  # permanent, out of attempts, or no policy
            if not self._closing:
                failures = self.status.failures + 1
                self._set("failed", error=exc, failures=failures, retrying=False, retry_at=None)
        return None

    async def _attempt(self, nursery: trio.Nursery) -> Connection:
        # A fresh Connection per attempt: one whose run() failed is closed for good.
        assert self._target is not None
        if self.status.state == "failed":  # the wait for this retry is over
            self._set("connecting", retrying=False, retry_at=None)
        try:
            conn = self._make_connection(self.name, self._target, self._forward)
            self._redactor = conn.redactor
            # Known before it starts: its Connected event makes the status "ready", and
            # whoever sees that status must find this connection.
            self.connection = conn
            await nursery.start(conn.run)
        except McplHostError as exc:
            self.connection = None
            self._last_error = exc
            self._log.info("connect attempt failed", error=self._redactor.log_value(str(exc)))
            raise
        except BaseException:
            self.connection = None
            raise
        self._live = conn
        return conn

    def _before_retry(self, _attempt: int, delay: float) -> None:
        """The attempt failed and the policy will try again after ``delay``."""
        if self._closing:
            return
        self._set(
            "failed",
            error=self._last_error,
            failures=self.status.failures + 1,
            retrying=True,
            retry_at=trio.current_time() + delay,
        )

    # -- events --------------------------------------------------------------------------

    def _forward(self, event: Event) -> None:
        """The connection's event: update the status, then tell the embedder."""
        match event:
            case (
                Connected(protocol_version=version, server_info=info)
                | Reconnected(protocol_version=version, server_info=info)
            ):
                self._set(
                    "ready",
                    error=None,
                    protocol_version=version,
                    server_info=info,
                    failures=0,
                    retry_at=None,
                )
            case Disconnected(reason=reason) if self._policy is not None and not self._closing:
                lost = ConnectionClosed(
                    f"the transport was lost ({reason})", reason=reason, server=self.name
                )
                self._set("reconnecting", error=lost)
            case Reconnecting(attempt=attempt, delay=delay) if not self._closing:
                at = trio.current_time() + delay
                self._set("reconnecting", failures=attempt - 1, retry_at=at)
            case Closed(reason=reason, error=cause):
                if self._closing or reason == "closed":
                    self._set("closed", error=None, retry_at=None)
                else:
                    self._give_up(reason, cause)
                self._over.set()
            case _:
                pass
        if self._on_event is not None:
            try:
                self._on_event(self.name, event)
            except Exception:
                self._log.exception("event callback failed", kind=type(event).__name__)

    def _give_up(self, reason: str, cause: McplHostError | None) -> None:
        """The connection ended for good: lost without a policy, or its policy gave up
        (``cause``: the last attempt's error, already made safe where it was made)."""
        failures = self.status.failures
        if reason == "reconnect-failed" and self.status.retry_at is not None:
            failures += 1  # the attempt its last Reconnecting announced failed too
        text = f"the connection ended ({reason})"
        if cause is not None:
            text += f": {cause.message}"
        ended = ConnectionClosed(text, reason=reason, server=self.name)
        ended.__cause__ = cause
        self._set("failed", error=ended, failures=failures, retry_at=None)

    def _set(self, state: ServerState, **changes: Any) -> None:
        old = self.status
        since = trio.current_time() if state != old.state or old.since is None else old.since
        new = dataclasses.replace(old, state=state, since=since, **changes)
        if new == old:
            return
        self.status = new
        if state != old.state:
            if state == "failed" and new.error is not None:
                # A failure that is retried is routine (its attempt was logged); a final
                # one is what someone must act on.
                level = self._log.info if new.retrying else self._log.warning
                error = self._redactor.log_value(str(new.error))
                level("server state", state=state, error=error, retrying=new.retrying)
            else:
                self._log.info("server state", state=state)
        if self._on_status is not None:
            try:
                self._on_status(new)
            except Exception:
                self._log.exception("status callback failed", state=state)

    # -- closing -------------------------------------------------------------------------

    async def close(self) -> None:
        """Close this server: stop connecting, close its connection. Idempotent; never
        raises. A ``failed`` server that is not retrying, or a ``disabled`` one, keeps
        its state; any other becomes ``closed``."""
        if self._closing:
            if self._started:
                await self._finished.wait()
            return
        self._closing = True
        self._connect_scope.cancel()
        if not self._started:
            if self.status.state == "connecting":
                self._set("closed")
            return
        # One still starting is stopped by the cancelled scope; one that has started is
        # closed gracefully, which also ends the supervisor's wait.
        if self._live is not None:
            await self._live.aclose()
        await self._finished.wait()
