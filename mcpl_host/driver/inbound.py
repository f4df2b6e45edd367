"""Everything the server sends, as the connection handles it.

Whichever task reads a transport epoch (its reader task, or a caller waiting for its
answer: mcpl_host.driver.reading) frames the bytes and hands each line here, which asks
the protocol core what the message is, and acts: a response settles a pending request,
a request goes to its handler in a task of its own with a responder bound to the epoch,
a notification is consumed or passed to the embedder. Every message ends with one typed
outcome, logged as one structured event. Nothing raised while handling a message
escapes to the task that read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec
import trio
from msgspec import UNSET, Raw

from .._log import PeerLogBudget, get_logger
from ..protocol.batch import BatchAnswers, BatchPlan, BatchRefused, plan_batch
from ..protocol.discover import Fallback, Retry
from ..protocol.envelope import (
    Batch,
    Classified,
    Ignored,
    InvalidRequest,
    Notification,
    Outcome,
    Request,
    Response,
    classify_entry,
    decode_line,
)
from ..protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ProtocolError,
    RequestError,
    request_error,
)
from ..protocol.framing import OversizedLine
from ..protocol.handshake import (
    Established,
    Failed,
    Handshake,
    Send,
    Skip,
    describe_error_member,
)
from ..protocol.messages import encode
from ..protocol.redact import Redactor
from . import refusal
from .epoch import BatchReply, BatchSlot, Epoch
from .mcpl_session import McplSession
from .pending import PROGRESS, Pending, Progress, ProgressCallback
from .responder import PING_RESULT, Handler, Responder, ServerRequest, ping
from .timeouts import TimeoutWatch

__all__ = ["Inbound"]

_log = get_logger("mcpl_host.connection")
# Server requests the core profiles gate by revision; a custom handler for any other
# method is served on every revision.
_GATED: Final = frozenset({"ping", "roots/list", "sampling/createMessage", "elicitation/create"})


class Inbound:
    """Dispatches what one connection's server sends, epoch after epoch (the reading
    itself: mcpl_host.driver.reading)."""

    def __init__(
        self,
        *,
        server: str,
        pending: dict[int, Pending],
        abandoned: Mapping[int, str],
        progress: dict[int, Pending],
        timeouts: TimeoutWatch,
        handlers: Mapping[str, Handler],
        redactor: Redactor,
        max_message_bytes: int,
        max_server_requests: int,
        max_owed_answers: int,
        max_batch_entries: int,
        log_budget: PeerLogBudget,
        spawn: Callable[..., None],
        on_notification: Callable[[str, Raw | None], None],
        on_lost: Callable[[Epoch, str], None],
        on_wire: Callable[[str, bytes], None] | None = None,
        progress_listeners: Mapping[str, ProgressCallback] | None = None,
    ) -> None:
        self.server = server
        self.mcpl: McplSession | None = None  # set by the connection when MCPL is on
        self._pending = pending
        self._abandoned = abandoned
        self._progress = progress
        # Progress for tokens no request holds: a task's, which outlives its request.
        self._progress_listeners = progress_listeners if progress_listeners is not None else {}
        self._timeouts = timeouts
        self._handlers = handlers
        self.redactor = redactor
        self.max_message_bytes = max_message_bytes
        self.max_server_requests = max_server_requests
        self.max_owed_answers = max_owed_answers
        self.max_batch_entries = max_batch_entries
        self._spawn = spawn
        self._notify = on_notification
        self.on_lost = on_lost  # a read failed or the stream ended: (epoch, reason)
        # Responses that settled a request a trio task waits for (reading.py looks).
        self.answered = 0
        self._on_wire = on_wire
        self._log = log_budget.wrap(_log).bind(server=server)

    def owes_too_much(self, epoch: Epoch) -> bool:
        """``max_owed_answers`` answers queued, or as many bytes as one inbound line may
        hold (each answer repeats the peer's id, which can be that long)."""
        return epoch.open and (
            epoch.queued_answers >= self.max_owed_answers
            or epoch.queued_bytes >= self.max_message_bytes
        )

    async def wait_for_answers(self, epoch: Epoch) -> None:
        """Too many answers owed to a server that is not taking them: read nothing more
        from it until they are written (or the write timeout ends the transport)."""
        epoch.log.info(
            "reading paused",
            reason=f"{epoch.queued_answers} answers ({epoch.queued_bytes} bytes) owed",
        )
        while self.owes_too_much(epoch):
            await epoch.wait_for_writes()

    def on_line(self, epoch: Epoch, item: bytes | OversizedLine) -> None:
        """Handle one line read on ``epoch``; nothing raised here escapes."""
        try:
            if type(item) is OversizedLine:
                epoch.log.warning(
                    "message",
                    direction="in",
                    outcome=Outcome.IGNORED,
                    reason=f"line of {item.size} bytes exceeds max_message_bytes",
                )
                refusal.count(epoch, refusal.OVERSIZED)
                return
            assert isinstance(item, bytes)
            if self._on_wire is not None:
                self._on_wire("in", item)
            message = decode_line(item)
            if epoch.handshake_step is None:
                self._during_handshake(epoch, message)
            elif epoch.profile is None:  # the handshake failed: this transport is ending
                epoch.log.info(
                    "message",
                    direction="in",
                    outcome=Outcome.IGNORED,
                    reason="the handshake failed",
                    **self._describe(message),
                )
                refusal.count(epoch, refusal.IGNORED)
            elif type(message) is Batch:
                self._on_batch(epoch, message)
            else:
                assert not isinstance(message, Batch)
                self._on_message(epoch, message, None, 0)
        except Exception:  # a bug must not kill the reader; say so loudly
            # With the exception's type and the code's frames only (RateLimited): its
            # message, or a traceback's, can carry what the peer sent.
            epoch.log.exception("internal error while handling a message")

    def answer_handshake(self, epoch: Epoch, request_id: int, error: RequestError) -> None:
        """The transport's own error answer to the handshake's request (an HTTP refusal
        as a -32603): judged by the handshake's rule as an answer read from the wire
        would be, but never traced as one (it was never on the wire)."""
        member = {"code": error.code, "message": error.error_message}
        answer = Response(
            request_id, "integer", error=Raw(msgspec.json.encode(member)), jsonrpc2=True
        )
        self._during_handshake(epoch, answer)

    def _during_handshake(self, epoch: Epoch, message: Classified | Batch) -> None:
        assert epoch.handshake is not None
        step = epoch.handshake.receive(message)
        if isinstance(step, Send):
            epoch.log.debug("message", direction="in", method="ping", outcome=step.outcome)
            epoch.queue_answer(step.line)
        elif isinstance(step, Skip):
            epoch.log.info(
                "message",
                direction="in",
                outcome=step.outcome,
                reason=step.reason,
                **self._describe(message),
            )
            refusal.count(epoch, step.outcome.value)
        else:
            method = "initialize" if isinstance(epoch.handshake, Handshake) else "server/discover"
            epoch.log.debug("message", direction="in", method=method, outcome=step.outcome)
            try:
                self._bind(epoch, step)
            finally:  # the connecting task must learn the outcome whatever happens here
                epoch.handshake_step = step
                epoch.handshake_done.set()

    def _bind(self, epoch: Epoch, step: Established | Failed | Fallback | Retry) -> None:
        """The initialize answer was just read: bind what it settles, here, in the reader,
        before it reads on. A message in the same read as the answer (or just after) is
        then handled by the negotiated revision, and by MCPL's terms for this transport,
        even before the connecting task learns that the handshake is done."""
        if not isinstance(step, Established):
            return
        # notifications/initialized is the first line after the answer: queued here, it
        # goes out ahead of any answer to what the server sent next.
        if step.initialized is not None:
            epoch.initialized = epoch.enqueue(step.initialized)
        epoch.profile = step.profile
        # A transport whose requests name the revision (HTTP's header) learns it here,
        # once accepted, never from the server's answer alone.
        use_revision = getattr(epoch.transport, "use_revision", None)
        if use_revision is not None:
            use_revision(step.profile.revision)
        if self.mcpl is not None:
            self.mcpl.bind(epoch, step.result.capabilities)

    def _on_batch(self, epoch: Epoch, batch: Batch) -> None:
        plan = plan_batch(batch, epoch.profile, self.max_batch_entries)
        if isinstance(plan, Ignored):
            epoch.log.info("message", direction="in", outcome=Outcome.IGNORED, reason=plan.reason)
            refusal.count(epoch, refusal.IGNORED)
            return
        if isinstance(plan, BatchRefused):
            epoch.log.info(
                "message", direction="in", outcome=plan.outcome, reason=plan.answer.error.message
            )
            epoch.queue_answer(encode(plan.answer))
            refusal.count(epoch, plan.outcome.value)
            if self._pending:
                self._refused_answers(epoch, batch, plan)
            return
        assert isinstance(plan, BatchPlan)
        reply = BatchReply(BatchAnswers(plan))
        for index, entry in enumerate(plan.entries):
            self._on_message(epoch, entry, reply, index)
        line = reply.line()  # complete now: nothing dispatched still has to answer
        if line is not None:
            epoch.queue_answer(line)

    def _refused_answers(self, epoch: Epoch, batch: Batch, plan: BatchRefused) -> None:
        """A refused array may carry answers to the host's requests: none is taken, so
        those requests fail now rather than wait for their timeouts."""
        error = f"the server's JSON-RPC batch was refused: {plan.answer.error.message}"
        # At most the cap's worth of entries is decoded: a refused array is never whole.
        for raw in batch.entries(self.max_batch_entries) or ():
            entry = classify_entry(raw)
            if type(entry) is not Response or type(entry.id) is not int:
                continue
            pending = self._pending.get(entry.id)
            if pending is not None and not pending.settled and pending.epoch is epoch:
                pending.settle(error=ProtocolError(error, server=self.server))

    def _on_message(
        self, epoch: Epoch, message: Classified, batch: BatchReply | None, index: int
    ) -> None:
        match message:
            case Response():
                self._on_response(epoch, message)
            case Request():
                self._on_request(epoch, message, batch, index)
            case Notification():
                self._on_notification(epoch, message)
            case InvalidRequest():
                epoch.log.info(
                    "message",
                    direction="in",
                    **self.redactor.fields(id=message.answer_id, method=message.method),
                    outcome=Outcome.ANSWERED_INVALID,
                    reason=message.message,
                )
                refusal.count(epoch, refusal.INVALID)
                if batch is None:  # a batch's invalid entries are already in its answer
                    responder = Responder(
                        epoch, message.answer_id, message.method or "", redactor=self.redactor
                    )
                    responder.refuse(INVALID_REQUEST, message.message)
            case Ignored():
                epoch.log.info(
                    "message", direction="in", outcome=Outcome.IGNORED, reason=message.reason
                )
                refusal.count(epoch, refusal.IGNORED)

    def _on_response(self, epoch: Epoch, response: Response) -> None:
        pending = self._pending.get(response.id) if type(response.id) is int else None
        if pending is None or pending.settled or pending.epoch is not epoch:
            # An id the host gave up on is expected now and then (a late answer, or one
            # from before a reconnect); anything else is the peer's mistake.
            known = self._abandoned.get(response.id) if type(response.id) is int else None
            (epoch.log.debug if known else epoch.log.warning)(
                "message",
                direction="in",
                **self.redactor.fields(id=_shown_id(response)),
                outcome=Outcome.RESPONSE_UNMATCHED,
                reason=known or "matches no pending request",
                error=None if response.error is None else self.redactor.log_json(response.error),
            )
            if not known:  # a late answer to an id given up on is no refusal
                refusal.count(epoch, refusal.UNMATCHED)
            return
        epoch.log.debug("message", direction="in", id=response.id, outcome=Outcome.RESPONSE_MATCHED)
        if not pending.foreign:  # its caller may read next (driver.reading); a host's never
            self.answered += 1
        if response.error is not None:
            code, message, data = describe_error_member(response.error, self.redactor)
            # No usable code stays None: the caller sees that the server gave none.
            pending.settle(error=request_error(code, message, data, server=self.server))
        elif response.result is not None:
            pending.settle(result=response.result)
        else:
            pending.settle(
                error=ProtocolError(
                    f"the answer to {pending.method!r} has neither result nor error",
                    server=self.server,
                )
            )

    def _on_request(
        self, epoch: Epoch, request: Request, batch: BatchReply | None, index: int
    ) -> None:
        sink = epoch if batch is None else BatchSlot(epoch, batch, index)
        responder = Responder(sink, request.id, request.method, redactor=self.redactor)
        if self.mcpl is not None and self.mcpl.takes(request.method):
            self.mcpl.on_request(epoch, request, responder)
            return
        handler = self._handlers.get(request.method)
        profile = epoch.profile
        assert profile is not None
        if handler is None or (
            request.method in _GATED and request.method not in profile.server_requests
        ):
            epoch.log.info(
                "message",
                direction="in",
                **self.redactor.fields(id=request.id, method=request.method),
                outcome=Outcome.DISPATCHED,
                reason="method not found",
            )
            responder.refuse(METHOD_NOT_FOUND, f"Method not found: {request.method}")
            refusal.count(epoch, refusal.METHOD_NOT_FOUND)
            return
        if handler is ping:  # a ping flood costs no task per ping
            epoch.log.debug(
                "message",
                direction="in",
                **self.redactor.fields(id=request.id, method=request.method),
                outcome=Outcome.DISPATCHED,
            )
            telemetry = epoch.telemetry
            if telemetry is None:
                responder.answer_now(PING_RESULT)
                return
            # Served here, in the reader's turn: its span starts and ends around it.
            served = telemetry.serve(request.method, request.id, request.params)
            responder.answer_now(PING_RESULT)
            served.end()
            return
        self.dispatch(epoch, request, responder, handler)

    def dispatch(
        self, epoch: Epoch, request: Request, responder: Responder, handler: Handler
    ) -> None:
        """Serve ``request`` with ``handler`` in a task of its own, within the bound."""
        if len(epoch.inbound) >= self.max_server_requests:
            epoch.log.warning(
                "message",
                direction="in",
                **self.redactor.fields(id=request.id, method=request.method),
                outcome=Outcome.DISPATCHED,
                reason="too many server requests in flight",
            )
            responder.refuse(
                INTERNAL_ERROR,
                f"host busy: {self.max_server_requests} server requests already in flight",
            )
            refusal.count(epoch, refusal.BUSY)
            return
        epoch.log.debug(
            "message",
            direction="in",
            **self.redactor.fields(id=request.id, method=request.method),
            outcome=Outcome.DISPATCHED,
        )
        scope = trio.CancelScope()
        key = epoch.track(request.id, scope)
        self._spawn(
            self._serve,
            epoch,
            ServerRequest(
                request.method, request.id, request.params, responder, server=self.server
            ),
            handler,
            scope,
            key,
        )

    async def _serve(
        self,
        epoch: Epoch,
        request: ServerRequest,
        handler: Handler,
        scope: trio.CancelScope,
        key: Any,
    ) -> None:
        responder = request.responder
        telemetry = epoch.telemetry
        # The SERVER span, current in this task: the handler's own spans are its children.
        served = None
        if telemetry is not None:
            served = telemetry.serve(request.method, request.id, request.params)
        try:
            with scope:
                try:
                    result = await handler(request)
                except RequestError as exc:
                    # None means "no data" here: an error answer omits the member.
                    data = UNSET if exc.data is None else exc.data
                    code = INTERNAL_ERROR if exc.code is None else exc.code
                    await self._fail_request(epoch, responder, code, exc.error_message, data)
                # Params that do not fit, are not UTF-8, or nest past the decoder's depth.
                except (msgspec.DecodeError, RecursionError) as exc:
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
                        **responder.log_fields(),
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
                epoch.log.info("server request cancelled", **responder.log_fields())
        finally:
            epoch.inbound.pop(key, None)
            if served is not None:
                if responder.code is not None:  # the error answer's code, as on the wire
                    served.end(responder.code, responder.error_message)
                elif scope.cancelled_caught or not responder.answered:
                    served.end(error_type="cancelled")  # withdrawn, or the host is closing
                else:
                    served.end()

    async def _fail_request(
        self, epoch: Epoch, responder: Responder, code: int, message: str, data: Any
    ) -> None:
        if responder.answered:
            epoch.log.error(
                "handler failed after answering; no second answer", **responder.log_fields()
            )
            return
        await responder.error(code, message, data)

    def _on_notification(self, epoch: Epoch, note: Notification) -> None:
        epoch.log.debug(
            "message",
            direction="in",
            **self.redactor.fields(method=note.method),
            outcome=Outcome.DISPATCHED,
        )
        if note.method == "notifications/cancelled":
            request_id = _field(note.params, "requestId")
            scope = epoch.inbound.get(request_id) if isinstance(request_id, (str, int)) else None
            if scope is not None:
                scope.cancel()
            else:
                # None of the server's requests: it may give up one of the host's (a
                # 2026-07-28 server ends a listen so); the connection decides.
                self._notify(note.method, note.params)
            return
        if note.method == "notifications/progress":
            self._on_progress(note.params)
            return
        if self.mcpl is not None and self.mcpl.takes(note.method):
            self.mcpl.on_notification(epoch, note)
            return
        self._notify(note.method, note.params)

    def _on_progress(self, params: Raw | None) -> None:
        try:
            progress = PROGRESS.decode(params or b"{}")
        except msgspec.DecodeError:
            self._log.info("progress notification ignored", reason="malformed params")
            return
        token = progress.progressToken
        if type(token) is str:
            listener = self._progress_listeners.get(token)
            if listener is not None:
                self._report_progress(listener, progress, "a task")
            return
        pending = self._progress.get(token) if type(token) is int else None
        if pending is None or pending.on_progress is None:
            return
        if pending.progress_reset is not None:
            timeout, hard = pending.progress_reset
            pending.deadline = min(trio.current_time() + timeout, hard)
            self._timeouts.watch(pending)
        if pending.trace is not None:
            pending.trace.progress(progress.progress, progress.total, progress.message)
        self._report_progress(pending.on_progress, progress, pending.method)

    def _report_progress(self, callback: ProgressCallback, progress: Progress, what: str) -> None:
        try:
            callback(progress.progress, progress.total, progress.message)
        except Exception:  # the embedder's bug, but each is caused by a peer's message
            self._log.exception("progress callback failed", method=what)

    def _describe(self, message: Classified | Batch) -> dict[str, Any]:
        if isinstance(message, (Request, Notification)):
            return self.redactor.fields(method=message.method)
        if isinstance(message, Response):
            info = self.redactor.fields(id=_shown_id(message))
            if message.error is not None:
                info["error"] = self.redactor.log_json(message.error)
            return info
        return {}


def _shown_id(response: Response) -> str | int:
    """A response's id for a log event: the id, or what the wire carried instead."""
    return response.id if response.id is not None else response.id_kind


def _field(params: Raw | None, name: str) -> Any:
    if params is None:
        return None
    try:
        value = msgspec.json.decode(params)
    except msgspec.DecodeError:
        return None
    return value.get(name) if isinstance(value, dict) else None
