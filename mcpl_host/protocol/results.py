"""What a 2026-07-28 result is: complete, or a request for input (MRTR).

Every result of that revision has ``resultType``; missing means ``"complete"``, and an
unknown value makes the result invalid. Only ``tools/call``, ``prompts/get`` and
``resources/read`` may answer ``"input_required"``: an ``InputRequiredResult`` carrying
``inputRequests`` (a key -> id-less ``{method, params}``) and/or ``requestState`` (an
opaque string the client echoes back byte for byte). The client answers each input
request and sends the original request again, with a new id, plus ``inputResponses``
(same keys) and the ``requestState``; both apply to that retry only.

Pure: the client layer (``client/mrtr.py``) runs the rounds.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .errors import ProtocolError

__all__ = [
    "INPUT_REQUIRED_METHODS",
    "InputRequest",
    "InputRequired",
    "ResultDecodeError",
    "fresh_for",
    "input_required",
    "retry_params",
]

#: The methods whose result may ask for input (R5 ``basic/patterns/mrtr``).
INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_KINDS: Final = frozenset({"complete", "input_required"})
# The tasks extension's answer to a tools/call the server runs as a task: the host
# declares that extension on every 2026-07-28 request, so it is a known kind there.
_TASK: Final = "task"


class ResultDecodeError(ProtocolError):
    """A result that does not fit its type. ``raw`` is the result's JSON, whole."""

    def __init__(self, message: str, *, raw: Raw, server: str | None = None) -> None:
        super().__init__(message, server=server)
        self.raw = raw


class _Kind(msgspec.Struct, gc=False):
    resultType: str | UnsetType = UNSET


class InputRequest(msgspec.Struct, frozen=True, gc=False):
    """One entry of ``inputRequests``: what the server asks, its params still raw."""

    method: str
    # Raw takes any JSON (null included); absent params read as an empty object.
    params: Raw = msgspec.field(default_factory=lambda: Raw(b"{}"))


class _InputRequired(msgspec.Struct, gc=False, rename="camel"):
    input_requests: dict[str, InputRequest] | None = None
    request_state: Raw = msgspec.field(default_factory=lambda: Raw(b"null"))


class InputRequired(msgspec.Struct, frozen=True, gc=False):
    """An ``input_required`` result: the requests by key, and the state to echo (the
    JSON string token exactly as the server wrote it; None when absent or null)."""

    requests: dict[str, InputRequest]
    state: Raw | None


class _Freshness(msgspec.Struct, gc=False):
    ttlMs: Any = None


#: The longest a 2026-07-28 list is kept, whatever its ttlMs says (a day, as the official
#: SDK caps it): a server cannot make the host trust a list for ever.
MAX_TTL_SECONDS: Final = 86_400.0

_KIND: Final = msgspec.json.Decoder(_Kind)
_FRESHNESS: Final = msgspec.json.Decoder(_Freshness)


def fresh_for(raw: Raw) -> float:
    """How long (seconds) a 2026-07-28 list or read result may be reused: its ``ttlMs``,
    0 when absent, negative, not a number or unreadable (the spec's default: reuse
    nothing), at most :data:`MAX_TTL_SECONDS`. Raises nothing."""
    try:
        ttl = _FRESHNESS.decode(raw).ttlMs
    except (msgspec.DecodeError, RecursionError):
        return 0.0
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        return 0.0
    return min(ttl / 1000.0, MAX_TTL_SECONDS)


_INPUT: Final = msgspec.json.Decoder(_InputRequired)


def input_required(
    raw: Raw, method: str, *, server: str | None = None, safe: Any = str
) -> InputRequired | None:
    """None for a complete result of ``method`` (``resultType`` missing or
    ``"complete"``, or ``"task"`` for ``tools/call``: the caller reads the task); the
    input it asks for when ``"input_required"``.

    Raises :class:`ResultDecodeError` for a result that is not an object, an unknown
    ``resultType``, ``input_required`` from a method that may not ask for input, or an
    ``InputRequiredResult`` that is malformed (``inputRequests`` not a map of
    ``{method, params}``, a ``requestState`` that is not a string, or neither present).
    ``safe`` makes the peer's text fit for the message.
    """
    try:
        kind = _KIND.decode(raw).resultType
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _bad(raw, method, safe(str(exc)), server) from None
    if kind is UNSET or kind == "complete" or (kind == _TASK and method == "tools/call"):
        return None
    if kind not in _KINDS:
        raise _bad(raw, method, f"unknown resultType {safe(kind)!r}", server)
    if method not in INPUT_REQUIRED_METHODS:
        raise _bad(raw, method, "resultType 'input_required' is not allowed here", server)
    try:
        found = _INPUT.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _bad(raw, method, safe(str(exc)), server) from None
    state: Raw | None = found.request_state
    if bytes(found.request_state) == b"null":  # absent, or null: no state to echo
        state = None
    elif not bytes(found.request_state).startswith(b'"'):
        raise _bad(raw, method, "requestState is not a string", server)
    if not found.input_requests and state is None:
        raise _bad(
            raw, method, "input_required with neither inputRequests nor requestState", server
        )
    return InputRequired(requests=found.input_requests or {}, state=state)


def retry_params(params: Any, responses: dict[str, Raw], state: Raw | None) -> dict[str, Any]:
    """The original ``params`` (an object or none) plus this round's ``inputResponses``
    (omitted when there are none) and ``requestState`` (omitted when absent). Raw values
    are written as they are: the state goes back byte for byte."""
    out: dict[str, Any] = dict(params) if isinstance(params, dict) else {}
    out.pop("inputResponses", None)
    out.pop("requestState", None)
    if responses:
        out["inputResponses"] = responses
    if state is not None:
        out["requestState"] = state
    return out


def _bad(raw: Raw, method: str, why: str, server: str | None) -> ResultDecodeError:
    return ResultDecodeError(f"the result of {method!r} is invalid: {why}", raw=raw, server=server)
