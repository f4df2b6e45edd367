"""Envelope rules: ids echoed exactly, broken envelopes refused as JSON-RPC says,
notifications never answered, unknown methods -32601 (basic#messages and JSON-RPC 2.0).

Every message goes out fenced by a ping (:mod:`.fence`), so a probe sees what answered
it even without a usable id, and a server that died or hung on it fails the rule with
the lines that show it. Messages that may kill the server go to a fresh session (a
new one after each that broke it); the rest borrow one.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from .context import Context
from .fence import dead, fence_request, fenced, refusal, shown, worst
from .rules import Line, Verdict, probe, rule
from .wire import Wire, same_id

REQUESTS: Final = "basic#requests"
MESSAGES: Final = "basic#messages"
LARGEST_SAFE: Final = 9007199254740991  # 2**53 - 1: the largest integer every JSON peer holds


# --- ids echoed ---------------------------------------------------------------------------
STRING_ID = rule(
    "envelope.string-id",
    "a string id is echoed exactly (a numeric string stays a string)",
    revision="2024-11-05",
    section="basic#responses",
)
INTEGER_ID = rule(
    "envelope.integer-id",
    "an integer id is echoed exactly",
    revision="2024-11-05",
    section="basic#responses",
)
LARGE_INTEGER_ID = rule(
    "envelope.large-integer-id",
    "the integer id 9007199254740991 (2^53-1) is echoed exactly",
    revision="2024-11-05",
    section="basic#responses",
)


async def _echo(ctx: Context, rule_id: str, make_id: Any) -> None:
    async with ctx.borrow() as wire:
        id_ = make_id(wire)
        message = fence_request(wire)
        message["id"] = id_
        out = await fenced(ctx, wire, message)
        if dead(ctx, rule_id, out, f"a request with id {shown(id_)}"):
            return
        ids = [r.value.get("id") for r in out.responses if isinstance(r.value, dict)]
        if any(same_id(i, id_) for i in ids):
            ctx.passed(rule_id, f"answered with id {shown(id_)}", out.evidence)
        elif ids:
            ctx.failed(
                rule_id,
                f"answered id {shown(ids[0])} to a request with id {shown(id_)}",
                out.evidence,
            )
        else:
            ctx.failed(rule_id, f"no answer to a request with id {shown(id_)}", out.evidence)


@probe(STRING_ID)
async def string_id(ctx: Context) -> None:
    # A fresh number as a string: a server that turns "12" into 12 is caught.
    await _echo(ctx, STRING_ID, lambda wire: str(wire.next_id() + 100))


@probe(INTEGER_ID)
async def integer_id(ctx: Context) -> None:
    await _echo(ctx, INTEGER_ID, lambda wire: wire.next_id() + 100)


@probe(LARGE_INTEGER_ID)
async def large_integer_id(ctx: Context) -> None:
    await _echo(ctx, LARGE_INTEGER_ID, lambda _wire: LARGEST_SAFE)


# --- broken envelopes, each in a fresh session ----------------------------------------------
NULL_ID = rule(
    "envelope.null-id",
    'a request with "id": null (MCP forbids it) is refused with -32600 and id null',
    revision="2024-11-05",
    section=REQUESTS,
)
FLOAT_ID = rule(
    "envelope.float-id",
    "a request with the id 1.5 (MCP ids are strings or integers) is refused with -32600",
    revision="2024-11-05",
    section=REQUESTS,
)
BOOLEAN_ID = rule(
    "envelope.boolean-id",
    "a request with the id true (no JSON-RPC id is a boolean) is refused with -32600",
    revision="2024-11-05",
    section=REQUESTS,
)
MISSING_METHOD = rule(
    "envelope.missing-method",
    "a message with an id but no method, result or error is answered with -32600",
    revision="2024-11-05",
    section=MESSAGES,
    level="SHOULD",
)
NON_STRING_METHOD = rule(
    "envelope.non-string-method",
    "a request whose method is not a string is answered with -32600 and its id",
    revision="2024-11-05",
    section=MESSAGES,
)
JSONRPC_VERSION = rule(
    "envelope.jsonrpc-version",
    'a request with "jsonrpc": "1.0" is answered with -32600 and its id',
    revision="2024-11-05",
    section=MESSAGES,
)
PARAMS_TYPE = rule(
    "envelope.params-type",
    "a request whose params are an array or a string is answered with -32602 or -32600",
    revision="2024-11-05",
    section=MESSAGES,
)
INVALID_JSON = rule(
    "envelope.invalid-json",
    "a line that is not JSON is answered with -32700 and id null",
    revision="2024-11-05",
    section=MESSAGES,
    level="SHOULD",
)
EMPTY_LINE = rule(
    "envelope.empty-line",
    "an empty line neither ends the server nor gets an answer that is not JSON-RPC",
    revision="2024-11-05",
    section="basic/transports#stdio",
)


@dataclass(frozen=True, slots=True)
class _Case:
    """One broken message and how its refusal is judged: ``codes`` the errors due,
    ``readable_id`` whether the answer must carry the message's id (else null),
    ``result`` the verdict on a server that dispatched it anyway."""

    rule: str
    what: str
    message: Callable[[Wire], Any]
    codes: tuple[int, ...] = (-32600,)
    readable_id: bool = False
    result: Verdict = Verdict.FAIL


def _fence_with(change: dict[str, Any]) -> Callable[[Wire], dict[str, Any]]:
    """The fence's own request with ``change`` applied (an id, a method, a version...)."""
    return lambda wire: {**fence_request(wire), **change}


_BAD_IDS: Final = (
    # A result with id null serves what MCP forbids, but JSON-RPC 2.0 allows: a warning.
    _Case(NULL_ID, "a request with id null", _fence_with({"id": None}), result=Verdict.WARN),
    # The schema types ids as numbers and JSON-RPC 2.0 only discourages fractions, but
    # MCP's text says a string or an integer: serving it is lenient, a warning.
    _Case(FLOAT_ID, "a request with id 1.5", _fence_with({"id": 1.5}), result=Verdict.WARN),
    _Case(BOOLEAN_ID, "a request with id true", _fence_with({"id": True})),
)
_BAD_SHAPES: Final = (
    # Without a method it may be read as a broken response, which gets no answer:
    # hence a SHOULD, and silence warns.
    _Case(
        MISSING_METHOD,
        "a message without a method",
        lambda wire: {"jsonrpc": "2.0", "id": wire.next_id(), "params": {}},
        readable_id=True,
    ),
    _Case(
        NON_STRING_METHOD,
        "a request whose method is 42",
        _fence_with({"method": 42}),
        readable_id=True,
    ),
    _Case(
        JSONRPC_VERSION,
        'a request with "jsonrpc": "1.0"',
        _fence_with({"jsonrpc": "1.0"}),
        readable_id=True,
    ),
    _Case(
        PARAMS_TYPE,
        "a request whose params are an array",
        _fence_with({"params": ["x"]}),
        codes=(-32602, -32600),
        readable_id=True,
    ),
    _Case(
        PARAMS_TYPE,
        "a request whose params are a string",
        _fence_with({"params": "x"}),
        codes=(-32602, -32600),
        readable_id=True,
    ),
    # JSON-RPC 2.0 shows a Parse error answer (-32700, id null) to invalid JSON, though
    # it states no MUST for it; an MCP server that drops the line only warns.
    _Case(
        INVALID_JSON,
        "a line that is not JSON",
        lambda _wire: b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',
        codes=(-32700,),
    ),
)


class _Fresh:
    """Fresh sessions for messages that may kill the server: one serves the probe until
    a message breaks it (a crash, a hang), then the next message gets a new one. So a
    healthy server costs one session for many messages."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._stack = contextlib.AsyncExitStack()
        self._wire: Wire | None = None

    async def __aenter__(self) -> _Fresh:
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._stack.__aexit__(*exc)

    async def get(self) -> Wire:
        """A working session. Raises NoSession when the server will not complete one."""
        wire = self._wire
        if wire is None or wire.broken or wire.closed:
            await self._stack.aclose()
            self._stack = contextlib.AsyncExitStack()
            wire = self._wire = await self._stack.enter_async_context(self._ctx.session())
        return wire


async def _refusals(ctx: Context, cases: tuple[_Case, ...]) -> None:
    """Send each case's message, fenced, and judge each rule once its cases are done."""
    async with _Fresh(ctx) as fresh:
        for rule_id, group in itertools.groupby(cases, key=lambda case: case.rule):
            if not ctx.wants(rule_id):
                continue
            verdicts: list[Verdict] = []
            details: list[str] = []
            evidence: list[Line] = []
            for case in group:
                wire = await fresh.get()
                message = case.message(wire)
                out = await fenced(ctx, wire, message)
                readable = case.readable_id and isinstance(message, dict)
                verdict, detail = refusal(
                    out,
                    case.what,
                    codes=case.codes,
                    id_=message.get("id") if readable else None,
                    result=case.result,
                    version=wire.version,
                    silence=ctx.failure(rule_id),
                )
                verdicts.append(verdict)
                details.append(detail)
                evidence.extend(out.evidence)
            ctx.judge(rule_id, worst(verdicts), "; ".join(details), evidence)


@probe(NULL_ID, FLOAT_ID, BOOLEAN_ID)
async def bad_ids(ctx: Context) -> None:
    await _refusals(ctx, _BAD_IDS)


@probe(MISSING_METHOD, NON_STRING_METHOD, JSONRPC_VERSION, PARAMS_TYPE, INVALID_JSON)
async def bad_shapes(ctx: Context) -> None:
    await _refusals(ctx, _BAD_SHAPES)


@probe(EMPTY_LINE)
async def empty_line(ctx: Context) -> None:
    if ctx.kind == "http":
        ctx.not_applicable(EMPTY_LINE, "HTTP carries each message in a POST of its own: no lines")
        return
    async with ctx.session() as wire:
        out = await fenced(ctx, wire, b"\n")
        if dead(ctx, EMPTY_LINE, out, "an empty line"):
            return
        if out.responses:
            ctx.passed(
                EMPTY_LINE, "answered with a JSON-RPC message, which a client ignores", out.evidence
            )
        else:
            ctx.passed(EMPTY_LINE, "ignored it, and answered the next request", out.evidence)


# --- notifications and unknown methods ---------------------------------------------------------
NOTIFICATION_UNANSWERED = rule(
    "envelope.notification-unanswered",
    "notifications, unknown or known, are never answered",
    revision="2024-11-05",
    section="basic#notifications",
)
UNKNOWN_METHOD = rule(
    "envelope.unknown-method",
    "a request for an unknown method is answered with -32601 and its id",
    revision="2024-11-05",
    section=MESSAGES,
)

_NOTIFICATIONS: Final[tuple[tuple[str, dict[str, Any], str], ...]] = (
    ("notifications/mcpl-host-check", {}, "an unknown notification"),
    # The id was never sent: a request that does not exist must not be answered either.
    (
        "notifications/cancelled",
        {"requestId": "mcpl-host-check-never-sent"},
        "notifications/cancelled for an unknown request",
    ),
)


@probe(NOTIFICATION_UNANSWERED)
async def notification_unanswered(ctx: Context) -> None:
    async with ctx.borrow() as wire:
        for method, params, what in _NOTIFICATIONS:
            out = await fenced(ctx, wire, {"jsonrpc": "2.0", "method": method, "params": params})
            if dead(ctx, NOTIFICATION_UNANSWERED, out, what):
                return
            if out.responses:
                ctx.failed(NOTIFICATION_UNANSWERED, f"answered {what}", wire)
                return
        ctx.passed(NOTIFICATION_UNANSWERED, "answered neither notification", wire)


@probe(UNKNOWN_METHOD)
async def unknown_method(ctx: Context) -> None:
    async with ctx.borrow() as wire:
        message = wire.request("mcpl-host-check/no-such-method", {})
        out = await fenced(ctx, wire, message)
        verdict, detail = refusal(
            out,
            "a request for an unknown method",
            codes=(-32601,),
            id_=message["id"],
            version=wire.version,
        )
        ctx.judge(UNKNOWN_METHOD, verdict, detail, out.evidence)
