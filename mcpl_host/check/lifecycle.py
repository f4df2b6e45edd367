"""Lifecycle rules: the handshake's answers, what comes before and after it, and how a
stdio server ends (basic/lifecycle)."""

from __future__ import annotations

from typing import Any

from .context import HANDSHAKE_REVISIONS, Context
from .rules import probe, rule

INITIALIZE_NEWEST = rule(
    "lifecycle.initialize-newest",
    "initialize offering the newest revision is answered with a revision, capabilities "
    "and serverInfo",
    revision="2024-11-05",
    section="basic/lifecycle#initialization",
)


def _result_problem(answer: dict[str, Any] | None) -> str | None:
    """Why ``answer`` is not a well-formed InitializeResult (None: it is)."""
    if answer is None:
        return "no answer"
    result = answer.get("result")
    if not isinstance(result, dict):
        return "answered without a result"
    if not isinstance(result.get("protocolVersion"), str):
        return "the result has no protocolVersion string"
    if not isinstance(result.get("capabilities"), dict):
        return "the result has no capabilities object"
    info = result.get("serverInfo")
    if (
        not isinstance(info, dict)
        or not isinstance(info.get("name"), str)
        or not isinstance(info.get("version"), str)
    ):
        return "the result has no serverInfo with a name and a version"
    return None


@probe(INITIALIZE_NEWEST)
async def initialize_newest(ctx: Context) -> None:
    newest = HANDSHAKE_REVISIONS[0]
    async with ctx.connect() as wire:
        answer = await ctx.initialize(wire, newest)
        problem = _result_problem(answer)
        if problem is None:
            assert answer is not None
            chosen = answer["result"]["protocolVersion"]
            ctx.passed(INITIALIZE_NEWEST, f"offered {newest}, answered {chosen}", wire)
        elif answer is None and (await ctx.facts()).modern:
            ctx.not_applicable(INITIALIZE_NEWEST, "a 2026-07-28 server without initialize")
        else:
            ctx.failed(INITIALIZE_NEWEST, f"offered {newest}: {problem}", wire)


PING_AFTER_INITIALIZE = rule(
    "lifecycle.ping-after-initialize",
    "ping after the handshake is answered promptly with an empty result",
    revision="2024-11-05",
    section="basic/utilities/ping#behavior-requirements",
)


@probe(PING_AFTER_INITIALIZE)
async def ping_after_initialize(ctx: Context) -> None:
    if (await ctx.facts()).version is None:
        ctx.not_applicable(PING_AFTER_INITIALIZE, "no handshake: 2026-07-28 has no ping")
        return
    async with ctx.borrow() as wire:
        answer = await wire.call("ping", timeout=ctx.timeout)
        if answer is None:
            wire.broken = True
            ctx.failed(PING_AFTER_INITIALIZE, f"no answer within {ctx.timeout:g} s", wire)
        elif answer.get("result") != {}:
            ctx.failed(PING_AFTER_INITIALIZE, "the answer is not an empty result", wire)
        else:
            ctx.passed(PING_AFTER_INITIALIZE, "answered {}", wire)
