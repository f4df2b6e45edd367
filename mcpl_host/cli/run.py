"""Connecting to one server and making the report: the handshake, then either the lists
it advertises (``connect``) or one request (``call``).

Each server's run ends in a report, never an exception: whatever fails is caught here
and becomes the report's ``error``, so that with ``--all`` one server's failure never
reaches another's. While connected, the :class:`~mcpl_host.Connection` answers the
server's own requests as a host does (``ping``; -32601 for the rest).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TextIO

import trio
from msgspec import Raw

from .. import __version__
from ..client.connection import Connection
from ..client.lists import LISTS, declared, has_none
from ..client.pagination import list_raw
from ..events import Event, StderrLine
from ..protocol.errors import (
    AuthorizationRequired,
    McplHostError,
)
from ..protocol.profiles import era_of
from ..protocol.redact import Redactor
from ..transports.targets import HttpTarget, StdioTarget
from .args import Call
from .failure import CONFIG_ERROR, OUTPUT_SCHEMA_MISMATCH, describe_failure, error_object
from .jsonvalue import tool_outcome
from .outputcheck import MISMATCHED, check_output
from .signals import Interrupts
from .targets import Planned
from .trace import WireWatch

__all__ = ["CLIENT_INFO", "Settings", "run_server"]

CLIENT_INFO: Final = {"name": "mcpl-host", "version": __version__}
# The last lines a failed stdio server wrote on stderr, kept for the report: the reason
# a server exits at once is usually there.
STDERR_TAIL: Final = 20

ProgressPrinter = Callable[[Redactor, float, float | None, str | None], None]


@dataclass(frozen=True, slots=True)
class Settings:
    """What every server's run shares: the command line's connection options.
    ``redactors`` collects each connection's redactor, for the report: a connection's
    redactor also learns the secrets it obtains while connected (OAuth tokens)."""

    versions: tuple[str, ...] | None
    timeout: float
    started: float
    trace: TextIO | None = None
    label_traces: bool = False
    on_progress: ProgressPrinter | None = None
    redactors: list[Redactor] | None = None
    interrupts: Interrupts | None = None


async def run_server(planned: Planned, settings: Settings, call: Call | None) -> dict[str, Any]:
    """Connect to ``planned``, list or call, close; return the report. A signal of
    ``settings.interrupts`` cancels the run: the server is closed (a stdio server
    reaped) and the report is ``cancelled``, with what was known. Raises nothing but
    the caller's cancellation."""
    if planned.target is None:
        assert planned.problem is not None
        return _failed(planned, error_object(CONFIG_ERROR, planned.problem))
    server_run = _ServerRun(planned, settings)
    interrupts = settings.interrupts
    if interrupts is None:
        return await server_run.report(call)
    report: dict[str, Any] | None = None
    with interrupts.cancellable() as scope:
        report = await server_run.report(call)
    # A failure once the signal came is the cancellation's doing (the connection was
    # closed under the request); a report finished before it stands.
    if report is None or (scope.cancel_called and not report["ok"]):
        return server_run.cancelled(interrupts.error())
    return report


class _ServerRun:
    """One server's connection, and what is known about it so far for the report."""

    def __init__(self, planned: Planned, settings: Settings) -> None:
        self.planned = planned
        self.settings = settings
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.watch = WireWatch(
            stream=settings.trace,
            started=settings.started,
            label=planned.name if settings.label_traces else None,
        )
        self.known: dict[str, Any] = {}
        self.method: str | None = None  # the request under way, named in its failure
        self.redactor = Redactor(planned.secrets)  # the connection's, once it is made

    def _on_event(self, event: Event) -> None:
        if isinstance(event, StderrLine):
            self.stderr_tail.append(event.line)

    async def report(self, call: Call | None) -> dict[str, Any]:
        planned, settings = self.planned, self.settings
        assert planned.target is not None
        begun = time.perf_counter()
        try:
            conn = Connection(
                planned.target,
                name=planned.name,
                versions=settings.versions,
                initialize_timeout=settings.timeout,
                request_timeout=settings.timeout,
                secrets=planned.secrets,
                on_event=self._on_event,
                on_wire=self.watch,
                client_info=CLIENT_INFO,
            )
        except McplHostError as exc:  # a bad allowlist or target: nothing was started
            return _failed(planned, describe_failure(exc, Redactor(planned.secrets)))
        self.watch.redactor = self.redactor = conn.redactor
        if settings.redactors is not None:
            settings.redactors.append(conn.redactor)
        error: dict[str, Any] | None = None
        async with trio.open_nursery() as nursery:
            try:
                # Connection bounds opening the transport and the handshake, each by
                # initialize_timeout.
                await nursery.start(conn.run)
            except McplHostError as exc:
                error = self._describe(exc, conn.redactor)
            else:
                try:
                    # Made while still connected: the connection closes after the report.
                    return await self._connected(conn, call, begun)
                except McplHostError as exc:
                    error = self._describe(exc, conn.redactor)
                    if self.method is not None:
                        error.setdefault("method", self.method)
                finally:
                    await conn.aclose()
        assert error is not None  # every way out of the nursery without a report sets it
        return self._failure(error)

    def cancelled(self, error: dict[str, Any]) -> dict[str, Any]:
        """The report of a run a signal ended (``error``: its ``cancelled``), naming the
        request it ended after the handshake."""
        if self.method is not None:
            error["method"] = self.method
        return self._failure(error)

    def _failure(self, error: dict[str, Any]) -> dict[str, Any]:
        report = _failed(self.planned, error, self.known)
        if isinstance(self.planned.target, StdioTarget):
            report["stderr"] = [self.redactor.log_value(line) for line in self.stderr_tail]
        return report

    def _describe(self, exc: McplHostError, redactor: Redactor) -> dict[str, Any]:
        error = describe_failure(exc, redactor)
        if isinstance(exc, AuthorizationRequired):
            target = self.planned.target
            if self.planned.login is not None:
                # The library's words speak to embedders (an authorize hook): say what a
                # person runs, and keep them as the detail.
                error["detail"] = error["message"]
                error["message"] = (
                    f"not authorized (HTTP {exc.status}): log in with "
                    f"`{self.planned.login}`, then run this command again"
                )
                error["login"] = self.planned.login
            elif isinstance(target, HttpTarget) and any(
                name.lower() == "authorization" for name in target.headers
            ):
                error["message"] = f"the server refused the Authorization given (HTTP {exc.status})"
            elif self.planned.auth is not None and self.planned.auth.kind == "none":
                error["message"] = (
                    f"the server requires authorization (HTTP {exc.status}) and its "
                    "config says auth: none"
                )
        return error

    async def _connected(self, conn: Connection, call: Call | None, begun: float) -> dict[str, Any]:
        self.known = _server_facts(conn)
        opened = time.perf_counter()
        if call is None:
            found: dict[str, Any] = await self._lists(conn)
            step = "list"
        else:
            found = {"result": await self._call(conn, call)}
            if call.method == "tools/call":
                checked = await check_output(
                    conn, call.params["name"], tool_outcome(found["result"]), self.settings.timeout
                )
                if checked is not None:
                    found["output_schema"] = checked
            step = "call"
        timings = {
            **_connect_timings(conn, self.planned),
            step: _ms(time.perf_counter() - opened),
            "total": _ms(time.perf_counter() - begun),
        }
        report = {
            "ok": True,
            "target": self.planned.label,
            **self.known,
            "timings_ms": timings,
            **found,
        }
        checked = found.get("output_schema")
        if isinstance(checked, dict) and checked["status"] == MISMATCHED:
            # The result is kept whole: the server answered, and what it sent is shown.
            report["ok"] = False
            report["error"] = error_object(
                OUTPUT_SCHEMA_MISMATCH, checked["message"], method="tools/call"
            )
        return report

    async def _lists(self, conn: Connection) -> dict[str, list[Raw] | None]:
        """Each list the server advertises, every page of it, within the connection's
        total bounds; None for what it does not. Items stay raw JSON (decoded only when
        shown: docs/client.md)."""
        found: dict[str, list[Raw] | None] = {}
        for kind, (method, key, _) in LISTS.items():
            if not declared(conn.server_capabilities, kind):
                found[key] = None
                continue
            self.method = method
            try:
                found[key] = await list_raw(conn, method, key)
            except McplHostError as exc:
                if not has_none(kind, exc):
                    raise
                found[key] = None
        self.method = None
        return found

    async def _call(self, conn: Connection, call: Call) -> Raw:
        on_progress = self.settings.on_progress

        def progress(done: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                on_progress(conn.redactor, done, total, message)

        self.method = call.method
        # A timeout's notifications/cancelled is written before the connection closes.
        # The result stays raw JSON, like the lists.
        if call.method == "tools/call":
            # A tool the server runs as a task is followed to its end, as call_tool does.
            return await conn.call_tool_raw(
                call.params["name"], call.params.get("arguments"), on_progress=progress
            )
        return await conn.request(call.method, call.params, result_type=Raw)


def _failed(
    planned: Planned, error: dict[str, Any], known: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"ok": False, "target": planned.label, **(known or {}), "error": error}


def _server_facts(conn: Connection) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    kind = getattr(conn.transport, "kind", None) if isinstance(conn.target, HttpTarget) else None
    if kind is not None:
        # "streamable-http", or "sse": the legacy transport (asked for, or fallen back to).
        facts["transport"] = kind
    return facts | {
        "protocolVersion": conn.protocol_version,
        # "stateless" (2026-07-28: server/discover) or "handshake" (initialize).
        "era": era_of(conn.protocol_version) if conn.protocol_version else None,
        "serverInfo": conn.server_info,
        "capabilities": conn.server_capabilities,
        "instructions": conn.instructions,
    }


def _connect_timings(conn: Connection, planned: Planned) -> dict[str, float]:
    timings = conn.timings_ms
    # For a stdio server "connecting" is starting its process.
    first = "spawn" if isinstance(planned.target, StdioTarget) else "connect"
    # The opening exchange, by its name in the era found (a fallback's includes discover).
    profile = conn.profile
    opening = "discover" if profile is not None and profile.stateless else "initialize"
    return {first: timings.get("connect", 0.0), opening: timings.get("initialize", 0.0)}


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)
