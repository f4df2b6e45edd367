"""One message sent, then a ``ping`` behind it as a fence: what the server answered
the message, whether it is still alive, and nothing waited for longer than needed.

A probe of what a server must not answer (a notification) or may answer without an id
(a broken envelope) cannot wait for the answer by id. It sends the message, then a ping,
and reads until the ping's answer: whatever response came before it answered the
message. A server that handles messages concurrently may answer the message after the
ping, so when nothing answered it yet the fence waits a short :data:`GRACE` more. A ping
that is never answered means the server died or hung on the message: the wire is marked
broken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import trio

from .rules import Line, Verdict
from .wire import MODERN, Received, is_response, same_id, shown

if TYPE_CHECKING:
    from .context import Context
    from .wire import Wire

__all__ = ["GRACE", "Fenced", "dead", "fence_request", "fenced", "refusal", "shown", "worst"]

GRACE: Final = 0.25
_NOTHING: Final = object()  # an id no request has


@dataclass(frozen=True, slots=True)
class Fenced:
    """What came back for one message: ``responses`` are the responses (and arrays)
    that are not the fence's answer, ``noise`` the lines that are not JSON-RPC,
    ``alive`` whether the fence was answered; ``evidence`` the lines from the send on.
    Over HTTP a POST refused with an error status may carry any body (Streamable HTTP
    lets it): such a body is not counted as noise, and ``http_error`` says it came."""

    responses: tuple[Received, ...]
    noise: tuple[Received, ...]
    alive: bool
    closed: bool
    evidence: tuple[Line, ...]
    http_error: int | None = None  # over HTTP: the first 4xx/5xx status among the POSTs


def _is_answer_to(line: Received, id_: Any) -> bool:
    return is_response(line.value, id_)


def _is_response(line: Received, fence_id: Any) -> bool:
    value = line.value
    if isinstance(value, list):
        return True
    return isinstance(value, dict) and "method" not in value and not _is_answer_to(line, fence_id)


def fence_request(wire: Wire) -> dict[str, Any]:
    """A request every server answers: ping, or on 2026-07-28 (no ping) server/discover."""
    if wire.version == MODERN:
        return wire.request("server/discover", {})
    return wire.request("ping")


def _count(lines: list[Received], fence_id: Any) -> int:
    """The answers among ``lines`` that are not the fence's (an array's entries each)."""
    return sum(
        len(r.value) if isinstance(r.value, list) else 1 for r in lines if _is_response(r, fence_id)
    )


async def fenced(ctx: Context, wire: Wire, message: Any, *, want: int = 1) -> Fenced:
    """Send ``message`` (a JSON value, or bytes as they are), then the fence; past the
    fence's answer, wait the grace for ``want`` answers (a batch's entries) at most."""
    mark = wire.mark()
    posts: list[Any] = getattr(wire, "posts", [])  # an HttpWire's; httpx stays unimported
    posted = len(posts)
    await wire.send(message)
    if hasattr(wire, "posts"):
        # Over HTTP each line is a POST of its own, in flight side by side: the fence
        # goes once the server has begun answering the message, so that it is behind it.
        with trio.move_on_after(ctx.timeout):
            while len(posts) == posted:
                await trio.sleep(0.005)
    fence = fence_request(wire)
    await wire.send(fence)
    fence_id = fence["id"]
    # The HTTP wire stops a wait early only for the request named here: the fence
    # (a broken message's POST ending without an answer is no reason to stop).
    wire.awaiting = fence_id
    try:
        lines = await wire.received_within(ctx.timeout, until=lambda r: _is_answer_to(r, fence_id))
        alive = bool(lines) and _is_answer_to(lines[-1], fence_id)
        if alive and _count(lines, fence_id) < want:
            more: list[Received] = []

            def enough(line: Received) -> bool:
                more.append(line)
                return _count(lines + more, fence_id) >= want

            wire.awaiting = _NOTHING
            lines += await wire.received_within(GRACE, until=enough)
    finally:
        wire.awaiting = None
    if not alive:
        wire.broken = True
        wire.note("·", f"no answer to the ping within {ctx.timeout:g} s")
    http_error = next((p.status for p in posts[posted:] if p.status >= 400), None)
    return Fenced(
        responses=tuple(r for r in lines if r.is_json_rpc and _is_response(r, fence_id)),
        noise=() if http_error else tuple(r for r in lines if not r.is_json_rpc),
        alive=alive,
        closed=wire.closed,
        evidence=wire.since(mark),
        http_error=http_error,
    )


def dead(ctx: Context, rule_id: str, out: Fenced, what: str) -> bool:
    """Fail ``rule_id`` (whatever its level: a server must survive what it is sent) if
    the server died or hung on ``what``, or wrote a line that is not JSON-RPC; True if
    it did."""
    if not out.alive:
        how = "closed the connection" if out.closed else "stopped answering"
        ctx.judge(rule_id, Verdict.FAIL, f"the server {how} after {what}", out.evidence)
        return True
    if out.noise:
        ctx.judge(
            rule_id, Verdict.FAIL, f"answered {what} with a line that is not JSON-RPC", out.evidence
        )
        return True
    return False


def refusal(
    out: Fenced,
    what: str,
    *,
    codes: tuple[int, ...],
    id_: Any = None,
    result: Verdict = Verdict.FAIL,
    version: str | None = None,
    silence: Verdict = Verdict.FAIL,
) -> tuple[Verdict, str]:
    """The verdict on a message that must be refused with a JSON-RPC error whose code is
    one of ``codes``, carrying ``id_`` (None: the id was unreadable, so ``null``, or no id
    from 2025-11-25 on, as ``version`` tells). A crash, a line that is not JSON-RPC or two
    answers fail; silence is judged ``silence``, a result ``result``; another code or id
    warns."""
    if not out.alive:
        how = "closed the connection" if out.closed else "stopped answering"
        return Verdict.FAIL, f"the server {how} after {what}"
    if out.noise:
        return Verdict.FAIL, f"answered {what} with a line that is not JSON-RPC"
    if not out.responses and out.http_error is not None:
        return Verdict.PASS, f"refused {what} with HTTP {out.http_error}"
    if not out.responses:
        return silence, f"no answer to {what}"
    if len(out.responses) > 1:
        return Verdict.FAIL, f"answered {what} {len(out.responses)} times"
    answer = out.responses[0].value
    if not isinstance(answer, dict):
        return Verdict.FAIL, f"answered {what} with an array"
    error = answer.get("error")
    if not isinstance(error, dict) or "result" in answer:
        return result, f"answered {what} with a result: it was dispatched"
    code = error.get("code")
    if isinstance(code, bool) or code not in codes:
        expected = " or ".join(str(c) for c in codes)
        return Verdict.WARN, f"answered {what} with error {shown(code)}, not {expected}"
    if id_ is None:
        no_id_ok = version is not None and version >= "2025-11-25"
        if "id" not in answer and not no_id_ok:
            return Verdict.WARN, f"answered {what} with {code} and no id, not id null"
        if answer.get("id") is not None:
            return (
                Verdict.WARN,
                f"answered {what} with {code} and id {shown(answer['id'])}, not null",
            )
        return Verdict.PASS, f"answered {what} with {code} and id {shown(answer.get('id'))}"
    if "id" in answer and same_id(answer["id"], id_):
        return Verdict.PASS, f"answered {what} with {code} and its id {shown(id_)}"
    got = shown(answer["id"]) if "id" in answer else "no id"
    return Verdict.WARN, f"answered {what} with {code} and id {got}, not its id {shown(id_)}"


def worst(verdicts: list[Verdict]) -> Verdict:
    """The verdict of several checks of one rule: a fail, else a warn, else a pass."""
    for verdict in (Verdict.FAIL, Verdict.WARN):
        if verdict in verdicts:
            return verdict
    return Verdict.PASS
