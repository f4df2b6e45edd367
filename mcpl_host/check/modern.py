"""2026-07-28 rules: ``server/discover``, the ``_meta`` every request must carry, the
version error, ``resultType``, the methods the revision removed, and (on HTTP) the
headers that mirror the body (basic/index, basic/versioning, server/discover,
basic/transports/streamable-http); the HTTP-only ones are in :mod:`.modern_http`.

n/a unless the server answered ``server/discover`` with 2026-07-28 among its versions
(:attr:`.context.Facts.modern`). Each request here is sent on a fresh connection's wire
as the probe built it; over HTTP with :meth:`~.httpwire.HttpWire.http_request`, so that the
status the revision requires (400, 404) is seen as well as the JSON-RPC answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast

from ..protocol.discover import CLIENT_CAPABILITIES, PROTOCOL_VERSION, SERVER_INFO
from .context import Context
from .http import answer_in, encode, replaced
from .rules import probe, rule
from .wire import MODERN, Wire, error_code, shown

if TYPE_CHECKING:
    from .httpwire import HttpWire

HEADER_MISMATCH: Final = -32020
UNSUPPORTED_VERSION: Final = -32022
FUTURE: Final = "2999-12-31"
# What the probes list with, by the capability that offers it; server/discover, which
# every 2026-07-28 server implements, when none is declared.
_LISTS: Final = (
    ("tools", "tools/list"),
    ("prompts", "prompts/list"),
    ("resources", "resources/list"),
)


async def speaks_modern(ctx: Context, *rule_ids: str) -> bool:
    """True when the server speaks 2026-07-28; otherwise ``rule_ids`` are n/a."""
    if (await ctx.facts()).modern:
        return True
    for rule_id in rule_ids:
        ctx.not_applicable(rule_id, "the server does not speak 2026-07-28 (server/discover)")
    return False


async def list_method(ctx: Context) -> str:
    """The list request to probe with: one the server declared, else server/discover."""
    capabilities = (await ctx.facts()).discover or {}
    declared = capabilities.get("capabilities")
    declared = declared if isinstance(declared, dict) else {}
    return next((method for cap, method in _LISTS if cap in declared), "server/discover")


async def ask(
    ctx: Context, wire: Wire, message: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int | None, dict[str, Any] | None]:
    """Send ``message``; the HTTP status (None off HTTP, or without an answer) and the
    response to it. ``headers`` replace the ones a client would send (HTTP only)."""
    if ctx.kind == "http":
        http = cast("HttpWire", wire)
        line = encode(message)
        done = await http.http_request("POST", headers or http.headers(line), line)
        if done is None:
            return None, None
        answer = answer_in(done, message["id"])
        if answer is None:  # an error that could not name the request
            answer = next(
                (
                    m
                    for m in done.messages()
                    if isinstance(m, dict) and "error" in m and m.get("id") is None
                ),
                None,
            )
        return done.posted.status, answer
    await wire.send(message)
    return None, await wire.answer(message["id"], ctx.timeout)


async def _openspeaks_modern(ctx: Context, wire: Wire) -> None:
    """Open the connection as a 2026-07-28 client does, with a well-formed
    ``server/discover``: a dual-era server may take a stream connection's first request
    to choose the era for the whole connection, and what follows is meant for its
    2026-07-28 side."""
    if ctx.kind != "http":
        await ask(ctx, wire, wire.request("server/discover", {}))


def described(status: int | None, answer: dict[str, Any] | None) -> str:
    """How an answer is named in a detail: "HTTP 400, error -32602"."""
    parts = [] if status is None else [f"HTTP {status}"]
    if answer is None:
        parts.append("no answer")
    elif "result" in answer:
        parts.append("a result")
    else:
        parts.append(f"error {shown(error_code(answer))}")
    return ", ".join(parts)


# --- server/discover ----------------------------------------------------------------------
DISCOVER = rule(
    "modern.discover",
    "server/discover's result has supportedVersions (strings), capabilities (an object), "
    "and ttlMs, cacheScope, instructions typed right where present",
    revision="2026-07-28",
    section="server/discover#discoverresult",
)
SERVER_INFO_RULE = rule(
    "modern.discover-server-info",
    "server/discover's result names the server in _meta's io.modelcontextprotocol/serverInfo",
    revision="2026-07-28",
    section="server/discover#discoverresult",
    level="SHOULD",
)
RESULT_TYPE = rule(
    "modern.result-type",
    'results carry resultType "complete" or none; any other value is invalid',
    revision="2026-07-28",
    section="basic/index#resulttype",
)
RESULT_TYPE_PRESENT = rule(
    "modern.result-type-present",
    "results include resultType",
    revision="2026-07-28",
    section="basic/index#result-responses",
)


def _discover_problem(result: Any) -> str | None:
    if not isinstance(result, dict):
        return "the answer has no result object"
    versions = result.get("supportedVersions")
    if (
        not isinstance(versions, list)
        or not versions
        or not all(isinstance(v, str) for v in versions)
    ):
        return "supportedVersions is not a non-empty list of strings"
    if not isinstance(result.get("capabilities"), dict):
        return "capabilities is not an object"
    ttl = result.get("ttlMs", 0)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
        return "ttlMs is not a non-negative integer"
    if result.get("cacheScope", "public") not in ("public", "private"):
        return 'cacheScope is neither "public" nor "private"'
    if not isinstance(result.get("instructions", ""), str):
        return "instructions is not a string"
    if not isinstance(result.get("_meta", {}), dict):
        return "_meta is not an object"
    return None


@probe(DISCOVER, SERVER_INFO_RULE, RESULT_TYPE, RESULT_TYPE_PRESENT)
async def discover(ctx: Context) -> None:
    rules = (DISCOVER, SERVER_INFO_RULE, RESULT_TYPE, RESULT_TYPE_PRESENT)
    if not await speaks_modern(ctx, *rules):
        return
    method = await list_method(ctx)
    async with ctx.connect() as wire:
        wire.version = MODERN
        _, answer = await ask(ctx, wire, wire.request("server/discover", {}))
        result = answer.get("result") if answer is not None else None
        problem = _discover_problem(result)
        if answer is None:
            problem = f"server/discover was not answered within {ctx.timeout:g} s"
        if problem is None:
            ctx.passed(
                DISCOVER,
                "supportedVersions, capabilities and the optional members are typed right",
                wire,
            )
        else:
            ctx.failed(DISCOVER, problem, wire)
        meta = result.get("_meta") if isinstance(result, dict) else None
        info = meta.get(SERVER_INFO) if isinstance(meta, dict) else None
        if (
            isinstance(info, dict)
            and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str)
        ):
            ctx.passed(SERVER_INFO_RULE, "serverInfo has a name and a version", wire)
        else:
            ctx.failed(SERVER_INFO_RULE, "no serverInfo with a name and a version in _meta", wire)
        results = {"server/discover": result}
        if method != "server/discover":
            _, listed = await ask(ctx, wire, wire.request(method, {}))
            results[method] = listed.get("result") if listed is not None else None
        _judge_result_types(ctx, wire, results)


def _judge_result_types(ctx: Context, wire: Wire, results: dict[str, Any]) -> None:
    objects = {m: r for m, r in results.items() if isinstance(r, dict)}
    if not objects:
        for rule_id in (RESULT_TYPE, RESULT_TYPE_PRESENT):
            ctx.failed(rule_id, "no result to look at", wire)
        return
    wrong = {
        m: r["resultType"]
        for m, r in objects.items()
        if r.get("resultType", "complete") != "complete"
    }
    if wrong:
        method, value = next(iter(wrong.items()))
        ctx.failed(RESULT_TYPE, f"{method}'s result has resultType {shown(value)}", wire)
    else:
        ctx.passed(RESULT_TYPE, f"complete (or absent) in {', '.join(objects)}", wire)
    missing = [m for m, r in objects.items() if "resultType" not in r]
    if missing:
        ctx.failed(RESULT_TYPE_PRESENT, f"no resultType in {', '.join(missing)}'s result", wire)
    else:
        ctx.passed(RESULT_TYPE_PRESENT, f"present in {', '.join(objects)}", wire)


# --- _meta and the version ------------------------------------------------------------------
META_REQUIRED = rule(
    "modern.meta-required",
    "a request without _meta, or without its protocolVersion or clientCapabilities, is "
    "answered -32602 (on HTTP with 400)",
    revision="2026-07-28",
    section="basic/index#_meta",
)
VERSION_ERROR = rule(
    "modern.unsupported-version",
    'a request for protocolVersion "2999-12-31" is answered -32022 with data '
    "{supported, requested} (on HTTP with 400)",
    revision="2026-07-28",
    section="basic/versioning#protocol-version-negotiation",
)


def _strip(message: dict[str, Any], key: str | None) -> dict[str, Any]:
    """``message`` without its _meta (``key`` None) or without ``key`` in it."""
    params = dict(message["params"])
    if key is None:
        del params["_meta"]
    else:
        params["_meta"] = {k: v for k, v in params["_meta"].items() if k != key}
    return {**message, "params": params}


@probe(META_REQUIRED, VERSION_ERROR)
async def meta_required(ctx: Context) -> None:
    if not await speaks_modern(ctx, META_REQUIRED, VERSION_ERROR):
        return
    method = await list_method(ctx)
    http = ctx.kind == "http"
    async with ctx.connect() as wire:
        wire.version = MODERN
        await _openspeaks_modern(ctx, wire)
        problems = []
        for key, what in (
            (None, "no _meta"),
            (PROTOCOL_VERSION, "no protocolVersion"),
            (CLIENT_CAPABILITIES, "no clientCapabilities"),
        ):
            message = _strip(wire.request(method, {}), key)
            status, answer = await ask(ctx, wire, message)
            # Over HTTP the version header stands with no body value to match when the
            # body has none: a HeaderMismatch (-32020) is as right as -32602 there.
            codes = (-32602, HEADER_MISMATCH) if http and key != CLIENT_CAPABILITIES else (-32602,)
            if error_code(answer) not in codes or (http and status != 400):
                problems.append(f"{what}: {described(status, answer)}")
        if problems:
            ctx.failed(META_REQUIRED, "; ".join(problems), wire)
        else:
            ctx.passed(META_REQUIRED, "each answered -32602" + (" with 400" if http else ""), wire)
    async with ctx.connect() as wire:
        wire.version = MODERN
        message = wire.request(method, {"_meta": {PROTOCOL_VERSION: FUTURE}})
        headers = None
        if http:
            http_wire = cast("HttpWire", wire)
            headers = replaced(http_wire.headers(encode(message)), "MCP-Protocol-Version", FUTURE)
        status, answer = await ask(ctx, wire, message, headers)
        _judge_version_error(ctx, wire, method, status, answer)


def _judge_version_error(
    ctx: Context, wire: Wire, method: str, status: int | None, answer: dict[str, Any] | None
) -> None:
    error = answer.get("error") if answer is not None else None
    data = error.get("data") if isinstance(error, dict) else None
    if method == "server/discover" and answer is not None and "result" in answer:
        ctx.not_applicable(
            VERSION_ERROR, "no list method declared, and server/discover may answer any version"
        )
    elif error_code(answer) != UNSUPPORTED_VERSION:
        ctx.failed(VERSION_ERROR, f"asked for {FUTURE}: {described(status, answer)}", wire)
    elif status is not None and status != 400:
        ctx.failed(VERSION_ERROR, f"-32022 came with HTTP {status}, not 400", wire)
    elif (
        not isinstance(data, dict)
        or not isinstance(data.get("supported"), list)
        or not all(isinstance(v, str) for v in data["supported"])
    ):
        ctx.failed(VERSION_ERROR, "the error's data has no supported list of strings", wire)
    elif data.get("requested") != FUTURE:
        ctx.failed(VERSION_ERROR, f"the error's data does not say requested: {FUTURE}", wire)
    else:
        ctx.passed(VERSION_ERROR, "-32022 with the supported versions and the one requested", wire)


# --- removed methods ----------------------------------------------------------------------
REMOVED = rule(
    "modern.removed-methods",
    "ping, logging/setLevel and resources/subscribe (removed in 2026-07-28) are answered "
    "-32601 (on HTTP with 404)",
    revision="2026-07-28",
    section="basic/transports/streamable-http#protocol-version-header",
)
_REMOVED: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    ("ping", {}),
    ("logging/setLevel", {"level": "info"}),
    ("resources/subscribe", {"uri": "mcpl-host-check://none"}),
)


@probe(REMOVED)
async def removed_methods(ctx: Context) -> None:
    if not await speaks_modern(ctx, REMOVED):
        return
    http = ctx.kind == "http"
    async with ctx.connect() as wire:
        wire.version = MODERN
        await _openspeaks_modern(ctx, wire)
        problems = []
        for method, params in _REMOVED:
            status, answer = await ask(ctx, wire, wire.request(method, dict(params)))
            if error_code(answer) != -32601 or (http and status != 404):
                problems.append(f"{method}: {described(status, answer)}")
            if method == "resources/subscribe" and answer is not None and "result" in answer:
                # It took the subscription: leave nothing behind.
                await ask(ctx, wire, wire.request("resources/unsubscribe", dict(params)))
        if problems:
            ctx.failed(REMOVED, "; ".join(problems), wire)
        else:
            ctx.passed(REMOVED, "each answered -32601" + (" with 404" if http else ""), wire)
