"""Answering the server's requests: exactly once, and only where the request came from.

A :class:`Responder` is bound to the transport epoch its request was read on. If that
transport has closed by the time the answer is ready, the answer is not written
anywhere (never to a newer transport): one log line names the request that went
unanswered and why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, TypeAlias, TypeVar

import msgspec
from msgspec import UNSET, Raw

from .._log import get_logger
from ..protocol.envelope import RequestId
from ..protocol.errors import INTERNAL_ERROR
from ..protocol.messages import ErrorAnswer, ResultAnswer, error_answer
from ..protocol.redact import Redactor

__all__ = ["PING_RESULT", "Handler", "Responder", "ServerRequest", "ping"]

_log = get_logger("mcpl_host.responder")
_ENCODER = msgspec.json.Encoder()
_PLAIN = Redactor()  # no secrets known: escape and cut only
T = TypeVar("T")


class AnswerSink(Protocol):
    """Where a responder's answer goes: a transport epoch, or a slot of a batch answer."""

    epoch_number: int

    async def deliver(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> bool:
        """Write (or collect) the answer; False when it could not be sent."""
        ...

    def queue(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> None:
        """Queue the answer without waiting for it to be written (the reader's own
        refusals: no task per answer)."""
        ...

    def withdraw(self, responder: Responder) -> None:
        """The request was cancelled by the server: no answer will come."""
        ...


class Responder:
    """Answers one server request exactly once."""

    __slots__ = ("_redactor", "_sink", "answered", "code", "error_message", "id", "method")

    def __init__(
        self,
        sink: AnswerSink,
        request_id: RequestId,
        method: str,
        *,
        redactor: Redactor = _PLAIN,
    ) -> None:
        """``redactor`` is the connection's: the id and method are the peer's text."""
        self._sink = sink
        self.id = request_id
        self.method = method
        self.answered = False
        # The error answer given, if any (its code and message, as on the wire): what
        # the request's span ends with.
        self.code: int | None = None
        self.error_message: str | None = None
        self._redactor = redactor

    def log_fields(self) -> dict[str, object]:
        """The request's id and method for a log event, escaped, cut and redacted."""
        return self._redactor.fields(request_id=self.id, method=self.method)

    @property
    def epoch(self) -> int:
        return self._sink.epoch_number

    async def respond(self, result: Any) -> bool:
        """Answer with ``result``. Returns False when nothing was sent (already answered,
        or the request's transport has closed). A result JSON cannot carry is answered
        with one -32603 instead."""
        if self._refuse_second():
            return False
        try:
            body = _ENCODER.encode(result)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            _log.error(
                "handler result not encodable", **self.log_fields(), error=type(exc).__name__
            )
            message = "Internal error: the host's result could not be encoded"
            self.code, self.error_message = INTERNAL_ERROR, message
            answer: ResultAnswer | ErrorAnswer = error_answer(self.id, INTERNAL_ERROR, message)
        else:
            answer = ResultAnswer(id=self.id, result=Raw(body))
        return await self._sink.deliver(answer, self)

    async def error(self, code: int, message: str, data: Any = UNSET) -> bool:
        """Answer with a JSON-RPC error. Returns False when nothing was sent."""
        if self._refuse_second():
            return False
        self.code, self.error_message = code, message
        return await self._sink.deliver(error_answer(self.id, code, message, _sendable(data)), self)

    def answer_now(self, result: Any) -> None:
        """Answer with ``result`` at once, from the reader: queued like :meth:`refuse`."""
        if not self._refuse_second():
            self._sink.queue(ResultAnswer(id=self.id, result=Raw(_ENCODER.encode(result))), self)

    def refuse(self, code: int, message: str, data: Any = UNSET) -> None:
        """Answer with a JSON-RPC error at once, from the reader: the answer is queued
        (it counts toward the answers owed until written), no task waits for it."""
        if not self._refuse_second():
            self.code, self.error_message = code, message
            self._sink.queue(error_answer(self.id, code, message, _sendable(data)), self)

    def withdraw(self) -> None:
        """No answer will be sent (the server cancelled the request)."""
        if not self.answered:
            self.answered = True
            self._sink.withdraw(self)

    def _refuse_second(self) -> bool:
        if self.answered:
            _log.warning("second answer refused", **self.log_fields())
            return True
        self.answered = True
        return False


def _sendable(data: Any) -> Any:
    """An error's ``data``, or UNSET when JSON cannot carry it (the code and message
    still go out)."""
    try:
        _ENCODER.encode(data)
    except (TypeError, ValueError, msgspec.EncodeError):
        return UNSET
    return data


PING_RESULT: Final = Raw(b"{}")
"""The answer to ``ping``: an empty result."""


async def ping(_request: ServerRequest) -> Any:
    """The built-in ``ping`` handler. The reader answers it itself, with no task (with
    :data:`PING_RESULT`); a handler of the embedder's for ``ping`` runs as any other."""
    return PING_RESULT


class ServerRequest:
    """A request from the server, as a handler receives it. ``server`` is the name of
    the connection it came on (None for an unnamed one): one handler may serve many
    servers, as a manager's do."""

    __slots__ = ("id", "method", "params", "responder", "server")

    def __init__(
        self,
        method: str,
        request_id: RequestId,
        params: Raw | None,
        responder: Responder,
        *,
        server: str | None = None,
    ) -> None:
        self.method = method
        self.id = request_id
        self.params = params
        self.responder = responder
        self.server = server

    def decode_params(self, type_: type[T]) -> T:
        """``params`` decoded as ``type_`` (absent params decode as ``{}``).

        Raises ``msgspec.ValidationError`` when they do not fit; the connection answers
        that with -32602.
        """
        return msgspec.json.decode(self.params if self.params is not None else b"{}", type=type_)


Handler: TypeAlias = Callable[[ServerRequest], Awaitable[Any]]
"""A server-request handler: its return value is the result, unless it has already
answered through ``request.responder``. Raising :class:`~mcpl_host.RequestError` answers
with that error; any other exception answers -32603."""
