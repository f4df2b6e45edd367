"""The steps a scripted server runs, as plain data.

Each step is a frozen msgspec struct tagged by its ``step`` member, so a whole script is
one JSON document: the same script runs in memory, in a subprocess and on a socket.
Values the script sends (params, results, ids) are plain JSON values; raw bytes are
carried as base64 by msgspec.

``timeout`` on a step that waits for the host bounds that wait; ``None`` means the
script's default.
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

import msgspec

__all__ = [
    "DEFAULT_TIMEOUT",
    "Crash",
    "Drop",
    "Expect",
    "ExpectAnswer",
    "ExpectClose",
    "Handshake",
    "Notify",
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

    ``params`` (when not ``None``) must equal the message's params.
    """

    method: str
    params: Any = None
    timeout: float | None = None


class Reply(_Step, tag="reply", frozen=True):
    """Answer the last expected request with ``result``, under its own id."""

    result: Any = None


class ReplyError(_Step, tag="reply_error", frozen=True):
    """Answer the last expected request with a JSON-RPC error (``data`` left out if None)."""

    code: int
    message: str
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


_CUT = 60
# The first member of these steps reads as an argument, not a keyword.
_POSITIONAL = frozenset(
    {"method", "result", "code", "data", "messages", "size", "seconds", "count"}
)


def describe(step: Step) -> str:
    """``expect('tools/call', params={...})``: a step as a failure message names it."""
    shown: list[str] = []
    for field in msgspec.structs.fields(step):
        value = getattr(step, field.name)
        # A request's id is always shown: null is an id like any other there.
        default = field.required is False and value == field.default and field.name != "id"
        if field.name == "timeout" or default:
            continue
        text = repr(value)
        if len(text) > _CUT:
            text = text[: _CUT - 1] + "…"
        positional = not shown and field.name in _POSITIONAL
        shown.append(text if positional else f"{field.name}={text}")
    return f"{step.__struct_config__.tag}({', '.join(shown)})"
