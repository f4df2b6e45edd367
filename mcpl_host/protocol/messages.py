"""What the host writes: JSON-RPC messages as structs, encoded one per line.

msgspec encodes these straight to bytes; ``params`` and ``result`` may be plain values
or :class:`msgspec.Raw` (already-encoded JSON passes through untouched). Optional members
default to ``UNSET``, which msgspec leaves out; ``omit_defaults`` is never used, since it
would drop ``"jsonrpc": "2.0"`` too.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType

from .envelope import RequestId

__all__ = [
    "ErrorAnswer",
    "ErrorObject",
    "OutNotification",
    "OutRequest",
    "ResultAnswer",
    "encode",
    "encode_batch",
    "error_answer",
    "params_object",
]


def params_object(params: Any) -> dict[str, Any] | None:
    """A request's params as an object to add ``_meta`` keys to: ``{}`` for none, the
    decoded object of raw params, None for params that are not an object (raw JSON that
    is not one, or too deep to decode): those are sent as the caller wrote them, and the
    server judges."""
    if params is None or params is UNSET:
        return {}
    if isinstance(params, msgspec.Raw):
        try:
            params = msgspec.json.decode(params)
        except (msgspec.DecodeError, RecursionError):
            return None
    return params if isinstance(params, dict) else None


class OutRequest(msgspec.Struct, kw_only=True, gc=False):
    jsonrpc: str = "2.0"
    id: int
    method: str
    params: Any | UnsetType = UNSET


class OutNotification(msgspec.Struct, kw_only=True, gc=False):
    jsonrpc: str = "2.0"
    method: str
    params: Any | UnsetType = UNSET


class ResultAnswer(msgspec.Struct, kw_only=True, gc=False):
    jsonrpc: str = "2.0"
    id: RequestId  # ``"id": null`` is written out: a null-id request is answered with null
    result: Any


class ErrorObject(msgspec.Struct, kw_only=True, gc=False):
    code: int
    message: str
    data: Any | UnsetType = UNSET


class ErrorAnswer(msgspec.Struct, kw_only=True, gc=False):
    jsonrpc: str = "2.0"
    id: RequestId
    error: ErrorObject


Outbound = OutRequest | OutNotification | ResultAnswer | ErrorAnswer

_ENCODER: Final = msgspec.json.Encoder()


def encode(message: Outbound) -> bytes:
    """One message as one line. JSON text never holds a raw newline, so none is inside.

    Raises ``TypeError`` or ``msgspec.EncodeError`` for a value JSON cannot carry.
    """
    return _ENCODER.encode(message) + b"\n"


def encode_batch(messages: list[Any]) -> bytes:
    """An array of messages as one line (batch answers, or a 2025-03-26 outbound batch)."""
    return _ENCODER.encode(messages) + b"\n"


def error_answer(id_: RequestId, code: int, message: str, data: Any = UNSET) -> ErrorAnswer:
    return ErrorAnswer(id=id_, error=ErrorObject(code=code, message=message, data=data))
