"""MCPL on a connection: the grant per transport epoch, the hold, and the routing of the
server's MCPL methods to the embedder's hooks.

The decisions are the pure core's (:mod:`mcpl_host.mcpl`); this module only carries
them out: it sends ``featureSets/update`` after each handshake, holds inbound MCPL
traffic after a reconnect until the new receipt, and answers each request on the
transport it came on. On the first transport nothing is held: until the receipt the
grant is empty, so a privileged method is refused with -32002 at once.

Notification hooks run one at a time, in the order the notifications arrived on the
connection (a ``channels/changed`` delta applies to the state the one before it left),
from one bounded queue served by one task; requests run concurrently, a task each.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import Raw

from .._log import PeerLogBudget, get_logger
from ..events import Event, McplGrantChanged
from ..mcpl.capabilities import advertised_paths, denied, effective, host_advertisement
from ..mcpl.dedupe import EventIds
from ..mcpl.grant import Applied, Failed, Grant, Refused, Stale, Update
from ..mcpl.host import ChunkSender, Mcpl, McplContext, McplHook
from ..mcpl.methods import (
    CAPABILITY_DENIED,
    INBOUND,
    OUTBOUND,
    REMOVED,
    Admit,
    Refuse,
    Removed,
    admit,
    may_send,
)
from ..mcpl.planes import HoldBuffer
from ..mcpl.types import InferenceRequest, PushEvent, decode_params
from ..protocol.envelope import Notification, Outcome, Request
from ..protocol.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    CapabilityDenied,
    McplHostError,
)
from ..protocol.messages import OutNotification, encode
from ..protocol.redact import Redactor
from . import refusal
from .epoch import Epoch
from .pending import Pending
from .responder import Handler, Responder, ServerRequest

__all__ = ["McplSession"]

_log = get_logger("mcpl_host.mcpl")

Call = Callable[[Epoch, str, Any, float, Callable[[Pending], None]], Awaitable[Raw]]
Dispatch = Callable[[Epoch, Request, Responder, Handler], None]


@dataclass(frozen=True, slots=True)
class _Held:
    epoch: Epoch
    message: Request | Notification
    responder: Responder | None  # None for a notification


class McplSession:
    """The MCPL side of one connection, across its transport epochs."""

    def __init__(
        self,
        config: Mcpl,
        *,
        server: str,
        redactor: Redactor,
        call: Call,
        dispatch: Dispatch,
        spawn: Callable[..., None],
        emit: Callable[[Event], None],
        on_refused_close: Callable[[], None],
        max_held_requests: int,
        log_budget: PeerLogBudget,
    ) -> None:
        """``max_held_requests``: server requests held after a reconnect (each owes an
        answer) before the next is refused "host busy" at once."""
        self.config = config
        self.max_held_requests = max_held_requests
        self.server = server
        self.grant = Grant()
        self.advertised: frozenset[str] | None = None  # None: the peer is plain MCP
        self._held: HoldBuffer[_Held] = HoldBuffer(
            max_notifications=config.max_held_notifications, holding=False
        )
        # Admitted notifications waiting for their hooks, oldest first; one task serves
        # them, so a hook never overtakes the one before it.
        self._queue: deque[tuple[McplHook, Request | Notification]] = deque()
        self._serving = False
        self._events = EventIds()
        self._redactor = redactor
        self._call = call
        self._dispatch = dispatch
        self._spawn = spawn
        self._emit = emit
        self._on_refused_close = on_refused_close
        self._log = log_budget.wrap(_log).bind(server=server)

    @staticmethod
    def capabilities() -> dict[str, Any]:
        """What ``initialize`` advertises for MCPL."""
        return {"experimental": {"mcpl": host_advertisement()}}

    # -- each transport ------------------------------------------------------------------

    def bind(self, epoch: Epoch, server_capabilities: object) -> None:
        """The initialize answer was just read on ``epoch`` (called by the reader, before
        it reads on): reset the grant and learn what the server advertises, so the next
        message is judged on this transport's terms. After a reconnect, inbound MCPL
        traffic is held from here until the new grant's receipt."""
        self.grant.reset()
        self.advertised = advertised_paths(server_capabilities)
        if self.advertised is None:
            self._release()  # a plain MCP peer now: nothing will ever grant what is held
        elif epoch.epoch_number > 1:
            self._held.hold()

    def start(self, epoch: Epoch) -> None:
        """The handshake is over on ``epoch`` (``initialized`` written): send the grant
        (a Request, even when empty)."""
        if self.advertised is None:
            return
        granted = effective(self.config.grants, self.advertised)
        update = self.grant.propose(granted, denied=denied(self.advertised, granted))
        self._spawn(self._send, epoch, update)

    async def regrant(self, epoch: Epoch | None, grants: tuple[str, ...]) -> None:
        """New grant patterns: a reduction applies at once, an expansion on its receipt."""
        self.config = dataclasses.replace(self.config, grants=grants)
        if epoch is None or self.advertised is None:
            return  # the next handshake sends the new grant
        granted = effective(grants, self.advertised)
        update = self.grant.propose(granted, denied=denied(self.advertised, granted))
        await self._send(epoch, update)

    async def _send(self, epoch: Epoch, update: Update) -> None:
        def settled(pending: Pending) -> None:
            # In the reader's turn: a message read right after the receipt already sees
            # the grant the receipt settled.
            if pending.result is not None:
                changed = self._settled(self.grant.receipt(update.update_id, pending.result))
            else:
                changed = self._settled(self.grant.failed(update.update_id))
            if changed and epoch.telemetry is not None:
                # On the span of the update that settled it (its answer was just read).
                denied = update.params.get("deniedCapabilities", ())
                epoch.telemetry.grant_changed(self.grant.granted, denied, request=pending.trace)

        try:
            await self._call(
                epoch, update.method, update.params, self.config.update_timeout, settled
            )
        except McplHostError as exc:
            self._log.warning(
                "featureSets/update failed",
                update=update.update_id,
                error=self._redactor.log_value(str(exc)),
            )

    def _settled(self, outcome: Applied | Refused | Failed | Stale) -> bool:
        """Act on how an update settled; False when it changed nothing (stale)."""
        if isinstance(outcome, Stale):
            return False
        if isinstance(outcome, Applied):
            self._log.info(
                "grant",
                # Paths come from the server's tree: a wildcard grant admits any name.
                **self._redactor.fields(granted=sorted(outcome.granted)),
                degraded=outcome.degraded,
            )
        elif isinstance(outcome, Refused):
            self._log.warning("grant refused", fallback=outcome.fallback)
        self._emit(McplGrantChanged(self.grant.granted, self.grant.state.value))
        if outcome.released:
            self._release()
        if isinstance(outcome, Refused) and outcome.fallback == "close":
            self._on_refused_close()
        return True

    # -- outbound ------------------------------------------------------------------------

    def check_send(self, method: str, *, connected: bool) -> bool:
        """Whether ``method`` is an MCPL method the grant gates (and the grant in force
        allows it): the caller sends it on this transport only, never rebinds it.

        Raises :class:`~mcpl_host.CapabilityDenied` when the grant in force does not
        allow it. Between transports (``connected`` false), on a plain MCP peer and
        before a transport's receipt nothing is granted.
        """
        spec = OUTBOUND.get(method)
        if spec is None or not spec.any_of:
            return False
        if connected and self.advertised is not None and may_send(method, self.grant):
            return True
        raise CapabilityDenied(method, spec.any_of, server=self.server)

    # -- inbound -------------------------------------------------------------------------

    def takes(self, method: str) -> bool:
        """Whether ``method`` is MCPL's to decide on this connection now."""
        return self.advertised is not None and (method in INBOUND or method in REMOVED)

    def on_request(self, epoch: Epoch, request: Request, responder: Responder) -> None:
        if request.method in REMOVED:
            responder.refuse(METHOD_NOT_FOUND, REMOVED[request.method])
            refusal.count(epoch, refusal.METHOD_NOT_FOUND)
            return
        if self._held.holding and len(self._held) - self._held.notifications >= (
            self.max_held_requests
        ):
            self._log.warning(
                "message",
                direction="in",
                method=request.method,
                outcome=Outcome.DISPATCHED,
                reason="too many server requests held for the grant's receipt",
            )
            responder.refuse(
                INTERNAL_ERROR,
                f"host busy: {self.max_held_requests} server requests already held",
            )
            refusal.count(epoch, refusal.BUSY)
            return
        if self._hold(_Held(epoch, request, responder)):
            return
        self._decide(_Held(epoch, request, responder))

    def on_notification(self, epoch: Epoch, note: Notification) -> None:
        if note.method in REMOVED:
            self._log.info("notification ignored", method=note.method, reason="removed in 0.5")
            refusal.count(epoch, refusal.IGNORED)
            return
        if self._hold(_Held(epoch, note, None)):
            return
        self._decide(_Held(epoch, note, None))

    def _hold(self, item: _Held) -> bool:
        spec = INBOUND[item.message.method]
        offer = self._held.offer(
            item,
            plane=spec.plane,
            epoch=item.epoch.epoch_number,
            is_request=item.responder is not None,
        )
        if offer.dropped is not None:
            self._log.warning(
                "held notification dropped",
                method=offer.dropped.item.message.method,
                reason=f"more than {self._held.max_notifications} held",
            )
            refusal.count(item.epoch, refusal.DROPPED)
        if offer.held:
            self._log.debug("held", method=item.message.method, plane=spec.plane.value)
        return offer.held

    def _release(self) -> None:
        for held in self._held.release():
            self._decide(held.item)

    def _decide(self, item: _Held) -> None:
        """Admit against the grant in force now; answer only on the item's own transport."""
        message, responder, epoch = item.message, item.responder, item.epoch
        if not epoch.open:
            self._log.info(
                "not answering request" if responder else "notification dropped",
                method=message.method,
                reason="its transport has closed",
            )
            return
        decision = admit(message.method, message.params, self.grant, request=responder is not None)
        if isinstance(decision, Admit):
            hook = self.config.hooks.get(message.method)
            if hook is None:
                decision = Refuse(METHOD_NOT_FOUND, f"Method not found: {message.method}")
            elif responder is None:
                self._queue_hook(epoch, hook, message)
                return
            else:
                assert isinstance(message, Request)
                self._dispatch(epoch, message, responder, self._handler(epoch, hook))
                return
        if not isinstance(decision, (Refuse, Removed)):  # Unknown: takes() rules it out
            decision = Refuse(METHOD_NOT_FOUND, f"Method not found: {message.method}")
        denied = isinstance(decision, Refuse) and decision.code == CAPABILITY_DENIED
        invalid = isinstance(decision, Refuse) and decision.code == INVALID_REQUEST
        self._log.info(
            "message",
            direction="in",
            method=message.method,
            outcome=Outcome.DENIED_BY_POLICY
            if denied
            else Outcome.ANSWERED_INVALID
            if invalid
            else Outcome.DISPATCHED,
            reason=decision.message,
        )
        refusal.count(
            epoch,
            refusal.DENIED if denied else refusal.INVALID if invalid else refusal.METHOD_NOT_FOUND,
        )
        if responder is not None:
            data = decision.data if isinstance(decision, Refuse) else None
            responder.refuse(decision.code, decision.message, data or msgspec.UNSET)

    def _handler(self, epoch: Epoch, hook: McplHook) -> Handler:
        async def handle(request: ServerRequest) -> Any:
            params = decode_params(request.method, request.params)
            stream = None
            if isinstance(params, PushEvent) and not self._events.add(params.event_id):
                return {"accepted": False, "reason": "duplicate eventId"}
            if isinstance(params, InferenceRequest) and params.stream and request.id is not None:
                stream = _chunks(epoch, request.id)
            try:
                return await hook(params, McplContext(self.server, request.id, stream))
            except BaseException:
                if isinstance(params, PushEvent):
                    self._events.discard(params.event_id)  # the server's retry gets through
                raise

        return handle

    def _queue_hook(self, epoch: Epoch, hook: McplHook, note: Request | Notification) -> None:
        """Queue a notification for its hook, behind every one admitted before it."""
        bound = self.config.max_queued_notifications
        if len(self._queue) >= bound:
            # A peer that outruns its hooks must not grow the host without limit: the
            # oldest waiting notification goes, as in the hold.
            _, dropped = self._queue.popleft()
            self._log.warning(
                "notification dropped",
                method=dropped.method,
                reason=f"more than {bound} notifications waiting for their hooks",
            )
            refusal.count(epoch, refusal.DROPPED)
        self._queue.append((hook, note))
        if not self._serving:
            self._serving = True
            self._spawn(self._serve_hooks)

    async def _serve_hooks(self) -> None:
        """The one task that runs notification hooks, in arrival order, until none wait."""
        try:
            while self._queue:
                hook, note = self._queue.popleft()
                await self._notify_hook(hook, note)
        finally:
            self._serving = False

    async def _notify_hook(self, hook: McplHook, note: Request | Notification) -> None:
        try:
            params = decode_params(note.method, note.params)
            await hook(params, McplContext(self.server, None))
        except Exception as exc:
            self._log.error(
                "notification hook failed",
                method=note.method,
                error=self._redactor.log_value(repr(exc)),
            )


def _chunks(epoch: Epoch, request_id: Any) -> ChunkSender:
    index = itertools.count()

    async def send(delta: Any) -> None:
        params = {"requestId": request_id, "index": next(index), "delta": delta}
        await epoch.write(encode(OutNotification(method="inference/chunk", params=params)))

    return send
