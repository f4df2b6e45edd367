"""Utilities rules: cancellation, progress and pagination (basic/utilities,
server/utilities/pagination). Logging and completion are in :mod:`.logging_rules` and
:mod:`.completion`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from .calls import tool_calls
from .context import Context
from .listing import declared_lists, exchange, peer_line, read_list
from .rules import Line, Verdict, probe, rule
from .wire import MODERN, Received, Wire, error_code, is_response, same_id, shown

# How long after the ping's answer a late answer to a notification is still awaited:
# the server saw the notification before the ping, so anything it says about it is due.
GRACE: Final = 0.3
NEVER_SENT: Final = "mcpl-host-check-never-sent"
INVALID_CURSOR: Final = "mcpl-host-check-invalid"

CANCELLATION = rule(
    "utilities.cancellation",
    "notifications/cancelled is never answered, and the server works on after it (for a "
    "request in flight, for one never sent, and for a tool call named with --call)",
    revision="2024-11-05",
    section="basic/utilities/cancellation#behavior-requirements",
)


async def settle(ctx: Context, wire: Wire, allowed: Sequence[Any]) -> tuple[list[Received], bool]:
    """After notifications: a ping (``server/discover`` on 2026-07-28), read until its
    answer and :data:`GRACE` more. Returns the responses to anything but ``allowed``
    ids and the ping (answers to the notifications), and whether the ping was answered.
    Costs one round trip, not a timeout, on a server that stays silent as it should."""
    modern = wire.version == MODERN
    ping = wire.request("server/discover" if modern else "ping", {} if modern else None)
    pong, lines = await exchange(wire, ping, ctx.timeout)
    answered = pong is not None
    if answered:
        lines += await wire.received_within(GRACE)
    strays = [
        line
        for line in lines
        if is_response(line.value)
        and not wire.is_refusal(line)
        and not any(same_id(line.value.get("id"), a) for a in (*allowed, ping["id"]))
    ]
    return strays, answered


def _first_list_method(capabilities: dict[str, Any]) -> str | None:
    kinds = declared_lists(capabilities)
    return kinds[0].method if kinds else None


@probe(CANCELLATION)
async def cancellation(ctx: Context) -> None:
    facts = await ctx.facts()
    method = _first_list_method(facts.capabilities)
    if facts.version is None and ctx.kind == "http":
        ctx.not_applicable(
            CANCELLATION,
            "2026-07-28 over Streamable HTTP has no client notifications: closing the "
            "response stream is the cancellation",
        )
        return
    if method is None and facts.version is None:
        ctx.not_applicable(CANCELLATION, "a 2026-07-28 server with no list to request")
        return
    # A fresh session: a server a cancellation breaks must not take others' with it.
    async with ctx.session() as wire:
        request = wire.request(method or "ping", {} if method else None)
        await wire.send(request)
        await wire.notify(
            "notifications/cancelled", {"requestId": request["id"], "reason": "check"}
        )
        await wire.notify("notifications/cancelled", {"requestId": NEVER_SENT, "reason": "check"})
        strays, alive = await settle(ctx, wire, [request["id"]])
        what = f"{request['method']} id {request['id']} and an id never sent"
        if strays:
            ctx.failed(CANCELLATION, f"answered a cancellation (of {what})", wire)
            return
        if not alive:
            ctx.failed(CANCELLATION, f"no longer answers after cancelling {what}", wire)
            return
        detail = f"cancelled {what}: neither cancellation answered, the server still answers"
        if ctx.options.calls:
            name, arguments = ctx.options.calls[0]
            call = wire.request("tools/call", {"name": name, "arguments": arguments})
            await wire.send(call)
            await wire.notify(
                "notifications/cancelled", {"requestId": call["id"], "reason": "check"}
            )
            strays, alive = await settle(ctx, wire, [call["id"]])
            if strays:
                ctx.failed(CANCELLATION, f"answered the cancellation of tool {name}'s call", wire)
                return
            if not alive:
                # A server may ignore a cancellation and finish the tool first: busy, not
                # broken, for as long as the tool the user chose takes.
                busy = f"no answer to a ping within {ctx.timeout:g} s after cancelling tool "
                busy += f"{name}: it may still be running the tool"
                ctx.judge(CANCELLATION, Verdict.WARN, busy, wire)
                return
            detail += f"; likewise for tool {name}'s call"
        ctx.passed(CANCELLATION, detail, wire)


PROGRESS = rule(
    "utilities.progress",
    "progress notifications carry a token of a request in flight, and their progress rises",
    revision="2024-11-05",
    section="basic/utilities/progress#behavior-requirements",
)


class ProgressWatch:
    """Reads received lines in order against the tokens in flight; collects problems
    and the progress lines (the evidence)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.active: list[Any] = []
        self.last: list[tuple[Any, float]] = []  # (token, last progress), tokens not hashed
        self.problems: list[str] = []
        self.lines: list[Line] = []

    def start(self, token: Any) -> None:
        self.active.append(token)

    def end(self, token: Any) -> None:
        self.active = [t for t in self.active if not same_id(t, token)]

    def feed(self, lines: Iterable[Received]) -> None:
        for line in lines:
            value = line.value
            if not isinstance(value, dict) or value.get("method") != "notifications/progress":
                continue
            self.lines.append(peer_line(self.ctx, line))
            problem = self._problem(value.get("params"))
            if problem is not None and len(self.problems) < 10:
                self.problems.append(problem)

    def _problem(self, params: Any) -> str | None:
        if not isinstance(params, dict):
            return "a progress notification without params"
        token, progress = params.get("progressToken"), params.get("progress")
        if not any(same_id(token, t) for t in self.active):
            return f"progress for token {shown(token)}, not one of a request in flight"
        if isinstance(progress, bool) or not isinstance(progress, int | float):
            return f"progress {shown(progress)} for {shown(token)} is not a number"
        for index, (seen, before) in enumerate(self.last):
            if same_id(seen, token):
                if progress <= before:
                    return f"progress for {shown(token)} went from {before} to {progress}"
                self.last[index] = (seen, progress)
                return None
        self.last.append((token, progress))
        return None


@probe(PROGRESS)
async def progress(ctx: Context) -> None:
    facts = await ctx.facts()
    watch = ProgressWatch(ctx)
    sent = 0
    async with ctx.borrow() as wire:
        for index, kind in enumerate(declared_lists(facts.capabilities)):
            # A string token and an integer one: both are the spec's, echoed as given.
            token: Any = f"mcpl-host-check-progress-{index}" if index % 2 == 0 else 7000 + index
            watch.start(token)
            params = {"_meta": {"progressToken": token}}
            _, lines = await exchange(wire, wire.request(kind.method, params), ctx.timeout)
            watch.feed(lines)
            watch.end(token)
            sent += 1
        evidence = list(wire.since())
    run = await tool_calls(ctx)
    if run is not None:
        for call in run.calls:
            watch.start(call.token)
        # The calls' lines in order: a token ends with its own call's answer.
        for line in run.received:
            watch.feed([line])
            for call in run.calls:
                if is_response(line.value, call.id):
                    watch.end(call.token)
        sent += len(run.calls)
        evidence += run.evidence
    if watch.problems:
        ctx.failed(PROGRESS, "; ".join(watch.problems), watch.lines or evidence)
    elif not watch.lines:
        ctx.not_applicable(
            PROGRESS,
            f"the server sent no progress notification (to {sent} requests with a token)",
        )
    else:
        ctx.passed(
            PROGRESS,
            f"{len(watch.lines)} progress notifications, each for a request in flight, rising",
            watch.lines,
        )


PAGINATION = rule(
    "utilities.pagination",
    "every declared list followed through nextCursor ends, without a repeated cursor or "
    "an item listed twice",
    revision="2024-11-05",
    section="server/utilities/pagination#response-format",
)
INVALID_CURSOR_RULE = rule(
    "utilities.invalid-cursor",
    "a list request with an invalid cursor is answered with error -32602",
    revision="2024-11-05",
    section="server/utilities/pagination#error-handling",
    level="SHOULD",
)


@probe(PAGINATION, INVALID_CURSOR_RULE)
async def pagination(ctx: Context) -> None:
    kinds = declared_lists((await ctx.facts()).capabilities)
    if not kinds:
        why = "the server declares no tools, resources or prompts"
        ctx.not_applicable(PAGINATION, why)
        ctx.not_applicable(INVALID_CURSOR_RULE, why)
        return
    async with ctx.borrow() as wire:
        problems: list[str] = []
        unsettled: list[str] = []
        evidence: list[Line] = []
        pages = 0
        for kind in kinds:
            listing = await read_list(wire, kind, ctx.timeout)
            pages += listing.pages
            if listing.problem is not None:
                (unsettled if listing.bounded else problems).append(listing.problem)
            elif listing.duplicates:
                twice = ", ".join(shown(d, 40) for d in listing.duplicates)
                problems.append(f"{kind.method} lists {twice} twice")
            if listing.problem is not None or listing.duplicates or not evidence:
                evidence += listing.evidence
        if problems:
            ctx.failed(PAGINATION, "; ".join(problems), evidence)
        elif unsettled:
            ctx.judge(PAGINATION, Verdict.WARN, "; ".join(unsettled), evidence)
        else:
            names = ", ".join(k.method for k in kinds)
            ctx.passed(
                PAGINATION, f"{names}: {pages} pages, each list ends, no duplicate", evidence
            )
        mark = wire.mark()
        request = wire.request(kinds[0].method, {"cursor": INVALID_CURSOR})
        answer, _ = await exchange(wire, request, ctx.timeout)
        shown_cursor = f"{kinds[0].method} with cursor {INVALID_CURSOR!r}"
        code = error_code(answer)
        if answer is None:
            wire.broken = True
            ctx.failed(INVALID_CURSOR_RULE, f"{shown_cursor} was not answered", wire.since(mark))
        elif code == -32602:
            ctx.passed(INVALID_CURSOR_RULE, f"{shown_cursor}: error -32602", wire.since(mark))
        elif "error" in answer:
            ctx.failed(
                INVALID_CURSOR_RULE,
                f"{shown_cursor}: error {shown(code)}, not -32602",
                wire.since(mark),
            )
        else:
            ctx.failed(
                INVALID_CURSOR_RULE, f"{shown_cursor} was answered with a result", wire.since(mark)
            )
