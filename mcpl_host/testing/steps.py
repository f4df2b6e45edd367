"""The steps a scripted server runs, as plain data.

Each step is a frozen msgspec struct tagged by its ``step`` member, so a whole script is
one JSON document: the same script runs in memory, in a subprocess and on a socket.
Values the script sends (params, results, ids) are plain JSON values; raw bytes are
carried as base64 by msgspec.

``timeout`` on a step that waits for the host bounds that wait; ``None`` means the
script's default.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEFAULT_UNPLANNED",
    "Crash",
    "Drop",
    "Expect",
    "ExpectAll",
    "ExpectAnswer",
    "ExpectClose",
    "Expected",
    "Handshake",
    "Notify",
    "OnUnplanned",
    "RefuseConnections",
    "Reply",
    "ReplyError",
    "ScriptData",
    "SendBatch",
    "SendGarbage",
    "SendOversized",
    "SendRaw",
    "SendRequest",
    "ServeForever",
    "Step",
    "Wait",
    "describe",
    "describe_expected",
    "names",
    "takes",
]


class _Step(msgspec.Struct, tag_field="step", frozen=True, kw_only=True, omit_defaults=True):
    pass


class Handshake(_Step, tag="handshake", frozen=True):
    """Expect ``initialize``, answer it, expect ``notifications/initialized``.

    The answer holds ``protocolVersion`` and only those of ``capabilities``,
    ``serverInfo`` and ``instructions`` that were given (``None``: left out).
    """

    version: str = "2025-11-25"
    capabilities: Any = None
    server_info: Any = None
    instructions: str | None = None
    timeout: float | None = None


class Expect(_Step, tag="expect", frozen=True):
    """Wait for the host's next request or notification named ``method``.

    ``params`` (when not ``None``) must equal the message's params. ``label`` names
    what it takes for a later ``reply(to=...)``; ``None``: the method names it.
    """

    method: str
    params: Any = None
    label: str | None = None
    timeout: float | None = None

    @property
    def name(self) -> str:
        """What ``reply(to=...)`` calls the message this takes."""
        return self.method if self.label is None else self.label


class Expected(msgspec.Struct, frozen=True, omit_defaults=True):
    """One of the messages an ``expect_all`` step waits for: as ``expect`` has them."""

    method: str
    params: Any = None
    label: str | None = None

    @property
    def name(self) -> str:
        """What ``reply(to=...)`` calls the message this takes."""
        return self.method if self.label is None else self.label


class ExpectAll(_Step, tag="expect_all", frozen=True):
    """Wait until the host has sent every one of ``expected``, in any order."""

    expected: tuple[Expected, ...]
    timeout: float | None = None


class Reply(_Step, tag="reply", frozen=True):
    """Answer a request with ``result``, under its own id: the one labelled ``to``, or
    (``to`` is ``None``) the one the last expecting step took."""

    result: Any = None
    to: str | None = None


class ReplyError(_Step, tag="reply_error", frozen=True):
    """Answer a request, as ``Reply`` picks it, with a JSON-RPC error (``data`` left out
    if None)."""

    code: int
    message: str
    data: Any = None
    to: str | None = None


class OnUnplanned(_Step, tag="on_unplanned", frozen=True):
    """From here on, how to answer a request that no step on its connection will take:
    ``answer`` is ``error`` (``code``, ``message``, ``data``), ``result`` or ``none``
    (leave it unanswered). ``message`` ``None``: ``Method not found: <method>``."""

    answer: Literal["error", "result", "none"] = "error"
    result: Any = None
    code: int = -32601
    message: str | None = None
    data: Any = None


class SendRequest(_Step, tag="send_request", frozen=True):
    """Send a request to the host. ``id_raw`` (JSON text) replaces ``id`` on the wire.
    ``method`` is any JSON value, so that a malformed request can be sent."""

    method: Any
    params: Any = None
    id: int | str | None = None
    id_raw: str | None = None


class ExpectAnswer(_Step, tag="expect_answer", frozen=True):
    """Wait for the host's answer to the last request (or batch, or raw line) sent."""

    timeout: float | None = None


class Notify(_Step, tag="notify", frozen=True):
    """Send a notification (``params`` left out if None)."""

    method: str
    params: Any = None


class SendRaw(_Step, tag="send_raw", frozen=True):
    """Write exactly these bytes (no newline is added)."""

    data: bytes


class SendBatch(_Step, tag="send_batch", frozen=True):
    """Write these messages as one JSON array on one line."""

    messages: list[Any]


class SendGarbage(_Step, tag="send_garbage", frozen=True):
    """Write one line that is not JSON."""

    text: str = "this line is not JSON {"


class SendOversized(_Step, tag="send_oversized", frozen=True):
    """Write one line of exactly ``size`` bytes (the newline not counted): a valid
    notification, padded, so a host with a larger limit would take it."""

    size: int


class Wait(_Step, tag="wait", frozen=True):
    """Let ``seconds`` pass, still recording what the host sends (and answering ping)."""

    seconds: float


class Drop(_Step, tag="drop", frozen=True):
    """Close this connection cleanly: the host reads end of file."""


class Crash(_Step, tag="crash", frozen=True):
    """End this connection abruptly (stdio: SIGKILL; socket: reset; memory: broken stream)."""


class RefuseConnections(_Step, tag="refuse_connections", frozen=True):
    """The next ``count`` connection attempts fail."""

    count: int


class ExpectClose(_Step, tag="expect_close", frozen=True):
    """Wait for the host to close this connection."""

    timeout: float | None = None


class ServeForever(_Step, tag="serve_forever", frozen=True):
    """Answer ping and tools/list, refuse other requests with -32601, until the host
    closes the connection."""


Step: TypeAlias = (
    Handshake
    | Expect
    | ExpectAll
    | Reply
    | ReplyError
    | SendRequest
    | ExpectAnswer
    | Notify
    | SendRaw
    | SendBatch
    | SendGarbage
    | SendOversized
    | Wait
    | Drop
    | Crash
    | RefuseConnections
    | ExpectClose
    | ServeForever
    | OnUnplanned
)


DEFAULT_TIMEOUT: Final = 10.0
"""How long a step waits for the host unless told otherwise."""


class ScriptData(msgspec.Struct, frozen=True, kw_only=True):
    """A whole script: its steps and the default bound on every wait for the host."""

    steps: tuple[Step, ...] = ()
    timeout: float = DEFAULT_TIMEOUT

    def timeout_of(self, index: int) -> float:
        """The wait bound of step ``index`` (the default past the end or when unset)."""
        if index < len(self.steps):
            own = getattr(self.steps[index], "timeout", None)
            if own is not None:
                return float(own)
        return self.timeout

    def unplanned_at(self, index: int) -> OnUnplanned:
        """How to answer an unplanned request during step ``index``: as the last
        ``on_unplanned`` step before it says, else :data:`DEFAULT_UNPLANNED`."""
        for step in reversed(self.steps[:index]):
            if isinstance(step, OnUnplanned):
                return step
        return DEFAULT_UNPLANNED


DEFAULT_UNPLANNED: Final = OnUnplanned()
"""How a script answers an unplanned request until an ``on_unplanned`` step says
otherwise: -32601, ``Method not found: <method>``."""


def names(step: Step) -> tuple[str, ...]:
    """What ``reply(to=...)`` calls the messages ``step`` takes."""
    match step:
        case Expect():
            return (step.name,)
        case ExpectAll():
            return tuple(expected.name for expected in step.expected)
    return ()


def takes(step: Step) -> tuple[str, ...]:
    """The methods of the host's messages ``step`` waits for, one entry per message."""
    match step:
        case Handshake():
            return ("initialize", "notifications/initialized")
        case Expect():
            return (step.method,)
        case ExpectAll():
            return tuple(expected.method for expected in step.expected)
    return ()


_CUT = 60
# The first member of these steps reads as an argument, not a keyword.
_POSITIONAL = frozenset(
    {"method", "result", "code", "data", "messages", "size", "seconds", "count"}
)


def describe(step: Step) -> str:
    """``expect('tools/call', params={...})``: a step as a failure message names it."""
    if isinstance(step, ExpectAll):
        return f"expect_all({', '.join(describe_expected(e) for e in step.expected)})"
    shown: list[str] = []
    for field in msgspec.structs.fields(step):
        value = getattr(step, field.name)
        # A request's id is always shown: null is an id like any other there.
        default = field.required is False and value == field.default and field.name != "id"
        if field.name == "timeout" or default:
            continue
        text = _cut(repr(value))
        positional = not shown and field.name in _POSITIONAL
        shown.append(text if positional else f"{field.name}={text}")
    return f"{step.__struct_config__.tag}({', '.join(shown)})"


def describe_expected(expected: Expected) -> str:
    """``'tools/call' params={...} label='slow'``: one member of an ``expect_all``."""
    text = repr(expected.method)
    if expected.params is not None:
        text += f" params={_cut(repr(expected.params))}"
    if expected.label is not None:
        text += f" label={_cut(repr(expected.label))}"
    return text


def _cut(text: str) -> str:
    return text if len(text) <= _CUT else text[: _CUT - 1] + "…"
