"""HTTP rules, part two: sessions (``Mcp-Session-Id``, DELETE) and the
``MCP-Protocol-Version`` header of the handshake era (basic/transports, 2025-03-26 to
2025-11-25). A 2026-07-28-only server has neither: these rules are n/a on it."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, cast

from .context import Context
from .http import answer_in, encode, http_only, replaced, status_of, without
from .rules import Verdict, probe, rule
from .wire import shown

if TYPE_CHECKING:
    from .httpwire import HttpWire

SESSION_ID = rule(
    "http.session-id",
    "a session id the server assigns holds only visible ASCII (0x21 to 0x7E)",
    revision="2025-03-26",
    section="basic/transports#session-management",
)
SESSION_REQUIRED = rule(
    "http.session-required",
    "a server that requires the session id it assigned answers a request without it "
    "with 400 Bad Request",
    revision="2025-03-26",
    section="basic/transports#session-management",
    level="SHOULD",
)
SESSION_UNKNOWN = rule(
    "http.session-unknown",
    "a request with a session id the server does not know is answered 404 Not Found",
    revision="2025-03-26",
    section="basic/transports#session-management",
)
DELETE = rule(
    "http.delete",
    "DELETE with the session id ends the session: a request in it afterwards is "
    "answered 404 (a 405 to the DELETE means clients may not end sessions)",
    revision="2025-03-26",
    section="basic/transports#session-management",
)
VERSION_HEADER = rule(
    "http.protocol-version-header",
    "a request with an invalid MCP-Protocol-Version header (1999-01-01) is answered "
    "400 Bad Request",
    revision="2025-06-18",
    section="basic/transports#protocol-version-header",
)
VERSION_ABSENT = rule(
    "http.protocol-version-absent",
    "a request without MCP-Protocol-Version is served (the server assumes 2025-03-26 or "
    "the negotiated revision)",
    revision="2025-06-18",
    section="basic/transports#protocol-version-header",
    level="SHOULD",
)


def _visible_ascii(text: str) -> bool:
    return bool(text) and all(0x21 <= ord(c) <= 0x7E for c in text)


async def _handshake_era(ctx: Context, *rule_ids: str) -> bool:
    """True when the server completes a handshake; otherwise ``rule_ids`` are n/a."""
    if (await ctx.facts()).version is not None:
        return True
    for rule_id in rule_ids:
        ctx.not_applicable(rule_id, "a 2026-07-28-only server: no sessions, no handshake")
    return False


@probe(SESSION_ID, SESSION_REQUIRED, SESSION_UNKNOWN)
async def session_id(ctx: Context) -> None:
    rules = (SESSION_ID, SESSION_REQUIRED, SESSION_UNKNOWN)
    if not await http_only(ctx, *rules) or not await _handshake_era(ctx, *rules):
        return
    async with ctx.session() as plain:
        wire = cast("HttpWire", plain)
        assigned = wire.session_id
        if assigned is None:
            for rule_id in rules:
                ctx.not_applicable(rule_id, "initialize's answer carries no Mcp-Session-Id")
            return
        if _visible_ascii(assigned):
            ctx.passed(
                SESSION_ID, f"a session id of {len(assigned)} visible ASCII characters", wire
            )
        else:
            ctx.failed(SESSION_ID, "the session id holds characters outside 0x21 to 0x7E", wire)
        message = wire.request("ping")
        line = encode(message)
        mark = wire.mark()
        wire.note("·", "sent without Mcp-Session-Id")
        done = await wire.http_request("POST", without(wire.headers(line), "Mcp-Session-Id"), line)
        evidence = wire.since(mark)
        if done is not None and done.posted.status == 400:
            ctx.passed(SESSION_REQUIRED, "answered 400", evidence)
        elif answer_in(done, message["id"]) is not None:
            # "Servers that require a session ID SHOULD respond ... with HTTP 400": this
            # one serves without it, so it does not require one.
            ctx.judge(
                SESSION_REQUIRED,
                Verdict.NA,
                "the server serves a request without its session id: it does not require one",
                evidence,
            )
        else:
            ctx.failed(SESSION_REQUIRED, f"answered {status_of(done)}, not 400", evidence)
        message = wire.request("ping")
        line = encode(message)
        mark = wire.mark()
        unknown = "mcpl-host-check-" + secrets.token_hex(8)
        wire.note("·", f"sent with Mcp-Session-Id: {unknown}")
        done = await wire.http_request(
            "POST", replaced(wire.headers(line), "Mcp-Session-Id", unknown), line
        )
        evidence = wire.since(mark)
        if done is not None and done.posted.status == 404:
            ctx.passed(SESSION_UNKNOWN, "answered 404", evidence)
        else:
            ctx.failed(SESSION_UNKNOWN, f"answered {status_of(done)}, not 404", evidence)


@probe(DELETE)
async def delete(ctx: Context) -> None:
    if not await http_only(ctx, DELETE) or not await _handshake_era(ctx, DELETE):
        return
    async with ctx.session() as plain:
        wire = cast("HttpWire", plain)
        if wire.session_id is None:
            ctx.not_applicable(DELETE, "initialize's answer carries no Mcp-Session-Id")
            return
        done = await wire.http_request("DELETE", wire.headers())
        if done is not None and done.posted.status == 405:
            ctx.not_applicable(
                DELETE, "the server answers DELETE 405: clients may not end sessions"
            )
            return
        if done is None or not 200 <= done.posted.status < 300:
            ctx.failed(DELETE, f"DELETE was answered {status_of(done)}", wire)
            return
        message = wire.request("ping")
        line = encode(message)
        after = await wire.http_request("POST", wire.headers(line), line)
        if after is not None and after.posted.status == 404:
            ctx.passed(DELETE, "after DELETE, the session's requests are answered 404", wire)
        else:
            ctx.failed(
                DELETE, f"after DELETE, a request in the session got {status_of(after)}", wire
            )


@probe(VERSION_HEADER, VERSION_ABSENT)
async def version_header(ctx: Context) -> None:
    rules = (VERSION_HEADER, VERSION_ABSENT)
    if not await http_only(ctx, *rules) or not await _handshake_era(ctx, *rules):
        return
    version = (await ctx.facts()).version
    assert version is not None
    if version < "2025-06-18":
        for rule_id in rules:
            ctx.not_applicable(rule_id, f"the server speaks {shown(version)}, before the header")
        return
    async with ctx.borrow() as plain:
        wire = cast("HttpWire", plain)
        message = wire.request("ping")
        line = encode(message)
        mark = wire.mark()
        wire.note("·", "sent with MCP-Protocol-Version: 1999-01-01")
        done = await wire.http_request(
            "POST", replaced(wire.headers(line), "MCP-Protocol-Version", "1999-01-01"), line
        )
        evidence = wire.since(mark)
        if done is not None and done.posted.status == 400:
            ctx.passed(VERSION_HEADER, "answered 400", evidence)
        else:
            ctx.failed(VERSION_HEADER, f"answered {status_of(done)}, not 400", evidence)
        message = wire.request("ping")
        line = encode(message)
        mark = wire.mark()
        wire.note("·", "sent without MCP-Protocol-Version")
        done = await wire.http_request(
            "POST", without(wire.headers(line), "MCP-Protocol-Version"), line
        )
        evidence = wire.since(mark)
        answer = answer_in(done, message["id"])
        if answer is not None and "result" in answer:
            ctx.passed(VERSION_ABSENT, "served", evidence)
        else:
            ctx.failed(VERSION_ABSENT, f"not served: {status_of(done)}", evidence)
