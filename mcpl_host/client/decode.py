"""Turning a result's JSON into the types of :mod:`mcpl_host.client.types`.

Each result type has one decoder, built once. Decoding is strict about what the
revision requires and lenient about the rest: a content block of a type this library
does not know becomes an :class:`~mcpl_host.client.types.UnknownContent` instead of
failing the whole result (a tool that ran must not lose its answer). Anything else
that does not fit is a :class:`~mcpl_host.ProtocolError` carrying the raw JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import msgspec
from msgspec import Raw

from ..driver.pending import result_decoder
from ..protocol.redact import log_value
from ..protocol.results import ResultDecodeError
from .types import (
    CallToolResult,
    ContentBlock,
    GetPromptResult,
    KnownContent,
    PromptMessage,
    UnknownContent,
    WireType,
    keep_raw,
)

__all__ = ["ResultDecodeError", "decode_result"]

T = TypeVar("T", bound=WireType)


class _Context:
    """Who is decoding what, for the error message."""

    __slots__ = ("method", "safe", "server")

    def __init__(self, method: str, server: str | None, safe: Callable[[str], str]) -> None:
        self.method = method
        self.server = server
        self.safe = safe

    def error(self, raw: Raw, exc: Exception) -> ResultDecodeError:
        # msgspec's message can quote the peer's values (an unknown tag): made safe.
        return ResultDecodeError(
            f"the result of {self.method!r} does not fit its type: {self.safe(str(exc))}",
            raw=raw,
            server=self.server,
        )


def decode_result(
    raw: Raw,
    type_: type[T],
    *,
    method: str,
    server: str | None = None,
    safe: Callable[[str], str] = log_value,
) -> T:
    """``raw`` as ``type_``, keeping the JSON (``.raw``, ``.extra``). ``safe`` makes the
    peer's text fit for an error message (a connection's ``redactor.log_value``).

    Raises :class:`ResultDecodeError` when it does not fit.
    """
    return _decode(raw, type_, _Context(method, server, safe))


def _decode(raw: Raw, type_: type[T], context: _Context) -> T:
    try:
        value: T = result_decoder(type_).decode(raw)
    except msgspec.ValidationError as exc:
        # The fast path failed; it may only be a content block of an unknown type.
        value = _lenient(raw, type_, context, exc)
    except (msgspec.DecodeError, RecursionError) as exc:  # RecursionError: nested too deep
        raise context.error(raw, exc) from None
    return keep_raw(value, raw)


def _lenient(raw: Raw, type_: type[T], context: _Context, first: msgspec.ValidationError) -> T:
    if type_ is not CallToolResult and type_ is not GetPromptResult:
        raise context.error(raw, first) from None
    try:
        members = msgspec.json.decode(raw)
        if not isinstance(members, dict):
            raise context.error(raw, first)
        if type_ is CallToolResult:
            content = members.pop("content", [])
            result: Any = msgspec.convert(members, CallToolResult)
            result.content = _blocks(content)
        else:
            messages = members.pop("messages", None)
            result = msgspec.convert(members | {"messages": []}, GetPromptResult)
            result.messages = [_message(m) for m in _array(messages)]
    except (msgspec.DecodeError, RecursionError) as exc:
        raise context.error(raw, exc) from None
    value: T = result
    return value


def _array(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise msgspec.ValidationError("Expected `array`")
    return value


def _blocks(value: Any) -> list[ContentBlock]:
    return [_block(item) for item in _array(value)]


def _block(item: Any) -> ContentBlock:
    try:
        block: ContentBlock = msgspec.convert(item, KnownContent)
    except msgspec.ValidationError:
        # A known type that is malformed is the server's error; an unknown one is kept.
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise
        if item["type"] in _KNOWN_TAGS:
            raise
        return UnknownContent(data=item)
    return block


def _message(item: Any) -> PromptMessage:
    if not isinstance(item, dict) or not isinstance(item.get("role"), str):
        raise msgspec.ValidationError("a prompt message needs a string `role`")
    return PromptMessage(role=item["role"], content=_block(item.get("content")))


_KNOWN_TAGS: Final = frozenset({"text", "image", "audio", "resource_link", "resource"})
