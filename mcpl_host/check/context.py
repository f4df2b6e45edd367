"""What a probe works with: fresh connections to the server, what is known of it, and
where its verdicts go.

Every probe opens its own connections (:meth:`Context.connect`, or :meth:`Context.session`
for one past the handshake), so one probe's damage (a server that crashed on a broken
envelope) never decides another's verdict. What every probe needs to know (the revision
the server answers ``initialize`` with, whether it speaks 2026-07-28, what it declares)
is found once, lazily, by :meth:`Context.facts`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import trio

from ..protocol.errors import AuthorizationRequired, TransportError
from ..protocol.profiles import KNOWN_REVISIONS, PROFILES
from ..protocol.redact import Redactor
from ..transports import Transport, open_transport
from ..transports.stdio import StdioTransport
from ..transports.targets import (
    HttpTarget,
    StdioTarget,
    Target,
    TcpTarget,
    UnixTarget,
    WebSocketTarget,
)
from .rules import RULES, Finding, Line, Verdict
from .wire import CLIENT_INFO, MODERN, StreamWire, Wire

DETAIL_CHARS: Final = 1000

__all__ = ["HANDSHAKE_REVISIONS", "CheckOptions", "Context", "Facts", "Opener", "TargetKind"]

# The handshake era, newest first: what initialize may offer.
HANDSHAKE_REVISIONS: Final = tuple(
    v for v in reversed(KNOWN_REVISIONS) if not PROFILES[v].stateless
)

Opener = Callable[[], Awaitable[Transport]]
"""A target given as a function that opens a fresh transport (as ``Connection`` takes)."""

TargetKind = Literal["stdio", "tcp", "unix", "ws", "http", "stream"]


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """``timeout``: how long an answer may take (seconds); ``exit_grace``: how long a
    stdio server may take to exit after EOF or SIGTERM; ``calls``: the tools to call
    (name, arguments), which is the only way a tool is ever called; ``versions``: the
    revisions to probe (the allowlist; every revision by default)."""

    timeout: float = 5.0
    exit_grace: float = 5.0
    calls: Sequence[tuple[str, dict[str, Any]]] = ()
    versions: Sequence[str] = KNOWN_REVISIONS


@dataclass(slots=True)
class Facts:
    """What the baseline probes found: ``version`` is the revision the server answered
    ``initialize`` with (None: it did not complete one), ``initialize`` that answer's
    result; ``discover`` the result of ``server/discover`` on 2026-07-28 (None: no
    2026-07-28)."""

    version: str | None = None
    initialize: dict[str, Any] | None = None
    discover: dict[str, Any] | None = None
    evidence: tuple[Line, ...] = ()

    @property
    def modern(self) -> bool:
        return self.discover is not None

    @property
    def capabilities(self) -> dict[str, Any]:
        """What the server declared, in the era :meth:`Context.live` uses."""
        source = self.initialize if self.version is not None else self.discover
        caps = (source or {}).get("capabilities")
        return caps if isinstance(caps, dict) else {}


@dataclass(slots=True)
class Context:
    """One check run's target and findings. ``selected`` holds the rule ids to judge."""

    target: Target | Opener
    redactor: Redactor
    options: CheckOptions
    selected: frozenset[str]
    findings: dict[str, Finding] = field(default_factory=dict)
    _facts: Facts | None = None
    _facts_lock: trio.Lock = field(default_factory=trio.Lock)
    # Sessions kept open between the probes that borrow them (:meth:`borrow`), each by a
    # task in ``keepers`` (the run's nursery) until ``done``.
    keepers: trio.Nursery | None = None
    done: trio.Event = field(default_factory=trio.Event)
    _idle: list[tuple[Wire, trio.Event]] = field(default_factory=list)
    # What a probe module keeps for the run (results several of its probes read), by a
    # key the module owns.
    memo: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> TargetKind:
        target = self.target
        if isinstance(target, StdioTarget):
            return "stdio"
        if isinstance(target, TcpTarget):
            return "tcp"
        if isinstance(target, UnixTarget):
            return "unix"
        if isinstance(target, WebSocketTarget):
            return "ws"
        if isinstance(target, HttpTarget):
            return "http"
        return "stream"

    @property
    def timeout(self) -> float:
        return self.options.timeout

    # --- verdicts ---------------------------------------------------------------------
    def wants(self, rule_id: str) -> bool:
        return rule_id in self.selected

    def judge(
        self,
        rule_id: str,
        verdict: Verdict,
        detail: str,
        evidence: Sequence[Line] | Wire = (),
    ) -> None:
        """Record ``rule_id``'s verdict (once: a second verdict for it is a probe's bug).
        ``evidence`` is the lines that show it, or a wire whose whole transcript does."""
        if rule_id not in RULES:
            raise ValueError(f"unknown rule {rule_id!r}")
        if rule_id in self.findings:
            raise ValueError(f"rule {rule_id!r} was judged twice")
        if rule_id not in self.selected:
            return
        lines = evidence.since() if isinstance(evidence, Wire) else tuple(evidence)
        # A detail may quote the peer (a tool's name, an error's message): made safe here,
        # as the transcript's lines are where they are taken.
        safe = self.redactor.log_value(detail, DETAIL_CHARS)
        self.findings[rule_id] = Finding(RULES[rule_id], verdict, safe, lines)

    def passed(self, rule_id: str, detail: str, evidence: Sequence[Line] | Wire = ()) -> None:
        self.judge(rule_id, Verdict.PASS, detail, evidence)

    def failed(self, rule_id: str, detail: str, evidence: Sequence[Line] | Wire = ()) -> None:
        """A broken MUST fails; a broken SHOULD warns (the rule's level decides)."""
        self.judge(rule_id, self.failure(rule_id), detail, evidence)

    @staticmethod
    def failure(rule_id: str) -> Verdict:
        """The verdict on ``rule_id`` broken: a fail for a MUST, a warning for a SHOULD."""
        return Verdict.FAIL if RULES[rule_id].level == "MUST" else Verdict.WARN

    def not_applicable(self, rule_id: str, why: str) -> None:
        self.judge(rule_id, Verdict.NA, why)

    # --- connections ------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[Wire]:
        """A fresh connection, nothing sent yet; closed (a stdio server ended) after."""
        async with trio.open_nursery() as nursery:
            # A TCP connect to a host that drops packets waits minutes by default.
            opening = max(10.0, 2 * self.timeout)
            with trio.move_on_after(opening) as scope:
                wire = await self._open(nursery)
            if scope.cancelled_caught:
                raise TransportError(
                    f"the server could not be reached within {opening:g} s",
                    reason="connect-timeout",
                )
            try:
                yield wire
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(self.options.exit_grace):
                    await wire.aclose()
                nursery.cancel_scope.cancel()

    @contextlib.asynccontextmanager
    async def borrow(self) -> AsyncIterator[Wire]:
        """A session past the handshake, as :meth:`session` gives, but possibly one an
        earlier probe used: for the probes that only need a working session and leave
        it so. It goes back to the pool unless the server closed it, the probe raised,
        the probe set ``wire.broken``, or a request sent on it is still unanswered (its
        late answer would land in the next probe's evidence). Evidence taken from it
        starts at the borrow."""
        if self._idle:
            wire, release = self._idle.pop()
        else:
            assert self.keepers is not None, "borrow() outside a check run"
            wire, release = await self.keepers.start(self._keep)
        wire.start = wire.mark()
        ok = False
        try:
            yield wire
            ok = True
        finally:
            if ok and not wire.closed and not wire.broken and not wire.outstanding:
                self._idle.append((wire, release))
            else:
                release.set()

    async def _keep(
        self, task_status: trio.TaskStatus[tuple[Wire, trio.Event]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        release = trio.Event()
        async with self.session() as wire:
            task_status.started((wire, release))
            async with trio.open_nursery() as waits:
                waits.start_soon(_set_when, self.done, release)
                await release.wait()
                waits.cancel_scope.cancel()

    async def alive(self, wire: Wire) -> bool:
        """Whether the server on ``wire`` still answers a request (``ping``; on
        2026-07-28, which has no ping, ``server/discover``); marks the wire broken if
        not."""
        method = "server/discover" if wire.version == MODERN else "ping"
        params: dict[str, Any] | None = {} if wire.version == MODERN else None
        answer = await wire.call(method, params, timeout=self.timeout)
        if answer is None:
            wire.broken = True
        return answer is not None

    async def _open(self, nursery: trio.Nursery) -> Wire:
        target = self.target
        if isinstance(target, HttpTarget):
            import httpx  # noqa: PLC0415 - httpx only for HTTP targets

            from .httpwire import HttpWire  # noqa: PLC0415

            client = httpx.AsyncClient(
                timeout=self.timeout,
                verify=target.ssl_context if target.ssl_context is not None else True,
                follow_redirects=False,
            )
            return HttpWire(target, client, nursery, self.redactor)
        if callable(target) and not isinstance(
            target, StdioTarget | TcpTarget | UnixTarget | WebSocketTarget
        ):
            transport = await target()
        else:
            transport = await open_transport(
                target,
                nursery=nursery,
                on_stderr=lambda _line: None,
                redactor=self.redactor,
            )
        if isinstance(transport, StdioTransport):
            # Its own graces, not the transport's defaults: a server that ignores EOF
            # (a finding already) must not cost each probe seconds more to close.
            grace = self.options.exit_grace
            close = functools.partial(transport.aclose, grace=grace, term_grace=grace)
            return StreamWire(
                transport.stream, self.redactor, close=close, process=transport.process
            )
        return StreamWire(transport.stream, self.redactor, close=transport.aclose)

    async def initialize(self, wire: Wire, version: str) -> dict[str, Any] | None:
        """Send ``initialize`` offering ``version``; the answer (None: none came)."""
        params = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        }
        answer = await wire.call("initialize", params, timeout=self.timeout)
        result = answer.get("result") if answer is not None else None
        if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
            wire.version = result["protocolVersion"]
        return answer

    @contextlib.asynccontextmanager
    async def session(self, version: str | None = None) -> AsyncIterator[Wire]:
        """A fresh connection past the handshake (``initialize`` offering ``version``,
        the server's own answer by default, then ``notifications/initialized``), or in
        2026-07-28 when the server speaks only that. Raises :class:`NoSession` when the
        server does not complete the handshake."""
        facts = await self.facts()
        async with self.connect() as wire:
            if version == MODERN or (version is None and facts.version is None):
                if not facts.modern:
                    raise NoSession("the server completes neither initialize nor server/discover")
                wire.version = MODERN
                yield wire
                return
            offered = version or facts.version
            assert offered is not None
            answer = await self.initialize(wire, offered)
            if answer is None or "result" not in answer:
                raise NoSession(f"initialize offering {offered} was not answered with a result")
            await wire.notify("notifications/initialized")
            await wire.settle(self.timeout)  # HTTP: the notification is in before what follows
            yield wire

    async def facts(self) -> Facts:
        """What the server is: found once, by its own connections."""
        async with self._facts_lock:
            if self._facts is None:
                self._facts = await self._find_facts()
            return self._facts

    async def _find_facts(self) -> Facts:
        facts = Facts()
        lines: list[Line] = []
        wires: list[Wire] = []
        offers = [v for v in HANDSHAKE_REVISIONS if v in self.options.versions]
        if offers:
            async with self.connect() as wire:
                wires.append(wire)
                answer = await self.initialize(wire, offers[0])
                result = answer.get("result") if answer is not None else None
                if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                    facts.version = result["protocolVersion"]
                    facts.initialize = result
                lines += wire.since()
        if MODERN in self.options.versions:
            async with self.connect() as wire:
                wires.append(wire)
                wire.version = MODERN
                answer = await wire.call("server/discover", {}, timeout=self.timeout)
                result = answer.get("result") if answer is not None else None
                versions = result.get("supportedVersions") if isinstance(result, dict) else None
                if isinstance(versions, list) and MODERN in versions:
                    facts.discover = result
                lines += wire.since()
        facts.evidence = tuple(lines)
        _unreachable(wires)
        return facts


def _unreachable(wires: list[Wire]) -> None:
    """Raise the error of a server nobody answered for: every HTTP answer a 401 or 403
    (:class:`AuthorizationRequired`), no HTTP answer at all, or a stream that ended
    without a line (:class:`TransportError`). A server that says anything, however
    wrong, or stays silent with the connection open, is checked."""
    if any(wire.received for wire in wires if not wire.is_http):
        return
    statuses = {post.status for wire in wires for post in wire.posts}
    if statuses and statuses <= {401, 403}:
        status = min(statuses)
        raise AuthorizationRequired(
            f"the server requires authorization (HTTP {status})", status=status
        )
    if any(wire.received for wire in wires) or statuses:
        return
    if all(wire.is_http for wire in wires):
        raise TransportError("the server gave no HTTP answer", reason="connect-failed")
    if all(wire.closed for wire in wires):
        raise TransportError("the server ended without a word", reason="eof")


async def _set_when(happened: trio.Event, then: trio.Event) -> None:
    await happened.wait()
    then.set()


class NoSession(Exception):
    """The server would not complete a handshake a probe needs."""
