"""2026-07-28 rules over HTTP only: the headers that mirror the body, and what a
2026-07-28-only server does with the handshake era's HTTP (basic/transports/
streamable-http)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast

from .context import Context
from .http import encode, http_only, replaced, status_of, without
from .modern import (
    HEADER_MISMATCH,
    UNSUPPORTED_VERSION,
    ask,
    described,
    list_method,
    speaks_modern,
)
from .rules import probe, rule
from .wire import MODERN, error_code

if TYPE_CHECKING:
    from .httpwire import HttpWire


# --- headers (HTTP) -------------------------------------------------------------------------
HEADERS = rule(
    "modern.headers",
    "on HTTP, MCP-Protocol-Version, Mcp-Method or Mcp-Name that disagrees with the body, "
    "or a missing Mcp-Method, is answered 400 with -32020 (HeaderMismatch)",
    revision="2026-07-28",
    section="basic/transports/streamable-http#server-validation",
)


_OTHER_NAME: Final = "mcpl-host-check-other"


def _named_request(discover: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A request that carries Mcp-Name and does nothing (it names what no server has):
    prompts/get or resources/read, whichever the server declares; None if neither."""
    declared = discover.get("capabilities")
    declared = declared if isinstance(declared, dict) else {}
    if "prompts" in declared:
        return "prompts/get", {"name": "mcpl-host-check-none"}
    if "resources" in declared:
        return "resources/read", {"uri": "mcpl-host-check://none"}
    return None


@probe(HEADERS)
async def headers(ctx: Context) -> None:
    if not await speaks_modern(ctx, HEADERS) or not await http_only(ctx, HEADERS):
        return
    method = await list_method(ctx)
    discover = (await ctx.facts()).discover or {}
    listed = discover.get("supportedVersions")
    supported = [v for v in listed if isinstance(v, str)] if isinstance(listed, list) else []
    # Another version the server speaks, so that only the mismatch is wrong.
    other = next((v for v in supported if v != MODERN), "2025-11-25")
    other_method = "prompts/list" if method != "prompts/list" else "tools/list"
    named = _named_request(discover)
    async with ctx.connect() as plain:
        wire = cast("HttpWire", plain)
        wire.version = MODERN
        problems = []
        cases: list[tuple[str, str, dict[str, Any], str, str | None]] = [
            (f"MCP-Protocol-Version: {other}", method, {}, "MCP-Protocol-Version", other),
            (f"Mcp-Method: {other_method}", method, {}, "Mcp-Method", other_method),
            ("no Mcp-Method", method, {}, "Mcp-Method", None),
        ]
        if named is not None:
            # A name the server does not have, in the body and (another) in the header:
            # a server that validates first has nothing to do, one that does not finds
            # nothing.
            cases.append((f"Mcp-Name: {_OTHER_NAME}", *named, "Mcp-Name", _OTHER_NAME))
        for what, asked, params, name, value in cases:
            message = wire.request(asked, params)
            sent = wire.headers(encode(message))
            sent = without(sent, name) if value is None else replaced(sent, name, value)
            wire.note("·", f"sent with {what}")
            status, answer = await ask(ctx, wire, message, sent)
            code = error_code(answer)
            unsupported = name == "MCP-Protocol-Version" and other not in supported
            if status == 400 and (
                code == HEADER_MISMATCH or (unsupported and code == UNSUPPORTED_VERSION)
            ):
                continue
            problems.append(f"{what}: {described(status, answer)}")
        if problems:
            ctx.failed(HEADERS, "; ".join(problems), wire)
        else:
            ctx.passed(HEADERS, "each answered 400 with -32020", wire)


# --- what a 2026-07-28-only server does with the handshake era's HTTP ------------------------
LEGACY_HTTP = rule(
    "modern.legacy-http",
    "a 2026-07-28-only HTTP server answers GET and DELETE with 405 and mints no session ids",
    revision="2026-07-28",
    section="basic/transports/streamable-http#earlier-streamable-http-revisions",
    level="SHOULD",
)


@probe(LEGACY_HTTP)
async def legacy_http(ctx: Context) -> None:
    if not await speaks_modern(ctx, LEGACY_HTTP) or not await http_only(ctx, LEGACY_HTTP):
        return
    if (await ctx.facts()).version is not None:
        ctx.not_applicable(LEGACY_HTTP, "a dual-era server: the handshake era has GET and DELETE")
        return
    async with ctx.connect() as plain:
        wire = cast("HttpWire", plain)
        wire.version = MODERN
        message = wire.request("server/discover", {})
        line = encode(message)
        headers = {**wire.headers(line), "Mcp-Session-Id": "mcpl-host-check-none"}
        wire.note("·", "sent with Mcp-Session-Id: mcpl-host-check-none")
        posted = await wire.http_request("POST", headers, line)
        problems = []
        if posted is not None and "mcp-session-id" in posted.posted.headers:
            problems.append("the answer to a POST carries an Mcp-Session-Id")
        for verb in ("GET", "DELETE"):
            sent = wire.headers()
            if verb == "GET":
                sent = replaced(sent, "Accept", "text/event-stream")
            done = await wire.http_request(
                verb,
                sent,
                wait=ctx.timeout,
                until=lambda _events: True,
            )
            if done is None or done.posted.status != 405:
                problems.append(f"{verb}: {status_of(done)}, not 405")
        if problems:
            ctx.failed(LEGACY_HTTP, "; ".join(problems), wire)
        else:
            ctx.passed(LEGACY_HTTP, "GET and DELETE answered 405, no session id minted", wire)
