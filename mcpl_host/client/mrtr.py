"""Multi-round-trip requests (MCP 2026-07-28, ``basic/patterns/mrtr``).

On 2026-07-28 a server never sends the host a request. When ``tools/call``,
``prompts/get`` or ``resources/read`` needs the user, the model or the roots, its result
is ``input_required`` (:func:`mcpl_host.protocol.results.input_required` reads it).
This module runs the rounds: each input request is answered by the same hooks that
answer a handshake-era server's requests (:class:`~mcpl_host.client.hooks.InputHooks`),
one after another in the server's order (they often ask the user: one question at a
time), then the original request goes again, with a new id, this round's
``inputResponses`` and the ``requestState`` byte for byte. Nothing here is cached.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from msgspec import Raw

from ..protocol.errors import ConfigurationError, InputRequestError, LimitExceeded
from ..protocol.results import InputRequired, input_required, retry_params
from .hooks import HookContext, InputHooks

__all__ = ["DEFAULT_MAX_INPUT_REQUESTS", "DEFAULT_MAX_INPUT_ROUNDS", "InputLimits", "resolve"]

# Real flows take one to three rounds (a confirmation, a form, then the answer); the
# official SDKs stop at 10. Each round holds one result and its answers at most.
DEFAULT_MAX_INPUT_ROUNDS: Final = 8
# One round asking for more than a handful of inputs is a server gone wrong: every one
# may be a question to the user.
DEFAULT_MAX_INPUT_REQUESTS: Final = 16
_ENCODER: Final = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class InputLimits:
    """``rounds``: the most retries one call makes; ``requests``: the most entries one
    ``inputRequests`` may hold."""

    rounds: int = DEFAULT_MAX_INPUT_ROUNDS
    requests: int = DEFAULT_MAX_INPUT_REQUESTS

    def __post_init__(self) -> None:
        for name, value in (
            ("max_input_rounds", self.rounds),
            ("max_input_requests", self.requests),
        ):
            if value < 1:
                raise ConfigurationError(f"{name} must be at least 1, not {value}")


Send = Callable[[Any], Awaitable[Raw]]
"""Sends the request once more with these params (a new id each time); its raw result."""


async def resolve(
    first: Raw,
    method: str,
    params: Any,
    send: Send,
    *,
    hooks: InputHooks,
    allowed: frozenset[str],
    context: HookContext,
    limits: InputLimits,
    safe: Callable[[str], str],
) -> Raw:
    """The complete result of ``method``, ``first`` being the answer to ``params``.

    ``allowed``: the methods the revision lets a result ask for. Raises
    :class:`~mcpl_host.ResultDecodeError` for an invalid result,
    :class:`~mcpl_host.InputRequestError` for input the host cannot give,
    :class:`~mcpl_host.LimitExceeded` past ``limits`` (``max_input_rounds``,
    ``max_input_requests``), what ``send`` raises, and what a hook raises (a
    :class:`~mcpl_host.RequestError` of the hook's: the user declined, say).
    """
    server = context.server
    raw = first
    rounds = 0
    while (asked := input_required(raw, method, server=server, safe=safe)) is not None:
        if rounds == limits.rounds:
            raise LimitExceeded(
                f"{method} still asks for input after {rounds} rounds (max_input_rounds)",
                limit="max_input_rounds",
                value=limits.rounds,
                server=server,
            )
        rounds += 1
        if len(asked.requests) > limits.requests:
            raise LimitExceeded(
                f"{method} asks for {len(asked.requests)} inputs in one round "
                f"(max_input_requests {limits.requests})",
                limit="max_input_requests",
                value=limits.requests,
                server=server,
            )
        answers = await _answer(
            asked, method, hooks=hooks, allowed=allowed, context=context, safe=safe
        )
        raw = await send(retry_params(params, answers, asked.state))
    return raw


async def _answer(
    asked: InputRequired,
    method: str,
    *,
    hooks: InputHooks,
    allowed: frozenset[str],
    context: HookContext,
    safe: Callable[[str], str],
) -> dict[str, Raw]:
    answers: dict[str, Raw] = {}
    for key, request in asked.requests.items():
        shown = f"{method} asks for {safe(request.method)!r} (inputRequests key {safe(key)!r})"
        if request.method not in allowed or request.method not in hooks.methods:
            why = "no hook serves it" if request.method in allowed else "no result may ask for it"
            raise InputRequestError(
                f"{shown}: {why}", key=key, method=request.method, server=context.server
            )
        here = HookContext(context.server, context.request_id, context.protocol_version, key)
        try:
            result = await hooks.answer(request.method, request.params, here, stateless=True)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise InputRequestError(
                f"{shown}: its params do not fit: {safe(str(exc))}",
                key=key,
                method=request.method,
                server=context.server,
            ) from None
        try:
            # Encoded now, as a handshake-era answer is: a hook's result JSON cannot carry
            # fails here, naming the hook's request, not as the retry's params.
            answers[key] = Raw(_ENCODER.encode(result))
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            raise TypeError(f"the hook's answer to {request.method} is not JSON: {exc}") from None
    return answers
