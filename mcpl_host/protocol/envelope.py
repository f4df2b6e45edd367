"""THE classification rule: what every inbound message and batch entry is.

One function, :func:`classify_entry`, decides for single messages and batch entries
alike (DESIGN 3.2):

1. no ``method`` member: an ``id`` member (any value) makes it a response; an ``error``
   with ``"jsonrpc": "2.0"`` and no id is a response that names no request; anything
   else is not JSON-RPC and is ignored. ``"error": null`` counts as no ``error`` member
   (a result beside it is the answer).
2. a ``method`` member: a non-string method or an id that is not a string, a safe
   integer or null makes an invalid request (answered -32600 once, never dispatched);
   otherwise an ``id`` member, null included, makes a request and its absence a
   notification.

msgspec decodes a line once, with ``params``, ``result`` and ``error`` kept raw. A
typed decode is the fast path; when it fails (a value of the wrong type somewhere in the
envelope) the same line is decoded with every member raw and the faults are named from
the wire tokens. Both paths feed the same rule, :func:`_decide`.
"""

from __future__ import annotations

import enum
import re
from typing import Final, TypeAlias

import msgspec
from msgspec import UNSET, Raw, UnsetType

__all__ = [
    "MAX_SAFE_INTEGER",
    "Batch",
    "Classified",
    "Ignored",
    "InvalidRequest",
    "Notification",
    "Outcome",
    "Request",
    "RequestId",
    "Response",
    "classify_entry",
    "decode_line",
]

MAX_SAFE_INTEGER: Final = 2**53 - 1

RequestId: TypeAlias = str | int | None
"""A request id as the host keeps it: a string, a safe integer, or None for ``null``."""


class Outcome(enum.StrEnum):
    """The typed outcome logged for every inbound message (DESIGN 3.2, rule 3)."""

    DISPATCHED = "dispatched"
    ANSWERED_INVALID = "answered-invalid"
    REFUSED_BY_PROFILE = "refused-by-profile"
    DENIED_BY_POLICY = "denied-by-policy"
    IGNORED = "ignored"
    RESPONSE_MATCHED = "response-matched"
    RESPONSE_UNMATCHED = "response-unmatched"


class Request(msgspec.Struct, frozen=True, gc=False):
    """A request from the peer: it gets exactly one answer, with this same ``id``."""

    method: str
    id: RequestId
    params: Raw | None = None


class Notification(msgspec.Struct, frozen=True, gc=False):
    """A notification from the peer: never answered."""

    method: str
    params: Raw | None = None


class Response(msgspec.Struct, frozen=True, gc=False):
    """A response. ``id`` is set only when it can match a request (string or safe int).

    ``id_kind`` says what the wire carried when ``id`` is None: ``"null"``, ``"absent"``
    or the kind of an unusable value (``"an object"``). ``jsonrpc2`` records whether the
    message said ``"jsonrpc": "2.0"``, which is what tells a peer's id-less error from a
    log line with an ``error`` key.
    """

    id: str | int | None
    id_kind: str
    result: Raw | None = None
    error: Raw | None = None
    jsonrpc2: bool = False

    @property
    def names_no_request(self) -> bool:
        """A JSON-RPC 2.0 error with ``"id": null`` or no id (MCP 2025-11-25 allows both)."""
        return self.error is not None and self.jsonrpc2 and self.id_kind in ("null", "absent")


class InvalidRequest(msgspec.Struct, frozen=True, gc=False):
    """A malformed request: answered -32600 once with ``answer_id``, never dispatched."""

    faults: tuple[str, ...]
    answer_id: RequestId
    method: str | None = None

    @property
    def message(self) -> str:
        return "Invalid Request: " + "; ".join(self.faults)


class Ignored(msgspec.Struct, frozen=True, gc=False):
    """Not JSON-RPC (a server's own output on stdout, say): logged, never answered."""

    reason: str


class Batch(msgspec.Struct, frozen=True, gc=False):
    """A JSON array on one line; its entries are judged by :mod:`.batch`."""

    entries: tuple[Raw, ...]


Classified: TypeAlias = Request | Notification | Response | InvalidRequest | Ignored


# -- decoding ---------------------------------------------------------------------------

_EMPTY: Final = Raw()


class _Typed(msgspec.Struct, gc=False):
    """The envelope with its members typed: the common, fast case."""

    jsonrpc: str | UnsetType = UNSET
    id: int | str | UnsetType | None = UNSET
    method: str | UnsetType = UNSET
    params: Raw = _EMPTY
    result: Raw = _EMPTY
    error: Raw = _EMPTY


class _Untyped(msgspec.Struct, gc=False):
    """The envelope with every member raw, to name what is wrong from the tokens."""

    jsonrpc: Raw = _EMPTY
    id: Raw = _EMPTY
    method: Raw = _EMPTY
    params: Raw = _EMPTY
    result: Raw = _EMPTY
    error: Raw = _EMPTY


_TYPED_LINE: Final = msgspec.json.Decoder(_Typed | list[Raw])
_UNTYPED_LINE: Final = msgspec.json.Decoder(_Untyped | list[Raw])
_TYPED_ENTRY: Final = msgspec.json.Decoder(_Typed)
_UNTYPED_ENTRY: Final = msgspec.json.Decoder(_Untyped)
_STR: Final = msgspec.json.Decoder(str)
_ANY: Final = msgspec.json.Decoder()
_INTEGER_TOKEN: Final = re.compile(rb"-?(?:0|[1-9][0-9]*)")


class _Bad:
    """A member present with an unusable value; ``kind`` names the value's kind.

    ``number`` marks a number that is not a safe integer, whose fault text says what a
    number id must be rather than listing the allowed kinds again.
    """

    __slots__ = ("kind", "number")

    def __init__(self, kind: str, *, number: bool = False) -> None:
        self.kind = kind
        self.number = number


_UNSAFE_INTEGER: Final = _Bad("an integer beyond ±(2^53−1)", number=True)
_NOT_INTEGER: Final = _Bad("a number written with a fraction or an exponent", number=True)


def decode_line(line: bytes) -> Classified | Batch:
    """Classify one framed line. Never raises: every input gets a typed result."""
    try:
        value = _TYPED_LINE.decode(line)
    except msgspec.ValidationError:
        return _decode_untyped_line(line)
    except msgspec.DecodeError:
        return Ignored("not JSON")
    if type(value) is list:
        return Batch(tuple(value))
    assert type(value) is _Typed
    return _decide(value.method, value.id, value.jsonrpc == "2.0", value)


def _decode_untyped_line(line: bytes) -> Classified | Batch:
    # The typed pass stopped at a member of the wrong type, before it could see whether
    # the rest of the line is JSON at all; this pass judges the whole line.
    try:
        value = _UNTYPED_LINE.decode(line)
    except msgspec.ValidationError:
        try:
            _ANY.decode(line)
        except msgspec.DecodeError:
            return Ignored("not JSON")
        return Ignored(f"JSON that is not an object or an array: {_kind_of_value(line)}")
    except msgspec.DecodeError:
        return Ignored("not JSON")
    if type(value) is list:  # pragma: no cover - the typed pass accepts every array
        return Batch(tuple(value))
    assert type(value) is _Untyped
    return _from_untyped(value)


def classify_entry(entry: bytes | Raw) -> Classified:
    """Classify one batch entry (already-parsed JSON text) by the same rule as a line."""
    try:
        return _from_typed(_TYPED_ENTRY.decode(entry))
    except msgspec.ValidationError:
        pass
    try:
        return _from_untyped(_UNTYPED_ENTRY.decode(entry))
    except msgspec.ValidationError:
        return Ignored(f"not an object: {_kind_of_value(entry)}")


def _from_typed(env: _Typed) -> Classified:
    return _decide(env.method, env.id, env.jsonrpc == "2.0", env)


def _from_untyped(env: _Untyped) -> Classified:
    method: str | _Bad | UnsetType = UNSET
    if env.method:
        method = (
            _read_str(env.method)
            if bytes(env.method)[:1] == b'"'
            else _Bad(_kind_of_value(env.method))
        )
    jsonrpc2 = bool(env.jsonrpc) and _read_str(env.jsonrpc) == "2.0"
    return _decide(method, _read_id(env.id) if env.id else UNSET, jsonrpc2, env)


def _decide(
    method: str | _Bad | UnsetType,
    id_: RequestId | _Bad | UnsetType,
    jsonrpc2: bool,
    env: _Typed | _Untyped,
) -> Classified:
    """The rule itself, on members already read from either decoding path.

    Branches are ordered by how often they run (a response, then a valid request).
    """
    id_type = type(id_)
    if id_type is int and not -MAX_SAFE_INTEGER <= id_ <= MAX_SAFE_INTEGER:  # type: ignore[operator]
        id_, id_type = _UNSAFE_INTEGER, _Bad
    if method is UNSET:
        result, error = env.result, env.error
        if error and bytes(error) == b"null":
            # A response has result or error; "error": null says it has no error (some
            # peers write both members), so it is not an error with the message "null".
            error = _EMPTY
        if id_type is int or id_type is str or id_ is None:
            kind = "integer" if id_type is int else "string" if id_type is str else "null"
            return Response(id_, kind, result or None, error or None, jsonrpc2)  # type: ignore[arg-type]
        if id_ is UNSET:
            if error and jsonrpc2:
                return Response(None, "absent", result or None, error, jsonrpc2)
            return Ignored("no method and no id: not a JSON-RPC message")
        assert isinstance(id_, _Bad)
        return Response(None, id_.kind, result or None, error or None, jsonrpc2)
    if type(method) is str and id_type is not _Bad:
        if id_ is UNSET:
            return Notification(method, env.params or None)
        assert not isinstance(id_, _Bad)
        return Request(method, id_, env.params or None)
    faults: list[str] = []
    if isinstance(method, _Bad):
        faults.append(f"the method must be a string, not {method.kind}")
    if isinstance(id_, _Bad):
        if id_.number:
            faults.append(f"a number id must be an integer within ±(2^53−1), not {id_.kind}")
        else:
            faults.append(f"the id must be a string, a number or null, not {id_.kind}")
    return InvalidRequest(
        tuple(faults),
        None if isinstance(id_, _Bad) or id_ is UNSET else id_,
        method if isinstance(method, str) else None,
    )


def _read_id(raw: Raw) -> RequestId | _Bad:
    token = bytes(raw)
    first = token[:1]
    if first == b'"':
        return _read_str(raw)
    if first == b"n":
        return None
    if _INTEGER_TOKEN.fullmatch(token):
        return int(token)  # exact: the range check happens in _decide
    kind = _kind_of_value(raw)
    return _NOT_INTEGER if kind == "a number" else _Bad(kind)


def _read_str(raw: Raw) -> str | _Bad:
    try:
        return _STR.decode(raw)
    except msgspec.ValidationError:
        return _Bad(_kind_of_value(raw))


def _kind_of_value(raw: bytes | Raw) -> str:
    """Name a JSON value's kind from its first token, never repeating the value."""
    token = bytes(raw).lstrip(b" \t\r\n")
    first = token[:1]
    if first == b"{":
        return "an object"
    if first == b"[":
        return "an array"
    if first == b'"':
        return "a string"
    if first in (b"t", b"f"):
        return "a boolean"
    if first == b"n":
        return "null"
    return "a number"
