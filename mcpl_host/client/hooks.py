"""The embedder's hooks for what a server may ask of the host: its roots, a sampled
message (``sampling/createMessage``), input from the user (``elicitation/create``).

Each hook is wrapped into a server-request handler that decodes the params into typed
values (params that do not fit are answered with -32602), calls the hook, and answers
with what it returns. Whether the request is served at all on the negotiated revision
is decided by the connection's dispatch (a revision that does not define the method
gets -32601); whether the capability is advertised, by
:func:`mcpl_host.protocol.capabilities.client_capabilities`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..driver.responder import Handler, ServerRequest
from ..protocol.envelope import RequestId
from ..protocol.errors import INVALID_PARAMS, RequestError
from .types import CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, Root

__all__ = [
    "ElicitationHook",
    "HookContext",
    "SamplingHook",
    "as_roots",
    "elicitation_handler",
    "roots_handler",
    "sampling_handler",
]


@dataclass(frozen=True, slots=True)
class HookContext:
    """Which server asks, on which revision, under which request id."""

    server: str
    request_id: RequestId
    protocol_version: str | None


SamplingHook: TypeAlias = Callable[
    [CreateMessageParams, HookContext], Awaitable[CreateMessageResult | Mapping[str, Any]]
]
"""Answers ``sampling/createMessage``: ask the host's model, return its message. Raise
:class:`~mcpl_host.RequestError` to refuse (say, the user declined: code -1)."""

ElicitationHook: TypeAlias = Callable[
    [ElicitParams, HookContext], Awaitable[ElicitResult | Mapping[str, Any]]
]
"""Answers ``elicitation/create``: show ``message`` and the form (or the URL), return the
user's action and, on accept, the form's content."""


def as_roots(roots: Iterable[Root | str]) -> tuple[Root, ...]:
    """Roots given as :class:`Root` values or bare URIs.

    Raises ``TypeError`` for anything else.
    """
    out: list[Root] = []
    for root in roots:
        if isinstance(root, str):
            out.append(Root(uri=root))
        elif isinstance(root, Root):
            out.append(root)
        else:
            raise TypeError(f"a root is a Root or a URI string, not {type(root).__name__}")
    return tuple(out)


def roots_handler(current: Callable[[], tuple[Root, ...]]) -> Handler:
    """``roots/list``: the roots as they are when the server asks."""

    async def handle(_request: ServerRequest) -> Any:
        return {"roots": current()}

    return handle


def sampling_handler(
    hook: SamplingHook, context: Callable[[ServerRequest], HookContext]
) -> Handler:
    async def handle(request: ServerRequest) -> Any:
        params = request.decode_params(CreateMessageParams)
        return await hook(params, context(request))

    return handle


def elicitation_handler(
    hook: ElicitationHook,
    context: Callable[[ServerRequest], HookContext],
    url_mode: Callable[[], bool],
) -> Handler:
    """``url_mode()``: whether URL mode was advertised and the negotiated revision has it."""

    async def handle(request: ServerRequest) -> Any:
        params = request.decode_params(ElicitParams)
        if params.mode == "url":
            if not url_mode():
                raise RequestError(
                    INVALID_PARAMS, "URL-mode elicitation is not supported by this host"
                )
            if params.url is None or params.elicitation_id is None:
                raise RequestError(
                    INVALID_PARAMS, "URL-mode elicitation needs url and elicitationId"
                )
        elif params.requested_schema is None:
            raise RequestError(INVALID_PARAMS, "form-mode elicitation needs requestedSchema")
        return await hook(params, context(request))

    return handle
