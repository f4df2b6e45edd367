"""Envelope rules: ids echoed exactly, broken envelopes refused as JSON-RPC says,
notifications never answered, unknown methods -32601 (basic#messages and JSON-RPC 2.0).

Every message goes out fenced by a ping (:mod:`.fence`), so a probe sees what answered
it even without a usable id, and a server that died or hung on it fails the rule with
the lines that show it. A message that may kill the server goes to a fresh session;
the rest borrow one.
"""

from __future__ import annotations

from typing import Any, Final

from .context import Context
from .fence import dead, fence_request, fenced, refusal, shown, worst
from .rules import RULES, Verdict, probe, rule
from .wire import Wire, same_id

REQUESTS: Final = "basic#requests"
MESSAGES: Final = "basic#messages"
LARGEST_SAFE: Final = 9007199254740991  # 2**53 - 1: the largest integer every JSON peer holds


def _silence(rule_id: str) -> Verdict:
    return Verdict.FAIL if RULES[rule_id].level == "MUST" else Verdict.WARN


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


def _broken(wire: Wire, change: dict[str, Any]) -> dict[str, Any]:
    """The fence's request with ``change`` applied (an id, a method, a version...)."""
    return {**fence_request(wire), **change}


async def _refused(
    ctx: Context,
    rule_id: str,
    what: str,
    change: dict[str, Any],
    *,
    codes: tuple[int, ...] = (-32600,),
    readable_id: bool = False,
    result: Verdict = Verdict.FAIL,
) -> None:
    async with ctx.session() as wire:
        message = _broken(wire, change)
        out = await fenced(ctx, wire, message)
        verdict, detail = refusal(
            out,
            what,
            codes=codes,
            id_=message.get("id") if readable_id else None,
            result=result,
            version=wire.version,
            silence=_silence(rule_id),
        )
        ctx.judge(rule_id, verdict, detail, out.evidence)


@probe(NULL_ID)
async def null_id(ctx: Context) -> None:
    # A result with id null serves what MCP forbids, but JSON-RPC 2.0 allows: a warning.
    await _refused(ctx, NULL_ID, "a request with id null", {"id": None}, result=Verdict.WARN)


@probe(FLOAT_ID)
async def float_id(ctx: Context) -> None:
    # The schema types ids as numbers and JSON-RPC 2.0 only discourages fractions, but
    # MCP's text says a string or integer: serving it is lenient, a warning.
    await _refused(ctx, FLOAT_ID, "a request with id 1.5", {"id": 1.5}, result=Verdict.WARN)


@probe(BOOLEAN_ID)
async def boolean_id(ctx: Context) -> None:
    await _refused(ctx, BOOLEAN_ID, "a request with id true", {"id": True})


@probe(MISSING_METHOD)
async def missing_method(ctx: Context) -> None:
    async with ctx.session() as wire:
        id_ = wire.next_id()
        message = {"jsonrpc": "2.0", "id": id_, "params": {}}
        out = await fenced(ctx, wire, message)
        # Without a method it may be read as a broken response, which gets no answer:
        # hence a SHOULD, and silence warns.
        verdict, detail = refusal(
            out,
            "a message without a method",
            codes=(-32600,),
            id_=id_,
            version=wire.version,
            silence=_silence(MISSING_METHOD),
        )
        ctx.judge(MISSING_METHOD, verdict, detail, out.evidence)


@probe(NON_STRING_METHOD)
async def non_string_method(ctx: Context) -> None:
    await _refused(
        ctx,
        NON_STRING_METHOD,
        "a request whose method is 42",
        {"method": 42},
        readable_id=True,
    )


@probe(JSONRPC_VERSION)
async def jsonrpc_version(ctx: Context) -> None:
    await _refused(
        ctx,
        JSONRPC_VERSION,
        'a request with "jsonrpc": "1.0"',
        {"jsonrpc": "1.0"},
        readable_id=True,
    )


@probe(PARAMS_TYPE)
async def params_type(ctx: Context) -> None:
    verdicts, details = [], []
    async with ctx.session() as wire:
        for params, what in ((["x"], "an array"), ("x", "a string")):
            if wire.broken or wire.closed:
                break
            message = fence_request(wire)
            message["params"] = params
            out = await fenced(ctx, wire, message)
            verdict, detail = refusal(
                out,
                f"a request whose params are {what}",
                codes=(-32602, -32600),
                id_=message["id"],
                version=wire.version,
            )
            verdicts.append(verdict)
            details.append(detail)
        ctx.judge(PARAMS_TYPE, worst(verdicts), "; ".join(details), wire)


@probe(INVALID_JSON)
async def invalid_json(ctx: Context) -> None:
    # JSON-RPC 2.0 shows a Parse error answer (-32700, id null) to invalid JSON, though
    # it states no MUST for it; an MCP server that drops the line only warns.
    async with ctx.session() as wire:
        out = await fenced(ctx, wire, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"')
        verdict, detail = refusal(
            out,
            "a line that is not JSON",
            codes=(-32700,),
            version=wire.version,
            silence=_silence(INVALID_JSON),
        )
        ctx.judge(INVALID_JSON, verdict, detail, out.evidence)


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
