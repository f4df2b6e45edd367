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

No input makes :func:`decode_line` or :func:`classify_entry` raise (docs/protocol.md,
"What the core does with hostile input"): a lone surrogate escape is read as U+FFFD,
invalid UTF-8 in a member the envelope reads makes the line not JSON, a number id too
long to be safe is judged by its length, and nesting deeper than the decoder follows
is an invalid request with id null. An array is kept as its text (:class:`Batch`).
"""

from __future__ import annotations

import enum
import functools
import re
from typing import Any, Final, TypeAlias

import msgspec
from msgspec import UNSET, Raw, UnsetType

__all__ = [
    "MAX_SAFE_INTEGER",
    "NESTED_TOO_DEEP",
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
    """A JSON array on one line, kept as its text; :mod:`.batch` judges its entries.

    Nothing of the array is decoded until :meth:`entries` is asked for a bounded number
    of them, so an array the host refuses (a revision without batches, more entries than
    the cap) costs its line and no object per entry.
    """

    line: bytes

    def entries(self, limit: int) -> tuple[Raw, ...] | None:
        """The array's entries, each as its JSON text, ``limit`` + 1 of them at most.

        A result longer than ``limit`` says the array has more than ``limit`` entries;
        nothing past the first ``limit`` + 1 was decoded. None when the array cannot be
        read (it nests deeper than the decoder follows here, or it is not a JSON array).
        Raises ``ValueError`` for a negative ``limit``.
        """
        if limit < 0:
            raise ValueError("limit must not be negative")
        try:
            held = _entries_decoder(limit).decode(self.line)
        except (msgspec.DecodeError, RecursionError):
            return None
        entries: tuple[Any, ...] = msgspec.structs.astuple(held)
        try:
            return entries[: entries.index(None)]
        except ValueError:  # every slot filled: limit + 1 entries or more
            return entries


Classified: TypeAlias = Request | Notification | Response | InvalidRequest | Ignored

NESTED_TOO_DEEP: Final = InvalidRequest(("the message nests arrays and objects too deeply",), None)
_DEEP_NO_METHOD: Final = Ignored("a message nested too deeply to read, with no method")
"""A line (or entry) nested deeper than msgspec follows: its members cannot be read, so
it is answered -32600 with id null, like any request whose id cannot be read."""


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


class _SkipArray(msgspec.Struct, array_like=True, gc=False):
    """An array with no fields: msgspec skips every element, checking the syntax and
    building nothing, so a line is known to be a JSON array at the cost of its bytes."""


_TYPED_ENTRY: Final = msgspec.json.Decoder(_Typed)
_UNTYPED_ENTRY: Final = msgspec.json.Decoder(_Untyped)
_ARRAY: Final = msgspec.json.Decoder(_SkipArray)
_JSON_TEXT: Final = msgspec.json.Decoder(Raw)  # syntax only: a value is skipped, not built
_STR: Final = msgspec.json.Decoder(str)
_ARRAY_START: Final = re.compile(rb"[ \t\r\n]*\[")
_INTEGER_TOKEN: Final = re.compile(rb"-?(?:0|[1-9][0-9]*)")
# "-" and 16 digits: the longest token a safe integer can have (2^53 - 1 has 16 digits,
# and the token regex allows no leading zero). A longer one is never converted: int()
# refuses more than 4,300 digits, and converting is quadratic below that.
_SAFE_TOKEN_LENGTH: Final = 17
_NOT_JSON: Final = Ignored("not JSON")

# A lone surrogate escape (\ud800 with no low half after it, or a low half with no high
# half before it) is valid JSON grammar that msgspec refuses as a whole line. It is read
# as U+FFFD instead: escaped backslashes are hidden first (NUL, which valid JSON text
# never holds raw), so "\\ud800" (a backslash, then the letters) is never touched.
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE: Final = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


@functools.lru_cache(maxsize=8)
def _entries_decoder(limit: int) -> msgspec.json.Decoder[Any]:
    """A decoder that keeps an array's first ``limit`` + 1 entries and skips the rest.

    An array-like struct of ``limit`` + 1 raw fields: msgspec fills them in order and
    skips any further element without building it (a checked ``max_length`` on a list
    is only tested once the whole list is built). None, never a JSON value, marks an
    unfilled slot. Built once per limit (about 4 ms for 1,000).
    """
    fields = [(f"e{index}", Raw, None) for index in range(limit + 1)]
    held = msgspec.defstruct("_Entries", fields, array_like=True, gc=False)
    return msgspec.json.Decoder(held)


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
    # The common case first: a well-typed object, decoded once.
    try:
        env = _TYPED_ENTRY.decode(line)
    except msgspec.ValidationError:
        # An array (refused at its first byte), another JSON value, or an object with a
        # member of the wrong type.
        try:
            return _classify_other(line)
        except RecursionError:
            return _too_deep(line)
        except msgspec.DecodeError:
            return _decode_repaired(line)
    except msgspec.DecodeError:
        return _decode_repaired(line)
    except RecursionError:
        return _too_deep(line)
    return _decide(env.method, env.id, env.jsonrpc == "2.0", env)


def _decode_repaired(line: bytes) -> Classified | Batch:
    """The verdict on a line msgspec refused: read again with its lone surrogates
    replaced, if it has any; otherwise it is not JSON."""
    repaired = _without_lone_surrogates(line)
    if repaired is None:
        return _NOT_JSON
    try:
        try:
            env = _TYPED_ENTRY.decode(repaired)
        except msgspec.ValidationError:
            return _classify_other(repaired)
        return _decide(env.method, env.id, env.jsonrpc == "2.0", env)
    except RecursionError:
        return _too_deep(line)
    except msgspec.DecodeError:
        return _NOT_JSON


def _too_deep(line: bytes) -> Classified:
    """A line too deep to read: answered -32600 as a request whose id cannot be read,
    unless it names no method anywhere: a response (or anything else) is never
    answered, and its request waits for its timeout."""
    return NESTED_TOO_DEEP if b'"method"' in line else _DEEP_NO_METHOD


def _classify_other(line: bytes) -> Classified | Batch:
    """A line the typed pass refused; raises ``msgspec.DecodeError`` when it is not JSON
    (or not UTF-8 where the envelope reads) and ``RecursionError`` when it nests too deep."""
    first = line[:1]
    if first == b"[" or (first != b"{" and _ARRAY_START.match(line)):
        _ARRAY.decode(line)
        return Batch(line)
    # The typed pass stopped at a member of the wrong type, before it could see whether
    # the rest of the line is JSON at all; this pass judges the whole line.
    try:
        env = _UNTYPED_ENTRY.decode(line)
    except msgspec.ValidationError:
        _JSON_TEXT.decode(line)  # not an object: JSON of another kind, or not JSON
        return Ignored(f"JSON that is not an object or an array: {_kind_of_value(line)}")
    return _from_untyped(env)


def classify_entry(entry: bytes | Raw) -> Classified:
    """Classify one batch entry (already-parsed JSON text) by the same rule as a line.

    Never raises: text that is not JSON (or not UTF-8 where the envelope reads) is
    ``Ignored("not JSON")``, nesting too deep is :data:`NESTED_TOO_DEEP`.
    """
    try:
        return _classify_entry(entry)
    except RecursionError:
        return NESTED_TOO_DEEP
    except msgspec.DecodeError:
        repaired = _without_lone_surrogates(bytes(entry))
        if repaired is None:
            return _NOT_JSON
    try:
        return _classify_entry(repaired)
    except RecursionError:
        return NESTED_TOO_DEEP
    except msgspec.DecodeError:
        return _NOT_JSON


def _classify_entry(entry: bytes | Raw) -> Classified:
    try:
        return _from_typed(_TYPED_ENTRY.decode(entry))
    except msgspec.ValidationError:
        pass
    try:
        return _from_untyped(_UNTYPED_ENTRY.decode(entry))
    except msgspec.ValidationError:
        return Ignored(f"not an object: {_kind_of_value(entry)}")


def _without_lone_surrogates(text: bytes) -> bytes | None:
    """``text`` with each lone surrogate escape written ``\\ufffd`` (same length), or None
    when it has none, so decoding it again could change nothing."""
    if b"\x00" in text or not _SURROGATE_ESCAPE.search(text):
        return None
    hidden = text.replace(b"\\\\", b"\x00")
    repaired, count = _LONE_SURROGATE.subn(rb"\\ufffd", hidden)
    if not count:
        return None
    return repaired.replace(b"\x00", b"\\\\")


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
        if len(token) > _SAFE_TOKEN_LENGTH:
            return _UNSAFE_INTEGER
        return int(token)  # exact: the range check happens in _decide
    kind = _kind_of_value(raw)
    return _NOT_INTEGER if kind == "a number" else _Bad(kind)


def _read_str(raw: Raw) -> str | _Bad:
    """A string member, or what kind of value it is instead. Raises
    ``msgspec.DecodeError`` for a string that is not UTF-8: then the text is not JSON,
    as the typed pass finds when it reads that member first."""
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
