"""The one ``subscriptions/listen`` a 2026-07-28 connection keeps open.

On the stateless revision list changes and resource updates come only on a listen
(:mod:`mcpl_host.protocol.subscriptions`). The connection keeps at most one open, asking
for the list changes of every kind the server advertises ``listChanged`` for and for
every URI the embedder subscribed; what it carries goes to the same routing as the
handshake era's notifications (:class:`ListChanged <mcpl_host.ListChanged>`,
:class:`ResourceUpdated <mcpl_host.ResourceUpdated>`, the list caches). The rules:

- It opens when the transport is up (nothing is asked when there is nothing to ask for)
  and is re-issued whenever the set changes (``subscribe_resource``,
  ``unsubscribe_resource``): the new listen is sent and the old one cancelled
  (``notifications/cancelled``; over HTTP its response stream is closed).
- It is never timed out (it lives as long as the server keeps it), and is bound to its
  transport: closing the connection or losing the transport ends it; the next transport
  gets a new one.
- Only the newest listen counts: a notification naming any other subscription id, or
  none, is dropped (one rate-limited log line per kind). So is one that comes before the
  acknowledgement, or that the acknowledgement left out.
- A graceful end (a result, or the server's ``notifications/cancelled`` naming it), or a
  response stream broken under it, is followed by a new listen after 1 s, 2 s, 4 s ...
  (at most 30 s), at most ``max_relistens`` times in a row; a listen acknowledged and
  open for :data:`STABLE` seconds starts the count again. The list caches are dropped
  when the new one is acknowledged (what changed in between was not said).
- An error answer is a refusal: no new listen until the set changes or a new transport.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import trio
from msgspec import Raw

from ..driver.pending import Pending
from ..protocol.errors import (
    ConfigurationError,
    ConnectionClosed,
    McplHostError,
    ProtocolError,
    RequestError,
    RequestTimeout,
)
from ..protocol.redact import Redactor
from ..protocol.subscriptions import (
    ACKNOWLEDGED,
    CARRIED,
    Subscriptions,
    cancelled_request,
    decode_acknowledged,
    decode_carried,
    names,
    wanted,
)
from .restore import SessionState

__all__ = ["DEFAULT_MAX_RELISTENS", "STABLE", "Listener"]

DEFAULT_MAX_RELISTENS: Final = 3
STABLE: Final = 60.0  # an acknowledged listen open this long resets the count of re-listens
_FIRST_DELAY: Final = 1.0
_MAX_DELAY: Final = 30.0


class _Listen:
    """One listen request, from its sending to its end."""

    __slots__ = (
        "ack",
        "acked_at",
        "asked",
        "ended",
        "error",
        "gap",
        "generation",
        "pending",
        "scope",
    )

    def __init__(self, generation: int, asked: Subscriptions, pending: Pending, gap: bool) -> None:
        self.generation = generation  # which change of the set it was sent for
        self.asked = asked
        self.pending = pending
        self.gap = gap  # it follows one that ended on its own: the caches missed changes
        self.ack: Subscriptions | None = None
        self.acked_at = math.inf
        self.error: McplHostError | None = None
        self.ended = False
        self.scope = trio.CancelScope()  # cancelled when re-issued

    def named(self, subscription_id: Any) -> bool:
        return self.pending.id is not None and names(subscription_id, self.pending.id)


class Listener:
    """The listen of one connection (used only while its profile is stateless)."""

    def __init__(
        self,
        *,
        server: str,
        state: SessionState,
        route: Callable[[str, Raw | None], None],
        capabilities: Callable[[], Mapping[str, Any]],
        start: Callable[[dict[str, Any]], Pending | None],
        answer: Callable[[Pending], Awaitable[Raw]],
        spawn: Callable[..., None],
        closing: Callable[[], bool],
        on_gap: Callable[[], None],
        log: Any,
        redactor: Redactor,
        max_relistens: int = DEFAULT_MAX_RELISTENS,
    ) -> None:
        """Raises :class:`~mcpl_host.ConfigurationError` for ``max_relistens`` below 0."""
        if max_relistens < 0:
            raise ConfigurationError("max_relistens must be at least 0")
        self._server = server
        self._state = state
        self._route = route
        self._capabilities = capabilities
        self._start = start
        self._answer = answer
        self._spawn = spawn
        self._closing = closing
        self._on_gap = on_gap
        self._log = log
        self._redactor = redactor
        self.max_relistens = max_relistens
        self.active = False  # the transport in force is stateless
        self._listen: _Listen | None = None  # the newest sent
        self._generation = 0
        self._ends = 0  # ends on the server's side in a row
        self._refused = False
        self._news = trio.Event()  # replaced each time a listen is acknowledged or ends

    @property
    def acknowledged(self) -> Subscriptions | None:
        """What the open listen's acknowledgement honours; None with none open or
        acknowledged."""
        listen = self._listen
        return None if listen is None or listen.ended else listen.ack

    # -- what the connection tells it -------------------------------------------------

    def start(self) -> None:
        """A stateless transport is up: listen on it (anew: the last one's is gone)."""
        self.active = True
        self._ends = 0
        self._refused = False
        self._reissue(gap=False)

    def stop(self) -> None:
        """The transport in force is of the handshake era: no listen."""
        self.active = False
        self._reissue(gap=False)

    def changed(self) -> int:
        """The embedder changed the set of URIs: re-issue; return the generation whose
        acknowledgement :meth:`acknowledged_since` waits for."""
        self._ends = 0
        self._refused = False
        self._reissue(gap=False)
        return self._generation

    async def acknowledged_since(self, generation: int, timeout: float) -> Subscriptions:
        """The acknowledgement of the first listen sent for ``generation`` or later (a
        listen that ended unacknowledged honours nothing).

        Raises :class:`~mcpl_host.RequestError` (the listen was refused),
        :class:`~mcpl_host.ConnectionClosed` (its transport went, or the connection
        closed), :class:`~mcpl_host.RequestTimeout` (no acknowledgement within
        ``timeout``: the embedder's URI is not in force)."""
        with trio.move_on_after(timeout):
            while True:
                listen = self._listen
                if listen is not None and listen.generation >= generation:
                    if listen.ack is not None:
                        return listen.ack
                    if listen.error is not None:
                        raise listen.error
                    if listen.ended:
                        return Subscriptions()
                if self._closing():
                    raise ConnectionClosed(
                        "the connection closed", reason="closed", server=self._server
                    )
                await self._news.wait()
        raise RequestTimeout(
            f"subscriptions/listen not acknowledged within {timeout:g} s",
            method="subscriptions/listen",
            timeout=timeout,
            server=self._server,
        )

    def take(self, method: str, params: Raw | None) -> bool:
        """Demultiplex a notification a listen carries (routed when it belongs to the
        open, acknowledged listen and the acknowledgement covers it); False for any
        other method."""
        if method == ACKNOWLEDGED:
            self._acknowledged(params)
            return True
        if method not in CARRIED:
            return False
        carried = decode_carried(params)
        listen = self._open()
        if carried is None:
            self._drop(method, None, "malformed")
        elif listen is None or not listen.named(carried.subscription_id):
            self._drop(method, carried.subscription_id, "unknown-subscription")
        elif listen.ack is None:
            self._drop(method, carried.subscription_id, "before-acknowledgement")
        elif not listen.ack.admits(method, carried.uri, listen.asked):
            self._drop(method, carried.subscription_id, "not-acknowledged")
        else:
            self._route(method, params)
        return True

    def server_cancelled(self, params: Raw | None) -> None:
        """A ``notifications/cancelled`` from the server that named none of its own
        requests in flight: when it names the open listen, that listen ended gracefully."""
        listen = self._open()
        if listen is not None and listen.named(cancelled_request(params)):
            # No answer follows a cancellation: end the wait now, as a result would.
            listen.pending.settle(result=Raw(b"{}"))

    # -- inside --------------------------------------------------------------------------

    def _open(self) -> _Listen | None:
        listen = self._listen
        return None if listen is None or listen.ended else listen

    def _acknowledged(self, params: Raw | None) -> None:
        listen = self._open()
        try:
            sid, ack = decode_acknowledged(params, listen.asked if listen else Subscriptions())
        except ProtocolError:
            self._drop(ACKNOWLEDGED, None, "malformed")
            return
        if listen is None or not listen.named(sid):
            self._drop(ACKNOWLEDGED, sid, "unknown-subscription")
            return
        if listen.ack is not None:
            self._drop(ACKNOWLEDGED, sid, "repeated-acknowledgement")  # the first one holds
            return
        listen.ack = ack
        listen.acked_at = trio.current_time()
        self._log.info(
            "subscriptions acknowledged",
            subscription_id=listen.pending.id,
            asked=listen.asked.to_wire(),
            acknowledged=ack.to_wire(),
        )
        if listen.gap:
            self._on_gap()
        self._tell()

    def _drop(self, method: str, sid: Any, outcome: str) -> None:
        self._log.info(
            "notification dropped",
            method=method,
            subscription_id=self._redactor.log_json(sid, 32),
            outcome=outcome,
        )

    def _tell(self) -> None:
        self._news.set()
        self._news = trio.Event()

    def _reissue(self, *, gap: bool) -> None:
        """Send a listen for the set as it is now (when there is anything to ask for) and
        cancel the one open."""
        self._generation += 1
        old, self._listen = self._listen, None
        asked = wanted(self._capabilities(), self._state.wanted)
        if self.active and not self._refused and not asked.empty:
            pending = self._start({"notifications": asked.to_wire()})
            if pending is not None:
                self._listen = _Listen(self._generation, asked, pending, gap)
                self._spawn(self._follow, self._listen)
        if old is not None and not old.ended:
            old.ended = True
            if not old.pending.settled:
                # The caller's wait ends as a cancellation: notifications/cancelled (or,
                # over HTTP, the response stream closed) tells the server.
                old.scope.cancel()
        self._tell()

    async def _follow(self, listen: _Listen) -> None:
        """Wait for the end of ``listen``; decide what comes next."""
        graceful = False
        with listen.scope:
            try:
                await self._answer(listen.pending)
                graceful = True
            except RequestError as exc:
                listen.error = exc
            except ConnectionClosed as exc:
                listen.error = exc
                graceful = exc.reason == "stream-broken"  # the transport is still up
            except McplHostError as exc:  # an answer that is not JSON-RPC's, say
                listen.error = exc
        if listen.scope.cancelled_caught or self._listen is not listen:
            return  # re-issued: the newer one is followed by its own task
        listen.ended = True
        self._tell()
        if self._closing():
            return
        if isinstance(listen.error, RequestError):
            self._refused = True
            self._log.warning(
                "subscriptions/listen refused",
                error=self._redactor.log_value(str(listen.error)),
                outcome="listen-refused",
            )
            return
        if not graceful:
            self._log.debug("subscriptions/listen ended with its transport")
            return  # the next transport listens anew
        await self._relisten(listen)

    async def _relisten(self, ended: _Listen) -> None:
        if trio.current_time() - ended.acked_at >= STABLE:
            self._ends = 0
        self._ends += 1
        if self._ends > self.max_relistens:
            self._log.warning(
                "subscriptions/listen not reopened",
                ends_in_a_row=self._ends - 1,
                outcome="listen-gave-up",
            )
            return
        delay = min(_FIRST_DELAY * 2 ** (self._ends - 1), _MAX_DELAY)
        self._log.info("subscriptions/listen ended; reopening", delay=delay)
        await trio.sleep(delay)
        if self._listen is ended and self.active and not self._closing():
            self._reissue(gap=True)
