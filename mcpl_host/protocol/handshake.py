"""The initialize handshake as a state machine (DESIGN 3.5).

The driver writes :meth:`Handshake.request`, feeds every classified inbound item to
:meth:`Handshake.receive` and does what the returned step says. Timing out is the
driver's job; this machine only decides.

While waiting: a ``ping`` with a valid id (null included) is answered ``{}`` with that
id; every other request and notification, an invalid one included, is ignored. A
JSON-RPC 2.0 error with ``"id": null`` or no id is initialize's answer: the server could
not read the only request the host has out. An error-looking object without
``"jsonrpc": "2.0"`` is a server's log line, not an answer.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from .envelope import (
    Batch,
    Classified,
    Ignored,
    InvalidRequest,
    Notification,
    Outcome,
    Request,
    Response,
)
from .errors import InitializeError, McplHostError, ProtocolError, VersionError
from .messages import OutNotification, OutRequest, ResultAnswer, encode
from .profiles import Profile, handshake_era, negotiate
from .redact import Redactor
from .trace import with_trace

__all__ = [
    "Established",
    "Failed",
    "Handshake",
    "HandshakeState",
    "InitializeResult",
    "Send",
    "Skip",
    "answer_ping",
    "describe_error_member",
]


class InitializeResult(
    msgspec.Struct,
    frozen=True,
    rename={"protocol_version": "protocolVersion", "server_info": "serverInfo"},
):
    """What the server said about itself. Unknown members are dropped; ``raw`` has all."""

    protocol_version: Any = None
    capabilities: dict[str, Any] = msgspec.field(default_factory=dict)
    server_info: dict[str, Any] = msgspec.field(default_factory=dict)
    instructions: str | None = None


class HandshakeState(enum.Enum):
    WAITING = "waiting"
    ESTABLISHED = "established"
    FAILED = "failed"


class Send(msgspec.Struct, frozen=True, gc=False):
    """Write ``line`` (a ping's answer), then keep waiting."""

    line: bytes
    outcome: Outcome = Outcome.DISPATCHED


def answer_ping(request: Request) -> Send:
    """A server may ping before the opening exchange settles (of either era): it gets
    ``{}`` with its own id."""
    return Send(encode(ResultAnswer(id=request.id, result=_EMPTY_RESULT)))


class Skip(msgspec.Struct, frozen=True, gc=False):
    """Log and drop the item; keep waiting."""

    reason: str
    outcome: Outcome


class Established(msgspec.Struct, frozen=True, gc=False):
    """The handshake succeeded: write ``initialized`` (none on the stateless revision,
    where ``server/discover`` settled it), then run under ``profile``."""

    profile: Profile
    result: InitializeResult
    raw_result: msgspec.Raw
    initialized: bytes | None
    outcome: Outcome = Outcome.RESPONSE_MATCHED


class Failed(msgspec.Struct, frozen=True, gc=False):
    """The handshake failed: close the transport and raise ``error``."""

    error: McplHostError
    outcome: Outcome = Outcome.RESPONSE_MATCHED


Step = Send | Skip | Established | Failed

_RESULT: Final = msgspec.json.Decoder(InitializeResult)
_ANY: Final = msgspec.json.Decoder()
_EMPTY_RESULT: Final = msgspec.Raw(b"{}")
_NAME_LIMIT: Final = 64


class Handshake:
    """One initialize exchange on one transport epoch."""

    def __init__(
        self,
        *,
        allowlist: tuple[str, ...],
        request_id: int,
        capabilities: Mapping[str, Any],
        client_info: Mapping[str, Any],
        redactor: Redactor | None = None,
    ) -> None:
        """``allowlist`` comes from :func:`.profiles.validate_allowlist` (newest first); only
        its handshake-era revisions take part (the stateless one has no initialize)."""
        self.allowlist = handshake_era(allowlist)
        if not self.allowlist:
            raise ValueError("initialize needs a handshake-era revision in the allowlist")
        self.offered = self.allowlist[0]
        self.request_id = request_id
        self.state = HandshakeState.WAITING
        self._capabilities = dict(capabilities)
        self._client_info = dict(client_info)
        self._redactor = redactor or Redactor()

    def request(self, trace: Mapping[str, str] | None = None) -> bytes:
        """The ``initialize`` request line, offering the newest allowed revision;
        ``trace``: the trace context its ``_meta`` carries (:mod:`.trace`)."""
        params = {
            "protocolVersion": self.offered,
            "capabilities": self._capabilities,
            "clientInfo": self._client_info,
        }
        return encode(
            OutRequest(
                id=self.request_id,
                method="initialize",
                params=with_trace(params, trace) if trace else params,
            )
        )

    def receive(self, item: Classified | Batch) -> Step:
        """Decide what one inbound item means while waiting for initialize's answer."""
        if self.state is not HandshakeState.WAITING:
            return Skip(f"the handshake is already {self.state.value}", Outcome.IGNORED)
        match item:
            case Response():
                return self._response(item)
            case Request(method="ping"):
                return answer_ping(item)
            case Request():
                return Skip(
                    f"request {self._name(item.method)} before initialize completed "
                    "(only ping is answered)",
                    Outcome.IGNORED,
                )
            case Notification():
                return Skip(
                    f"notification {self._name(item.method)} before initialize completed",
                    Outcome.IGNORED,
                )
            case InvalidRequest():
                return Skip(
                    f"invalid request before initialize completed: {item.message}",
                    Outcome.IGNORED,
                )
            case Batch():
                return Skip("a batch before a protocol revision was negotiated", Outcome.IGNORED)
            case Ignored():
                return Skip(item.reason, Outcome.IGNORED)

    def _response(self, response: Response) -> Step:
        if response.id == self.request_id and type(response.id) is int:
            if response.error is not None:
                return self._fail(self._server_error(response, request_id_present=True))
            return self._result(response.result)
        if response.names_no_request:
            return self._fail(self._server_error(response, request_id_present=False))
        shown = (
            self._name(response.id)
            if isinstance(response.id, str)
            else response.id_kind
            if response.id is None
            else str(response.id)
        )
        return Skip(
            f"a response to no request of the host (id: {shown})", Outcome.RESPONSE_UNMATCHED
        )

    def _name(self, text: str) -> str:
        """A peer's method or id inside a reason: safe, and short, since the event's own
        ``method`` or ``id`` field carries it whole (to the usual cut)."""
        return f'"{self._redactor.log_value(text, _NAME_LIMIT)}"'

    def _result(self, raw: msgspec.Raw | None) -> Step:
        try:
            result = _RESULT.decode(raw if raw is not None else b"null")
        except msgspec.DecodeError as exc:
            return self._fail(
                ProtocolError(
                    f"the initialize result is malformed: {self._redactor.log_value(str(exc))}"
                )
            )
        except RecursionError:
            # The envelope skipped it at a shallower stack; decoding it needs a little more.
            return self._fail(ProtocolError("the initialize result nests too deeply to decode"))
        chosen = negotiate(self.allowlist, result.protocol_version, self._redactor.log_value)
        if isinstance(chosen, VersionError):
            return self._fail(chosen)
        self.state = HandshakeState.ESTABLISHED
        return Established(
            profile=chosen,
            result=result,
            raw_result=raw if raw is not None else _EMPTY_RESULT,
            initialized=encode(OutNotification(method="notifications/initialized")),
        )

    def _server_error(self, response: Response, *, request_id_present: bool) -> InitializeError:
        code, message, data = describe_error_member(response.error, self._redactor)
        return InitializeError(code, message, data, request_id_present=request_id_present)

    def _fail(self, error: McplHostError) -> Failed:
        self.state = HandshakeState.FAILED
        return Failed(error)


def describe_error_member(
    error: msgspec.Raw | None, redactor: Redactor
) -> tuple[int | None, str, Any]:
    """A peer's ``error`` member as (code, safe message, data), whatever its shape.

    The message is escaped, cut and redacted; an error that is not the usual
    ``{code, message}`` object is shown as its JSON text, made safe the same way.
    """
    value: Any = None
    if error is not None:
        # The envelope only skipped the member: what it never checks fails here.
        try:
            value = _ANY.decode(error)
        except msgspec.ValidationError:
            return None, "(the error member holds a number too long to read)", None
        except msgspec.DecodeError:
            return None, "(the error member is not valid JSON: invalid UTF-8)", None
        except RecursionError:
            return None, "(the error member nests too deeply to show)", None
    if isinstance(value, dict):
        code = value.get("code")
        message = value.get("message")
        return (
            code if type(code) is int else None,
            redactor.log_value(message) if isinstance(message, str) else redactor.log_json(value),
            value.get("data"),
        )
    return None, redactor.log_json(value), None
