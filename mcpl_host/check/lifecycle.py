"""Lifecycle rules: the handshake's answers, and what comes before and after it
(basic/lifecycle); how a stdio server ends is in :mod:`.lifecycle_stdio`."""

from __future__ import annotations

from typing import Any, Final

import trio

from ..protocol.profiles import KNOWN_REVISIONS
from .context import HANDSHAKE_REVISIONS, Context
from .fence import dead, fenced
from .rules import Line, Verdict, probe, rule
from .wire import Wire, same_id, shown

INITIALIZE_NEWEST = rule(
    "lifecycle.initialize-newest",
    "initialize offering the newest revision is answered with a revision, capabilities "
    "and serverInfo",
    revision="2024-11-05",
    section="basic/lifecycle#initialization",
)


_NO_HANDSHAKE: Final = "a 2026-07-28 server without initialize"
_NO_PING: Final = "no handshake: 2026-07-28 has no ping"


async def _without_handshake(ctx: Context, rule_id: str, why: str = _NO_HANDSHAKE) -> bool:
    """Judge ``rule_id`` not applicable (True) when the server completed no handshake."""
    if (await ctx.facts()).version is None:
        ctx.not_applicable(rule_id, why)
        return True
    return False


def _error_shown(answer: dict[str, Any]) -> str:
    """An error answer's code and message, for a detail (the Context makes them safe)."""
    error = answer.get("error")
    if not isinstance(error, dict):
        return "an error"
    message = error.get("message")
    said = f" ({message})" if isinstance(message, str) else ""
    return f"error {shown(error.get('code'))}{said}"


def _result_problem(answer: dict[str, Any] | None) -> str | None:
    """Why ``answer`` is not a well-formed InitializeResult (None: it is)."""
    if answer is None:
        return "no answer"
    result = answer.get("result")
    if "result" in answer and not isinstance(result, dict):
        return "the result is not an object"
    if not isinstance(result, dict):
        return "answered without a result"
    if not isinstance(result.get("protocolVersion"), str):
        return "the result has no protocolVersion string"
    if not isinstance(result.get("capabilities"), dict):
        return "the result has no capabilities object"
    info = result.get("serverInfo")
    if (
        not isinstance(info, dict)
        or not isinstance(info.get("name"), str)
        or not isinstance(info.get("version"), str)
    ):
        return "the result has no serverInfo with a name and a version"
    return None


@probe(INITIALIZE_NEWEST)
async def initialize_newest(ctx: Context) -> None:
    facts = await ctx.facts()
    newest = HANDSHAKE_REVISIONS[0]
    async with ctx.connect() as wire:
        answer = await ctx.initialize(wire, newest)
        problem = _result_problem(answer)
        if facts.modern and (answer is None or "error" in answer):
            # 2026-07-28 basic/versioning, Legacy client / Modern server: "the server
            # rejects `initialize` with a JSON-RPC error"; silence is as good an answer
            # to it. A result, though, must be a whole one.
            ctx.not_applicable(INITIALIZE_NEWEST, _NO_HANDSHAKE)
        elif problem is None:
            assert answer is not None
            chosen = answer["result"]["protocolVersion"]
            detail = f"offered {newest}, answered {chosen}"
            if chosen in KNOWN_REVISIONS:
                ctx.passed(INITIALIZE_NEWEST, detail, wire)
            else:
                ctx.judge(
                    INITIALIZE_NEWEST, Verdict.WARN, f"{detail}: unknown to the checker", wire
                )
        else:
            ctx.failed(INITIALIZE_NEWEST, f"offered {newest}: {problem}", wire)


PING_AFTER_INITIALIZE = rule(
    "lifecycle.ping-after-initialize",
    "ping after the handshake is answered promptly with an empty result",
    revision="2024-11-05",
    section="basic/utilities/ping#behavior-requirements",
)


@probe(PING_AFTER_INITIALIZE)
async def ping_after_initialize(ctx: Context) -> None:
    if await _without_handshake(ctx, PING_AFTER_INITIALIZE, _NO_PING):
        return
    async with ctx.borrow() as wire:
        answer = await wire.call("ping", timeout=ctx.timeout)
        if answer is None:
            wire.broken = True
            ctx.failed(PING_AFTER_INITIALIZE, f"no answer within {ctx.timeout:g} s", wire)
        elif answer.get("result") != {}:
            ctx.failed(PING_AFTER_INITIALIZE, "the answer is not an empty result", wire)
        else:
            ctx.passed(PING_AFTER_INITIALIZE, "answered {}", wire)


# --- the handshake, offered other revisions ---------------------------------------------------
INITIALIZE_OLDER = rule(
    "lifecycle.initialize-older",
    "initialize offering an older revision is answered with it, or another the server supports",
    revision="2024-11-05",
    section="basic/lifecycle#version-negotiation",
)
INITIALIZE_FUTURE = rule(
    "lifecycle.initialize-future",
    "initialize offering an unknown future revision is answered with one the server supports",
    revision="2024-11-05",
    section="basic/lifecycle#version-negotiation",
)
FUTURE: Final = "2999-12-31"


async def _offer(ctx: Context, version: str) -> tuple[str | None, str, tuple[Line, ...]]:
    """Initialize offering ``version`` on a fresh connection: the revision answered (None:
    none), what happened, and the lines."""
    async with ctx.connect() as wire:
        answer = await ctx.initialize(wire, version)
        problem = _result_problem(answer)
        if problem is None:
            assert answer is not None
            chosen: str = answer["result"]["protocolVersion"]
            return chosen, f"offered {version}, answered {chosen}", wire.since()
        if answer is not None and "error" in answer:
            # basic/lifecycle#version-negotiation: a server that does not support the
            # revision offered "MUST respond with another protocol version it supports".
            # The -32602 "Unsupported protocol version" of the page's Error Handling
            # answers "1.0.0", no revision at all (docs/check.md, the choices).
            problem = f"answered with {_error_shown(answer)}, not another revision it supports"
        return None, f"offered {version}: {problem}", wire.since()


@probe(INITIALIZE_OLDER)
async def initialize_older(ctx: Context) -> None:
    if await _without_handshake(ctx, INITIALIZE_OLDER):
        return
    # The newest the run offers is the baseline's (initialize-newest); these are the rest.
    older = [v for v in HANDSHAKE_REVISIONS if v in ctx.options.versions][1:]
    if not older:
        ctx.not_applicable(INITIALIZE_OLDER, "no older revision among the revisions checked")
        return
    outcomes: dict[str, tuple[str | None, str, tuple[Line, ...]]] = {}

    async def offer(version: str) -> None:
        outcomes[version] = await _offer(ctx, version)

    async with trio.open_nursery() as nursery:
        for version in older:
            nursery.start_soon(offer, version)
    details = [outcomes[v][1] for v in older]
    evidence = [line for v in older for line in outcomes[v][2]]
    unknown = [
        v for v in older if outcomes[v][0] is not None and outcomes[v][0] not in KNOWN_REVISIONS
    ]
    if any(outcomes[v][0] is None for v in older):
        ctx.failed(INITIALIZE_OLDER, "; ".join(details), evidence)
    elif unknown:
        ctx.judge(
            INITIALIZE_OLDER,
            Verdict.WARN,
            "; ".join(details) + " (a revision unknown to the checker)",
            evidence,
        )
    else:
        ctx.passed(INITIALIZE_OLDER, "; ".join(details), evidence)


@probe(INITIALIZE_FUTURE)
async def initialize_future(ctx: Context) -> None:
    if await _without_handshake(ctx, INITIALIZE_FUTURE):
        return
    chosen, detail, evidence = await _offer(ctx, FUTURE)
    if chosen is None:
        ctx.failed(INITIALIZE_FUTURE, detail, evidence)
    elif chosen == FUTURE:
        ctx.failed(INITIALIZE_FUTURE, f"{detail}: a revision it cannot support", evidence)
    elif chosen not in KNOWN_REVISIONS:
        ctx.judge(INITIALIZE_FUTURE, Verdict.WARN, f"{detail}: unknown to the checker", evidence)
    else:
        ctx.passed(INITIALIZE_FUTURE, detail, evidence)


# --- before and after the handshake ---------------------------------------------------------------
PING_BEFORE_INITIALIZE = rule(
    "lifecycle.ping-before-initialize",
    "a ping before initialize is answered with an empty result",
    revision="2024-11-05",
    section="basic/lifecycle#initialization",
)
REQUEST_BEFORE_INITIALIZE = rule(
    "lifecycle.request-before-initialize",
    "a request other than ping before initialize is answered, with an error",
    revision="2024-11-05",
    section="basic/lifecycle#initialization",
)
INITIALIZED = rule(
    "lifecycle.initialized",
    "the initialized notification is not answered, and requests are served after it",
    revision="2024-11-05",
    section="basic/lifecycle#initialization",
)


_SESSION_REQUIRED: Final = (
    "HTTP 400 without a session id (Streamable HTTP lets a server that requires "
    "sessions refuse every request before initialize so)"
)


def _session_required(wire: Wire) -> bool:
    """Whether an HTTP server refused the request with 400 (basic/transports#session-
    management: it requires a session, which only initialize opens)."""
    return bool(wire.posts) and wire.posts[0].status == 400


@probe(PING_BEFORE_INITIALIZE)
async def ping_before_initialize(ctx: Context) -> None:
    if await _without_handshake(ctx, PING_BEFORE_INITIALIZE, _NO_PING):
        return
    async with ctx.connect() as wire:
        answer = await wire.call("ping", timeout=ctx.timeout)
        if answer is None and _session_required(wire):
            ctx.not_applicable(PING_BEFORE_INITIALIZE, f"refused with {_SESSION_REQUIRED}")
        elif answer is None:
            ctx.failed(PING_BEFORE_INITIALIZE, f"no answer within {ctx.timeout:g} s", wire)
        elif answer.get("result") != {}:
            ctx.failed(PING_BEFORE_INITIALIZE, "the answer is not an empty result", wire)
        else:
            ctx.passed(PING_BEFORE_INITIALIZE, "answered {}", wire)


@probe(REQUEST_BEFORE_INITIALIZE)
async def request_before_initialize(ctx: Context) -> None:
    # The spec binds the client ("SHOULD NOT send requests other than pings before the
    # server has responded to the initialize request") and says "the initialization phase
    # MUST be the first interaction"; JSON-RPC 2.0 says a request MUST get a response.
    # So an answer is due (MUST), an error is right, and serving it only warns.
    if await _without_handshake(ctx, REQUEST_BEFORE_INITIALIZE):
        return
    async with ctx.connect() as wire:
        answer = await wire.call("tools/list", {}, timeout=ctx.timeout)
        if answer is None and _session_required(wire):
            ctx.passed(REQUEST_BEFORE_INITIALIZE, f"refused with {_SESSION_REQUIRED}", wire)
        elif answer is None:
            how = "closed the connection" if wire.closed else f"no answer within {ctx.timeout:g} s"
            ctx.failed(REQUEST_BEFORE_INITIALIZE, f"tools/list before initialize: {how}", wire)
        elif isinstance(answer.get("error"), dict):
            ctx.passed(REQUEST_BEFORE_INITIALIZE, "refused tools/list before initialize", wire)
        else:
            ctx.judge(
                REQUEST_BEFORE_INITIALIZE,
                Verdict.WARN,
                "served tools/list before initialize",
                wire,
            )


@probe(INITIALIZED)
async def initialized(ctx: Context) -> None:
    if await _without_handshake(ctx, INITIALIZED):
        return
    facts = await ctx.facts()
    async with ctx.session() as wire:
        # The session sent initialized; what answered it comes before the fence's answer.
        method = "tools/list" if "tools" in facts.capabilities else "ping"
        request = wire.request(method, {} if method == "tools/list" else None)
        # Two answers waited for: one to the request, and any to the notification.
        out = await fenced(ctx, wire, request, want=2)
        evidence = wire.since()
        if dead(ctx, INITIALIZED, out, "the initialized notification"):
            return

        def answers_request(value: Any) -> bool:
            return isinstance(value, dict) and same_id(value.get("id"), request["id"])

        served = [r.value for r in out.responses if answers_request(r.value)]
        if len(served) < len(out.responses):
            ctx.failed(INITIALIZED, "answered the initialized notification", evidence)
        elif not served or "result" not in served[0]:
            ctx.failed(INITIALIZED, f"{method} after initialized was not served", evidence)
        else:
            ctx.passed(INITIALIZED, f"no answer to initialized; {method} served", evidence)
