"""Logging rules: ``logging/setLevel`` answered, an unknown level refused, and the level
set honoured (server/utilities/logging). The module is not named ``logging``: that
would shadow the standard library's for the package's own imports."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from .calls import tool_calls
from .context import Context
from .listing import exchange, peer_line
from .rules import Line, probe, rule
from .wire import Received, error_code, shown

LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
UNKNOWN_LEVEL: Final = "loud"

LOGGING = rule(
    "utilities.logging",
    "with the logging capability, logging/setLevel is answered with an empty result",
    revision="2024-11-05",
    section="server/utilities/logging#setting-log-level",
)
LEVEL_FILTER = rule(
    "utilities.log-level-filter",
    "after logging/setLevel, no notifications/message below the level set",
    revision="2024-11-05",
    section="server/utilities/logging#log-levels",
    level="SHOULD",
)
INVALID_LEVEL = rule(
    "utilities.invalid-log-level",
    "logging/setLevel with an unknown level is answered with error -32602",
    revision="2024-11-05",
    section="server/utilities/logging#error-handling",
    level="SHOULD",
)
_RULES: Final = (LOGGING, LEVEL_FILTER, INVALID_LEVEL)


def _empty(answer: dict[str, Any] | None) -> bool:
    result = answer.get("result") if answer is not None else None
    return isinstance(result, dict) and not set(result) - {"_meta"}


def _how(answer: dict[str, Any] | None) -> str:
    """How a setLevel answer that is not ``{}`` went wrong."""
    if answer is None:
        return "was not answered"
    if "error" in answer:
        return "was answered with an error"
    return "was answered with a result other than {}"


def _below(ctx: Context, lines: Iterable[Received], level: str) -> list[Line]:
    """The log messages among ``lines`` at a known level below ``level``."""
    floor = LEVELS.index(level)
    out = []
    for line in lines:
        value = line.value
        if not isinstance(value, dict) or value.get("method") != "notifications/message":
            continue
        params = value.get("params")
        said = params.get("level") if isinstance(params, dict) else None
        if said in LEVELS and LEVELS.index(said) < floor:
            out.append(peer_line(ctx, line))
    return out


@probe(*_RULES)
async def logging_levels(ctx: Context) -> None:
    facts = await ctx.facts()
    why = None
    if facts.version is None:
        why = "2026-07-28 has no logging/setLevel"
    elif "logging" not in facts.capabilities:
        why = "the server does not declare logging"
    if why is not None:
        for rule_id in _RULES:
            ctx.not_applicable(rule_id, why)
        return
    # A fresh session: the level set is the session's, and no other probe's business.
    async with ctx.session() as wire:
        start = wire.mark()
        debug, _ = await exchange(
            wire, wire.request("logging/setLevel", {"level": "debug"}), ctx.timeout
        )
        mark = wire.mark()
        loud, _ = await exchange(
            wire, wire.request("logging/setLevel", {"level": UNKNOWN_LEVEL}), ctx.timeout
        )
        loud_lines = wire.since(mark)
        emergency, _ = await exchange(
            wire, wire.request("logging/setLevel", {"level": "emergency"}), ctx.timeout
        )
        set_lines = wire.since(start)
        # Whatever the server says before answering a ping, once the level is set.
        mark = wire.mark()
        _, after = await exchange(wire, wire.request("ping"), ctx.timeout)
        after_lines = wire.since(mark)
    wrong = [
        f"level {level!r} {_how(answer)}"
        for level, answer in (("debug", debug), ("emergency", emergency))
        if not _empty(answer)
    ]
    if wrong:
        ctx.failed(LOGGING, "; ".join(wrong), set_lines)
    else:
        ctx.passed(LOGGING, "levels 'debug' and 'emergency' each answered {}", set_lines)
    error = loud.get("error") if loud is not None else None
    code = error_code(loud)
    if code == -32602:
        ctx.passed(INVALID_LEVEL, f"level {UNKNOWN_LEVEL!r} refused with -32602", loud_lines)
    elif loud is None:
        ctx.failed(INVALID_LEVEL, f"level {UNKNOWN_LEVEL!r} was not answered", loud_lines)
    elif error is None:
        ctx.failed(INVALID_LEVEL, f"level {UNKNOWN_LEVEL!r} was answered with a result", loud_lines)
    else:
        ctx.failed(
            INVALID_LEVEL, f"level {UNKNOWN_LEVEL!r}: error {shown(code)}, not -32602", loud_lines
        )
    if not _empty(emergency):
        ctx.failed(LEVEL_FILTER, 'setLevel "emergency" was not answered {}: not judged', set_lines)
        return
    below = _below(ctx, after, "emergency")
    during = "after the level was set"
    run = await tool_calls(ctx)
    if run is not None and run.level_set:
        below += _below(ctx, run.received[run.level_from :], "emergency")
        during += f" and during {len(run.calls)} tool calls"
    if below:
        ctx.failed(LEVEL_FILTER, f"{len(below)} messages below emergency {during}", below[:10])
    else:
        ctx.passed(LEVEL_FILTER, f"level emergency: no message below it {during}", after_lines)
