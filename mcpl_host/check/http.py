"""HTTP rules, part one: what a POST is answered with, Accept, and Origin (Streamable
HTTP, basic/transports from 2025-03-26; basic/transports/streamable-http on 2026-07-28).

Every HTTP probe sends its requests with :meth:`~.httpwire.HttpWire.http_request`, headers
spelled out, so the status and content type of each answer are seen as they were; the
target's own headers (authorization) go along on every one, from ``wire.headers()``.
The rules are n/a on other transports. The helpers here serve :mod:`.http_session` and
:mod:`.http_stream` too.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

import msgspec

from .context import Context, Facts
from .rules import probe, rule
from .wire import CLIENT_INFO, MODERN, Wire, is_response, shown

if TYPE_CHECKING:
    from .httpwire import Exchange, HttpWire

_ENCODER: Final = msgspec.json.Encoder()
ATTACKER_ORIGIN: Final = "http://attacker.example"


# --- shared by the HTTP probes ----------------------------------------------------------
async def http_only(ctx: Context, *rule_ids: str) -> bool:
    """True on an HTTP target; otherwise every rule of ``rule_ids`` is n/a."""
    if ctx.kind == "http":
        return True
    for rule_id in rule_ids:
        ctx.not_applicable(rule_id, f"an HTTP rule: the target is {ctx.kind}")
    return False


def encode(message: Any) -> bytes:
    return _ENCODER.encode(message)


def answer_in(exchange: Exchange | None, id_: Any) -> dict[str, Any] | None:
    """The response with ``id_`` among what ``exchange`` carried (None: none)."""
    if exchange is None:
        return None
    return next((m for m in exchange.messages() if is_response(m, id_)), None)


def status_of(exchange: Exchange | None) -> str:
    return "no HTTP answer" if exchange is None else f"HTTP {exchange.posted.status}"


def without(headers: Mapping[str, str], name: str) -> dict[str, str]:
    """``headers`` less ``name`` (any case)."""
    return {k: v for k, v in headers.items() if k.lower() != name.lower()}


def replaced(headers: Mapping[str, str], name: str, value: str) -> dict[str, str]:
    return {**without(headers, name), name: value}


@contextlib.asynccontextmanager
async def request_line(ctx: Context, facts: Facts) -> AsyncIterator[tuple[HttpWire, bytes, Any]]:
    """A wire and a harmless request for the HTTP probes that only need one answered:
    ``ping`` on a borrowed handshake-era session, or ``server/discover`` on a fresh
    2026-07-28 connection. Yields the wire, the line and its id."""
    if facts.version is not None:
        async with ctx.borrow() as wire:
            message = wire.request("ping")
            yield cast("HttpWire", wire), encode(message), message["id"]
    else:
        async with ctx.connect() as wire:
            wire.version = MODERN
            message = wire.request("server/discover", {})
            yield cast("HttpWire", wire), encode(message), message["id"]


# --- content types ----------------------------------------------------------------------
CONTENT_TYPE = rule(
    "http.content-type",
    "a POSTed request is answered with Content-Type application/json or "
    "text/event-stream, carrying its JSON-RPC response",
    revision="2025-03-26",
    section="basic/transports#sending-messages-to-the-server",
)
NOTIFICATION_202 = rule(
    "http.notification-202",
    "a POSTed notification the server accepts is answered 202 Accepted with no body",
    revision="2025-03-26",
    section="basic/transports#sending-messages-to-the-server",
)


@probe(CONTENT_TYPE, NOTIFICATION_202)
async def content_type(ctx: Context) -> None:
    if not await http_only(ctx, CONTENT_TYPE, NOTIFICATION_202):
        return
    facts = await ctx.facts()
    async with ctx.connect() as plain:
        wire = cast("HttpWire", plain)
        if facts.version is not None:
            message = wire.request(
                "initialize",
                {"protocolVersion": facts.version, "capabilities": {}, "clientInfo": CLIENT_INFO},
            )
            notification: dict[str, Any] = {
                "jsonrpc": "2.0",
                "method": "notifications/initialized",
            }
        else:
            wire.version = MODERN
            message = wire.request("server/discover", {})
            # 2026-07-28 defines no client notification over HTTP; this one names no
            # request, so a server that accepts it has nothing to do.
            notification = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "mcpl-host-check-none"},
            }
        line = encode(message)
        done = await wire.http_request("POST", wire.headers(line), line)
        _judge_content_type(ctx, wire, done, message["id"])
        if done is not None and facts.version is not None:
            session = done.posted.headers.get("mcp-session-id")
            wire.session_id = session
            wire.version = facts.version
        line = encode(notification)
        mark = wire.mark()
        note = await wire.http_request("POST", wire.headers(line), line)
        _judge_notification(ctx, wire, note, mark, modern=facts.version is None)
        if wire.session_id is not None:
            await wire.http_request("DELETE", wire.headers())  # leave no session behind


def _judge_content_type(ctx: Context, wire: Wire, done: Exchange | None, id_: Any) -> None:
    if done is None:
        ctx.failed(CONTENT_TYPE, "the POST got no HTTP answer", wire)
        return
    kind = done.posted.content_type
    if done.posted.status != 200:
        ctx.failed(CONTENT_TYPE, f"the request was answered HTTP {done.posted.status}", wire)
    elif kind not in ("application/json", "text/event-stream"):
        ctx.failed(CONTENT_TYPE, f"the request was answered with {shown(kind or None)}", wire)
    elif answer_in(done, id_) is None:
        ctx.failed(CONTENT_TYPE, f"the {kind} answer holds no response with id {id_}", wire)
    else:
        ctx.passed(CONTENT_TYPE, f"answered 200, {kind}, with the response", wire)


def _judge_notification(
    ctx: Context, wire: Wire, done: Exchange | None, mark: int, *, modern: bool
) -> None:
    evidence = wire.since(mark)
    if done is None:
        ctx.failed(NOTIFICATION_202, "the POST got no HTTP answer", evidence)
        return
    status = done.posted.status
    has_body = bool(done.body or done.events)
    if status == 202 and not has_body:
        ctx.passed(NOTIFICATION_202, "answered 202 with no body", evidence)
    elif modern and 400 <= status < 500:
        ctx.passed(NOTIFICATION_202, f"refused with HTTP {status}, as 2026-07-28 allows", evidence)
    elif status == 202:
        ctx.failed(NOTIFICATION_202, "answered 202 with a body", evidence)
    else:
        ctx.failed(NOTIFICATION_202, f"answered HTTP {status}, not 202", evidence)


# --- Accept -----------------------------------------------------------------------------
# The spec binds the client (its Accept MUST list both types) and says nothing of a
# server that gets less; HTTP (RFC 9110, 12.5.1) lets a server refuse with 406 or
# disregard Accept. Refusing is what the SDKs do and what keeps a broken client from
# being served a type it cannot read: served anyway warns, a refusal passes.
ACCEPT = rule(
    "http.accept",
    "a POST whose Accept lists neither application/json nor text/event-stream is "
    "refused (406 Not Acceptable), not served",
    revision="2025-03-26",
    section="basic/transports#sending-messages-to-the-server",
    level="SHOULD",
)


@probe(ACCEPT)
async def accept(ctx: Context) -> None:
    if not await http_only(ctx, ACCEPT):
        return
    async with request_line(ctx, await ctx.facts()) as (wire, line, id_):
        mark = wire.mark()
        wire.note("·", "sent with Accept: text/html")
        done = await wire.http_request(
            "POST", replaced(wire.headers(line), "Accept", "text/html"), line
        )
        evidence = wire.since(mark)
        if done is not None and 400 <= done.posted.status < 500:
            ctx.passed(ACCEPT, f"refused with HTTP {done.posted.status}", evidence)
        elif done is not None and answer_in(done, id_) is not None:
            ctx.failed(ACCEPT, f"served anyway ({status_of(done)})", evidence)
        else:
            ctx.failed(
                ACCEPT, f"neither refused with a 4xx nor served: {status_of(done)}", evidence
            )


# --- Origin -----------------------------------------------------------------------------
ORIGIN = rule(
    "http.origin",
    "a request with a foreign Origin (http://attacker.example) is refused, not served "
    "(DNS-rebinding protection)",
    revision="2025-03-26",
    section="basic/transports#security-warning",
)
ORIGIN_403 = rule(
    "http.origin-403",
    "a request with an invalid Origin is refused with 403 Forbidden",
    revision="2025-11-25",
    section="basic/transports#security-warning",
)


@probe(ORIGIN, ORIGIN_403)
async def origin(ctx: Context) -> None:
    if not await http_only(ctx, ORIGIN, ORIGIN_403):
        return
    facts = await ctx.facts()
    # 403 is named from 2025-11-25 on (and on 2026-07-28); before, "validate" only.
    names_403 = facts.version is None or facts.version >= "2025-11-25"
    async with request_line(ctx, facts) as (wire, line, id_):
        mark = wire.mark()
        wire.note("·", f"sent with Origin: {ATTACKER_ORIGIN}")
        headers = replaced(wire.headers(line), "Origin", ATTACKER_ORIGIN)
        done = await wire.http_request("POST", headers, line)
        evidence = wire.since(mark)
        served = done is not None and answer_in(done, id_) is not None
        refused = done is not None and 400 <= done.posted.status < 500 and not served
        if refused:
            assert done is not None
            ctx.passed(ORIGIN, f"refused with HTTP {done.posted.status}", evidence)
        elif served:
            ctx.failed(ORIGIN, f"served a request from {ATTACKER_ORIGIN}", evidence)
        else:
            ctx.failed(
                ORIGIN, f"neither refused with a 4xx nor served: {status_of(done)}", evidence
            )
        if not names_403:
            ctx.not_applicable(
                ORIGIN_403, f"the server speaks {shown(facts.version)}, which names no status"
            )
        elif not refused:
            ctx.not_applicable(ORIGIN_403, "the request was not refused (see http.origin)")
        elif done is not None and done.posted.status == 403:
            ctx.passed(ORIGIN_403, "refused with 403", evidence)
        else:
            ctx.failed(ORIGIN_403, f"refused with {status_of(done)}, not 403", evidence)
