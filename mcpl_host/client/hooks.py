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

import msgspec
from msgspec import Raw

from ..driver.responder import Handler, ServerRequest
from ..protocol.envelope import RequestId
from ..protocol.errors import INVALID_PARAMS, METHOD_NOT_FOUND, RequestError
from .types import CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, Root

__all__ = ["ElicitationHook", "HookContext", "InputHooks", "SamplingHook", "as_roots"]


@dataclass(frozen=True, slots=True)
class HookContext:
    """Which server asks, on which revision, under which request id. On 2026-07-28 the
    server asks through a result (MRTR): ``request_id`` is then the id of the request
    whose result asked, and ``input_key`` the key of the entry in ``inputRequests``."""

    server: str
    request_id: RequestId
    protocol_version: str | None
    input_key: str | None = None


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


class InputHooks:
    """The embedder's hooks, answering a method and its params in either era: a server
    request of the handshake era (:meth:`handler`) and an entry of a 2026-07-28
    result's ``inputRequests`` (``client/mrtr.py``) get their answer from
    :meth:`answer`, so a hook's result is shaped the same on both paths."""

    def __init__(
        self,
        *,
        roots: Callable[[], tuple[Root, ...]] | None,
        sampling: SamplingHook | None,
        elicitation: ElicitationHook | None,
        url_mode: Callable[[], bool],
    ) -> None:
        """``roots()``: the roots as they are now (None: no roots offered).
        ``url_mode()``: whether URL mode was advertised and the revision in force has it."""
        self._roots = roots
        self._sampling = sampling
        self._elicitation = elicitation
        self._url_mode = url_mode

    @property
    def methods(self) -> frozenset[str]:
        """The methods a hook was given for."""
        given = {
            "roots/list": self._roots is not None,
            "sampling/createMessage": self._sampling is not None,
            "elicitation/create": self._elicitation is not None,
        }
        return frozenset(method for method, present in given.items() if present)

    async def answer(
        self, method: str, params: Raw | None, context: HookContext, *, stateless: bool = False
    ) -> Any:
        """The result for ``method`` with ``params`` (raw JSON; None as ``{}``).

        Raises :class:`~mcpl_host.RequestError` -32601 when no hook serves ``method``,
        -32602 for an elicitation it cannot serve; ``msgspec.DecodeError`` (a
        ``ValidationError``) when the params do not fit; and what the hook raises.
        ``stateless``: 2026-07-28, where URL mode carries no ``elicitationId``.
        """
        body = params if params is not None else b"{}"
        if method == "roots/list" and self._roots is not None:
            return {"roots": self._roots()}
        if method == "sampling/createMessage" and self._sampling is not None:
            return await self._sampling(
                msgspec.json.decode(body, type=CreateMessageParams), context
            )
        if method == "elicitation/create" and self._elicitation is not None:
            elicit = msgspec.json.decode(body, type=ElicitParams)
            if elicit.mode == "url":
                if not self._url_mode():
                    raise RequestError(
                        INVALID_PARAMS, "URL-mode elicitation is not supported by this host"
                    )
                if elicit.url is None or (elicit.elicitation_id is None and not stateless):
                    raise RequestError(
                        INVALID_PARAMS, "URL-mode elicitation needs url and elicitationId"
                    )
            elif elicit.requested_schema is None:
                raise RequestError(INVALID_PARAMS, "form-mode elicitation needs requestedSchema")
            return await self._elicitation(elicit, context)
        raise RequestError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def handlers(self, context: Callable[[ServerRequest], HookContext]) -> dict[str, Handler]:
        """The server-request handlers of the handshake era, one per hook given."""

        async def handle(request: ServerRequest) -> Any:
            return await self.answer(request.method, request.params, context(request))

        return dict.fromkeys(sorted(self.methods), handle)
