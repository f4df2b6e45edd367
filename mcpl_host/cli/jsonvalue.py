"""A server's JSON as a report holds it: lists and results stay ``msgspec.Raw`` (the
bytes as received) until they are written or shown, so a large answer is never held
as Python objects whole (docs/client.md: memory per byte received)."""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import Raw

__all__ = ["ToolOutcome", "plain", "text_of", "tool_error", "tool_outcome"]

_DECODER: Final = msgspec.json.Decoder()


class ToolOutcome(msgspec.Struct, frozen=True):
    """The two members of a tool's result the command acts on (``isError``: exit 3;
    ``structuredContent``: the outputSchema check); the rest is skipped unbuilt."""

    isError: Any = None  # the wire's name
    structuredContent: Any = None  # the wire's name


_OUTCOME: Final = msgspec.json.Decoder(ToolOutcome)


def plain(value: Any) -> Any:
    """``value`` with a Raw decoded; anything else as it is. Raises nothing.

    The framing only checked a Raw's shape: a string in it may still not be UTF-8 (the
    bad bytes become U+FFFD) or hold an escape JSON does not allow (then the value is
    its text, as a string).
    """
    if not isinstance(value, Raw):
        return value
    try:
        return _DECODER.decode(value)
    except msgspec.DecodeError:
        text = bytes(value).decode("utf-8", "replace")
    try:
        return _DECODER.decode(text)
    except msgspec.DecodeError:
        return text


def text_of(value: Any) -> str:
    """A JSON value as text: a string as it is, anything else as its JSON. Raises
    nothing."""
    value = plain(value)
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def tool_outcome(value: Any) -> ToolOutcome:
    """A tool result's ``isError`` and ``structuredContent`` (both None when the result
    is not an object, or not JSON). Raises nothing."""
    try:
        if isinstance(value, Raw):
            return _OUTCOME.decode(value)
        if isinstance(value, dict):
            return ToolOutcome(value.get("isError"), value.get("structuredContent"))
    except msgspec.DecodeError:
        pass
    return ToolOutcome()


def tool_error(value: Any) -> bool:
    """Whether a tool result says ``isError: true`` (exactly true). Raises nothing."""
    return tool_outcome(value).isError is True
