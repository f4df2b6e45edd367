"""The tool calls ``--call`` asks for, made once per run and read by several probes
(progress, logging, structured content).

Calling a tool is the user's choice (``CheckOptions.calls``): nothing else calls one.
The calls run in one fresh session: first ``logging/setLevel`` ``"emergency"`` when the
server declares logging (so any lower message during the calls breaks the level set),
then ``tools/list`` (the tools' outputSchemas), then each call with its own progress
token, its answer awaited within the timeout. Everything received is kept, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import trio

from .context import Context
from .listing import LISTS, exchange, read_list
from .rules import Line
from .wire import MODERN, Received

__all__ = ["Call", "CallRun", "token_for", "tool_calls"]

_KEY: Final = "calls.run"
# The lines kept for the probes that read the run, in bytes: past it, later lines are
# dropped (a server flooding notifications must not cost unbounded memory).
MAX_KEPT_BYTES: Final = 16 * 1024 * 1024
_LOCK: Final = "calls.lock"


def token_for(index: int) -> str:
    return f"mcpl-host-check-call-{index}"


@dataclass(slots=True)
class Call:
    """One call: what was asked, its request id and progress token, and its response
    (None: none within the timeout)."""

    name: str
    arguments: dict[str, Any]
    id: Any
    token: str
    answer: dict[str, Any] | None = None


@dataclass(slots=True)
class CallRun:
    """The calls made, the tools listed (by name), whether the level was set to
    emergency first, every line received (in order) and the transcript."""

    calls: list[Call] = field(default_factory=list)
    tools: dict[str, Any] = field(default_factory=dict)
    tools_problem: str | None = None
    level_set: bool = False
    level_from: int = 0  # the first line of ``received`` after the level was set
    received: list[Received] = field(default_factory=list)
    kept_bytes: int = 0
    evidence: tuple[Line, ...] = ()


async def tool_calls(ctx: Context) -> CallRun | None:
    """The run's calls, made on the first request (None: no call was asked for).
    Raises NoSession when the server gives no session."""
    if not ctx.options.calls:
        return None
    lock = ctx.memo.setdefault(_LOCK, trio.Lock())
    async with lock:
        if _KEY not in ctx.memo:
            ctx.memo[_KEY] = await _make(ctx)
    run: CallRun = ctx.memo[_KEY]
    return run


async def _make(ctx: Context) -> CallRun:
    run = CallRun()
    capabilities = (await ctx.facts()).capabilities
    async with ctx.session() as wire:
        if "logging" in capabilities and wire.version != MODERN:
            request = wire.request("logging/setLevel", {"level": "emergency"})
            answer, lines = await exchange(wire, request, ctx.timeout)
            _keep(run, lines)
            run.level_set = answer is not None and "result" in answer
            run.level_from = len(run.received)
        listing = await read_list(wire, LISTS[0], ctx.timeout)
        run.tools_problem = listing.problem
        for tool in listing.items:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                run.tools.setdefault(tool["name"], tool)
        for index, (name, arguments) in enumerate(ctx.options.calls, 1):
            token = token_for(index)
            params = {"name": name, "arguments": arguments, "_meta": {"progressToken": token}}
            request = wire.request("tools/call", params)
            call = Call(name, arguments, request["id"], token)
            call.answer, lines = await exchange(wire, request, ctx.timeout)
            _keep(run, lines)
            run.calls.append(call)
        run.evidence = wire.since()
    return run


def _keep(run: CallRun, lines: list[Received]) -> None:
    for line in lines:
        if run.kept_bytes + len(line.raw) > MAX_KEPT_BYTES:
            return
        run.kept_bytes += len(line.raw)
        run.received.append(line)
