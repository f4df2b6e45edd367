"""Batch rules by revision: 2025-03-26 must take JSON-RPC batches (basic#batching) and
answer them per entry; 2025-06-18 removed them, so a batch is refused whole.

Each probe runs in a fresh session on the revision it concerns (a batch may kill a
server that never expected one), fenced by a ping (:mod:`.fence`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, Final

from .context import Context
from .fence import fence_request, fenced, refusal
from .rules import Verdict, probe, rule
from .wire import MODERN, Wire, same_id

BATCHING: Final = "2025-03-26"

ACCEPTED = rule(
    "batches.accepted-2025-03-26",
    "on 2025-03-26 a batch of two pings and a notification is answered by one array "
    "holding the two answers",
    revision=BATCHING,
    section="basic#batching",
)
EMPTY_ARRAY = rule(
    "batches.empty-array",
    "on 2025-03-26 an empty batch ([]) is answered with one -32600",
    revision=BATCHING,
    section="basic#batching",
)
REFUSED = rule(
    "batches.refused",
    "from 2025-06-18 on a batch is refused with one -32600 (id null), no entry handled",
    revision="2025-06-18",
    section="changelog#major-changes",
    # 2025-06-18 removed batching without saying how a server refuses one; JSON-RPC
    # 2.0's answer to what is not a valid request is one -32600 with id null.
    level="SHOULD",
)


@contextlib.asynccontextmanager
async def _batching_session(ctx: Context, rule_id: str) -> AsyncIterator[Wire | None]:
    """A fresh session on 2025-03-26, or None (``rule_id`` judged n/a) when the server
    does not speak it."""
    if BATCHING not in ctx.options.versions:
        ctx.not_applicable(rule_id, f"{BATCHING} is not among the revisions checked")
        yield None
    elif (await ctx.facts()).version is None:
        ctx.not_applicable(rule_id, "a 2026-07-28 server without initialize")
        yield None
    else:
        async with ctx.session(BATCHING) as wire:
            if wire.version != BATCHING:
                why = f"the server answered {BATCHING} with {wire.version}"
                ctx.not_applicable(rule_id, why)
                yield None
            else:
                yield wire


@probe(ACCEPTED)
async def batch_accepted(ctx: Context) -> None:
    async with _batching_session(ctx, ACCEPTED) as wire:
        if wire is None:
            return
        pings = [wire.request("ping"), wire.request("ping")]
        batch = [pings[0], {"jsonrpc": "2.0", "method": "notifications/mcpl-host-check"}, pings[1]]
        out = await fenced(ctx, wire, batch, want=2)
        what = "a batch of two pings and a notification"
        if not out.alive or out.noise:
            verdict, detail = refusal(out, what, codes=())
            ctx.judge(ACCEPTED, verdict, detail, out.evidence)
            return
        arrays = [r.value for r in out.responses if isinstance(r.value, list)]
        singles = [r.value for r in out.responses if isinstance(r.value, dict)]
        ids = [p["id"] for p in pings]
        if len(arrays) == 1 and not singles and _answers_exactly(arrays[0], ids):
            ctx.passed(ACCEPTED, f"answered {what} with one array of the two answers", out.evidence)
        elif not arrays and len(singles) == 2 and _answers_exactly(singles, ids):
            if ctx.kind == "http":
                # Streamable HTTP carries a POST's answers as events of its stream, one
                # message each.
                ctx.passed(ACCEPTED, f"answered {what} with the two answers", out.evidence)
                return
            # JSON-RPC 2.0: the server "should respond with an Array".
            ctx.judge(
                ACCEPTED,
                Verdict.WARN,
                f"answered each ping of {what} on its own line",
                out.evidence,
            )
        elif not out.responses:
            ctx.failed(ACCEPTED, f"no answer to {what}", out.evidence)
        else:
            ctx.failed(ACCEPTED, f"did not answer {what} with the two pings' answers", out.evidence)


def _answers_exactly(answers: list[Any], ids: list[Any]) -> bool:
    """Whether ``answers`` are exactly one result per id, in any order."""
    if len(answers) != len(ids):
        return False
    left = list(ids)
    for answer in answers:
        if not isinstance(answer, dict) or "result" not in answer:
            return False
        match = [i for i in left if same_id(i, answer.get("id"))]
        if not match:
            return False
        left.remove(match[0])
    return True


@probe(EMPTY_ARRAY)
async def batch_empty(ctx: Context) -> None:
    async with _batching_session(ctx, EMPTY_ARRAY) as wire:
        if wire is None:
            return
        out = await fenced(ctx, wire, [])
        # JSON-RPC 2.0: an empty array is not a batch; the answer MUST be one response.
        verdict, detail = refusal(out, "an empty batch", codes=(-32600,), version=wire.version)
        ctx.judge(EMPTY_ARRAY, verdict, detail, out.evidence)


@probe(REFUSED)
async def batch_refused(ctx: Context) -> None:
    facts = await ctx.facts()
    version = facts.version if facts.version is not None else (MODERN if facts.modern else None)
    if version is None:
        ctx.not_applicable(REFUSED, "the server completed no handshake to send a batch in")
        return
    if version < "2025-06-18":
        ctx.not_applicable(REFUSED, f"the newest revision the server takes is {version}")
        return
    async with ctx.session() as wire:
        pings = [fence_request(wire), fence_request(wire)]
        what = "a batch of two requests"
        out = await fenced(ctx, wire, pings, want=2)
        answered = [
            r.value
            for r in out.responses
            if isinstance(r.value, dict) and any(same_id(r.value.get("id"), p["id"]) for p in pings)
        ]
        if (
            out.alive
            and not out.noise
            and (answered or any(isinstance(r.value, list) for r in out.responses))
        ):
            ctx.failed(REFUSED, f"handled the entries of {what} on {version}", out.evidence)
            return
        verdict, detail = refusal(
            out,
            f"{what} on {version}",
            codes=(-32600,),
            version=version,
            silence=Verdict.WARN,
        )
        ctx.judge(REFUSED, verdict, detail, out.evidence)
