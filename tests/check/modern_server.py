"""A small, compliant 2026-07-28 request handler, dual-era with the demo server, for the
checker's tests of the modern rules, over an in-memory stream and (through
:mod:`tests.check.http_server`) over HTTP.

:func:`answer_modern` judges one request the way 2026-07-28 asks (the required ``_meta``,
the version error, the removed methods, ``server/discover``), and serves the rest with
the demo server's ``handle``, adding ``resultType``. It returns the HTTP status the
revision names too, which the stream server ignores. A :class:`Behaviour` breaks it:
``skip`` names checks to leave out, ``change(request, answer)`` rewrites an answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import trio
import trio.testing

from mcpl_host.check import Opener
from mcpl_host.demo import SUPPORTED as LEGACY
from mcpl_host.demo import Session, answer_line, handle
from mcpl_host.protocol.discover import CLIENT_CAPABILITIES, PROTOCOL_VERSION, SERVER_INFO
from mcpl_host.protocol.framing import LineDecoder
from mcpl_host.transports import Transport
from mcpl_host.transports.memory import StreamTransport

MODERN: Final = "2026-07-28"
VERSIONS: Final = (MODERN, *LEGACY)
REMOVED: Final = frozenset(
    {"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "initialize"}
)
_ENCODER: Final = msgspec.json.Encoder()

Change = Callable[[Any, dict[str, Any]], dict[str, Any] | None]


@dataclass(frozen=True)
class Behaviour:
    """How the reference servers break: ``skip`` holds the names of checks left out
    ("meta", "version", "removed", "headers", and the HTTP server's own), ``change``
    rewrites each JSON-RPC answer (None: none is sent)."""

    skip: frozenset[str] = frozenset()
    change: Change | None = None

    def answer(self, request: Any, answer: dict[str, Any] | None) -> dict[str, Any] | None:
        if answer is None or self.change is None:
            return answer
        return self.change(request, answer)


COMPLIANT: Final = Behaviour()


def error(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": body}


def is_modern(message: Any) -> bool:
    """Whether ``message`` carries 2026-07-28's per-request ``_meta`` version."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION in meta


def meta_of(message: dict[str, Any]) -> Any:
    params = message.get("params")
    return params.get("_meta") if isinstance(params, dict) else None


def answer_modern(
    message: dict[str, Any], behaviour: Behaviour = COMPLIANT
) -> tuple[int, dict[str, Any] | None]:
    """(the HTTP status, the answer) for one 2026-07-28 message; a notification gets
    (202, None). The header checks are the HTTP server's (they need the headers)."""
    if "id" not in message:
        return 202, None
    id_, method = message["id"], message.get("method")
    meta = meta_of(message)
    if "meta" not in behaviour.skip and (
        not isinstance(meta, dict)
        or PROTOCOL_VERSION not in meta
        or CLIENT_CAPABILITIES not in meta
    ):
        return 400, error(
            id_, -32602, "Invalid params: _meta needs protocolVersion and clientCapabilities"
        )
    version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else MODERN
    if "version" not in behaviour.skip and version != MODERN:
        data = {"supported": list(VERSIONS), "requested": version}
        return 400, error(id_, -32022, "Unsupported protocol version", data)
    if method == "server/discover":
        result = {
            "resultType": "complete",
            "supportedVersions": list(VERSIONS),
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {SERVER_INFO: {"name": "mcpl-host-reference", "version": "1.0.0"}},
        }
        return 200, {"jsonrpc": "2.0", "id": id_, "result": result}
    if method in REMOVED and "removed" not in behaviour.skip:
        return 404, error(id_, -32601, f"Method not found: {method}")
    answer = handle(message, Session())
    if answer is None:
        return 202, None
    if isinstance(answer.get("result"), dict):
        answer["result"] = {"resultType": "complete", **answer["result"]}
    status = 404 if answer.get("error", {}).get("code") == -32601 else 200
    return status, answer


class DualEra:
    """One stream connection of a dual-era server: ``initialize`` selects the handshake
    era for the connection (the demo server's answers); a request with 2026-07-28's
    ``_meta``, or any request before a handshake, is served as 2026-07-28."""

    def __init__(self, behaviour: Behaviour = COMPLIANT) -> None:
        self.behaviour = behaviour
        self.session: Session | None = None

    def answer(self, line: bytes) -> Any:
        try:
            message = msgspec.json.decode(line)
        except msgspec.DecodeError:
            message = None
        legacy = isinstance(message, dict) and (
            message.get("method") == "initialize"
            or (self.session is not None and not is_modern(message))
        )
        if not isinstance(message, dict) or legacy:
            if self.session is None:
                self.session = Session()
            return self.behaviour.answer(message, answer_line(line, self.session))
        return self.behaviour.answer(message, answer_modern(message, self.behaviour)[1])


async def _serve(stream: trio.abc.Stream, server: DualEra) -> None:
    decoder = LineDecoder()
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while data := await stream.receive_some(65536):
            for line in decoder.feed(data):
                if not isinstance(line, bytes | bytearray):
                    continue
                answer = server.answer(bytes(line))
                if answer is not None:
                    await stream.send_all(_ENCODER.encode(answer) + b"\n")
        await stream.aclose()


@contextlib.asynccontextmanager
async def serving(behaviour: Behaviour = COMPLIANT) -> AsyncIterator[Opener]:
    """An opener for the in-memory dual-era server, ``behaviour`` on every connection."""
    async with trio.open_nursery() as nursery:

        async def open_one() -> Transport:
            host, peer = trio.testing.memory_stream_pair()
            nursery.start_soon(_serve, peer, DualEra(behaviour))
            return StreamTransport(host, "reference")

        yield open_one
        nursery.cancel_scope.cancel()
