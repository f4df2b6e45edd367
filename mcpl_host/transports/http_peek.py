"""What the HTTP transport reads of a line before it goes out, or of an answer before it
is handed on: ids, methods, and the one notification it acts on.

Plain code, no I/O. A peek, not a parse: the connection decodes every message itself
(protocol/envelope.py); the transport only needs to know which requests a POST carries,
which of them an answer settles, and which request a ``notifications/cancelled`` gives
up on. A line that is not JSON-RPC peeks as nothing, and the connection judges it.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Peek", "cancelled_id", "peek"]


class Peek(msgspec.Struct):
    """What the transport needs of a message: its id, whether it is a request, and the
    params of the one notification it acts on (``notifications/cancelled``)."""

    id: Any = None
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw(b"null")


class _CancelParams(msgspec.Struct):
    requestId: Any = None  # the wire's name


_peek_one = msgspec.json.Decoder(Peek)
_peek_many = msgspec.json.Decoder(list[Peek])
_cancel_params = msgspec.json.Decoder(_CancelParams | None)


def peek(line: bytes) -> list[Peek]:
    """The messages of a line (a batch has several); nothing when it is not JSON-RPC."""
    try:
        if line.lstrip()[:1] == b"[":
            return _peek_many.decode(line)
        return [_peek_one.decode(line)]
    except (msgspec.DecodeError, ValueError):
        return []


def cancelled_id(message: Peek) -> Any:
    """The request a ``notifications/cancelled`` of the host's gives up on, else None."""
    if message.method != "notifications/cancelled":
        return None
    try:
        params = _cancel_params.decode(message.params)
    except (msgspec.DecodeError, ValueError):
        return None
    return params.requestId if params is not None else None
