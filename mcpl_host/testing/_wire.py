"""The scripted server's side of the wire: the lines it writes, and what a host's line is.

Pure (stdlib and msgspec only): the subprocess server imports it too. A scripted server
judges the host's lines loosely on purpose, just enough to wait for and describe them;
judging a peer strictly is the host's job, and what the host sent is kept verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec

__all__ = [
    "MIN_OVERSIZED",
    "HostLine",
    "batch_line",
    "error_line",
    "garbage_line",
    "notification_line",
    "oversized_line",
    "request_line",
    "result_line",
]

_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder()
_CUT: Final = 120

_OVERSIZED_PREFIX: Final = (
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
)
_OVERSIZED_SUFFIX: Final = b'"}}'
MIN_OVERSIZED: Final = len(_OVERSIZED_PREFIX) + len(_OVERSIZED_SUFFIX)
"""The shortest line ``send_oversized`` can write: the notification around the padding."""


def _line(message: Any) -> bytes:
    return _ENCODER.encode(message) + b"\n"


def result_line(request_id: Any, result: Any) -> bytes:
    return _line({"jsonrpc": "2.0", "id": request_id, "result": result})


def error_line(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _line({"jsonrpc": "2.0", "id": request_id, "error": error})


def request_line(method: Any, params: Any, request_id: Any, id_raw: str | None) -> bytes:
    message: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": msgspec.Raw(id_raw.encode()) if id_raw is not None else request_id,
        "method": method,
    }
    if params is not None:
        message["params"] = params
    return _line(message)


def notification_line(method: str, params: Any) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return _line(message)


def batch_line(messages: list[Any]) -> bytes:
    return _line(messages)


def garbage_line(text: str) -> bytes:
    return text.encode() + b"\n"


def oversized_line(size: int) -> bytes:
    """A valid notification of exactly ``size`` bytes, then the newline."""
    return _OVERSIZED_PREFIX + b"x" * (size - MIN_OVERSIZED) + _OVERSIZED_SUFFIX + b"\n"


@dataclass(frozen=True, slots=True)
class HostLine:
    """One line the host wrote, and what it looks like.

    ``message`` is the decoded JSON value (``None`` when ``is_json`` is false).
    ``kind``: ``request`` (a string method and an id member), ``notification`` (a
    string method, no id), ``response`` (an object without a method), ``batch`` (an
    array), ``other`` (any other JSON), ``not-json``.
    """

    raw: bytes
    message: Any
    is_json: bool
    kind: str

    @classmethod
    def parse(cls, raw: bytes) -> HostLine:
        try:
            message = _DECODER.decode(raw)
        except msgspec.DecodeError:
            return cls(raw, None, False, "not-json")
        return cls(raw, message, True, _kind(message))

    @property
    def method(self) -> str | None:
        if self.kind in ("request", "notification"):
            method: str = self.message["method"]
            return method
        return None

    @property
    def id(self) -> Any:
        """The id member (``None`` when absent or null; see :attr:`has_id`)."""
        return self.message.get("id") if isinstance(self.message, dict) else None

    @property
    def has_id(self) -> bool:
        return isinstance(self.message, dict) and "id" in self.message

    def describe(self) -> str:
        """A short, single-line account of the line, for failure messages."""
        message = self.message
        if self.kind == "request":
            text = f"request {self.method!r} (id {_show(message['id'])})"
        elif self.kind == "notification":
            text = f"notification {self.method!r}"
        elif self.kind == "response":
            member = "error" if "error" in message else "result"
            body = f"{member} {_show(message[member])}" if member in message else "no result"
            text = f"response (id {_show(message.get('id'))}) {body}"
        elif self.kind == "batch":
            text = f"batch of {len(message)}"
        elif self.kind == "other":
            text = f"JSON that is not JSON-RPC: {_show(message)}"
        else:
            text = f"a line that is not JSON: {_show(self.raw)}"
        if self.kind in ("request", "notification") and "params" in message:
            text += f" params {_show(message['params'])}"
        return text


def _kind(message: Any) -> str:
    if isinstance(message, list):
        return "batch"
    if not isinstance(message, dict):
        return "other"
    if isinstance(message.get("method"), str):
        return "request" if "id" in message else "notification"
    if "method" not in message and ("id" in message or "error" in message):
        return "response"
    return "other"


def _show(value: Any) -> str:
    text = (
        value.decode("utf-8", "replace")
        if isinstance(value, bytes)
        else _ENCODER.encode(value).decode()
    )
    return text if len(text) <= _CUT else text[: _CUT - 1] + "…"
