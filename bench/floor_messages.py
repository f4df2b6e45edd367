"""The JSON-RPC messages of the asyncio floor (``clients_floor_asyncio.py``) as msgspec
structs: the request encoded from a struct, the answer's envelope decoded with
``result`` kept raw, then the tool result decoded as a struct. Imported by the child
inside its import clock: msgspec is part of what that client costs."""

from __future__ import annotations

from typing import Any

import msgspec


class Request(msgspec.Struct, omit_defaults=True):
    jsonrpc: str
    id: int
    method: str
    params: Any = None  # left out when None


class Answer(msgspec.Struct):
    id: int | str | None = None
    result: msgspec.Raw = msgspec.Raw(b"null")
    error: Any = None


class TextBlock(msgspec.Struct):
    type: str
    text: str = ""


class CallResult(msgspec.Struct):
    content: list[TextBlock]
    isError: bool = False  # the wire's name


class EchoArguments(msgspec.Struct):
    text: str


class CallParams(msgspec.Struct):
    name: str
    arguments: EchoArguments


_encode = msgspec.json.Encoder().encode
answer_of = msgspec.json.Decoder(Answer).decode
_call_result = msgspec.json.Decoder(CallResult).decode
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def request(id_: int, method: str, params: Any) -> bytes:
    return _encode(Request("2.0", id_, method, params))


def text_of(answer: Answer) -> str:
    if answer.error is not None:
        raise AssertionError(f"echo failed: {answer.error}")
    return _call_result(answer.result).content[0].text
