"""One message sent, then a ``ping`` behind it as a fence: what the server answered
the message, whether it is still alive, and nothing waited for longer than needed.

A probe of what a server must not answer (a notification) or may answer without an id
(a broken envelope) cannot wait for the answer by id. It sends the message, then a ping,
and reads until the ping's answer: whatever response came before it answered the
message. A server that handles messages concurrently may answer the message after the
ping: a request whose id an answer can carry is then waited for by that id, as long as
any answer is (the timeout), so a verdict never depends on how fast a server answers;
what has no such id (a notification, a broken id, a batch) gets a short :data:`GRACE`
more. A ping that is never answered means the server died or hung on the message: the
wire is marked broken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from .rules import Line, Verdict
from .wire import KEPT_BYTES, MODERN, Received, is_response, same_id, shown

if TYPE_CHECKING:
    from .context import Context
    from .wire import Wire

__all__ = ["GRACE", "Fenced", "dead", "fence_request", "fenced", "refusal", "shown", "worst"]

GRACE: Final = 0.25
_NOTHING: Final = object()  # an id no request has
_KEPT: Final = 64  # answers (and lines that are not JSON-RPC) a fence keeps for its verdict


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


def _readable_id(message: Any) -> tuple[bool, Any]:
    """Whether ``message`` is a request whose id an answer can carry back (a string or an
    integer), and that id."""
    if isinstance(message, dict) and "method" in message:
        id_ = message.get("id")
        if isinstance(id_, str) or (isinstance(id_, int) and not isinstance(id_, bool)):
            return True, id_
    return False, None


class _Seen:
    """What a fence keeps of the lines it reads: the responses that are not the fence's
    and the lines that are not JSON-RPC, at most _KEPT of each and half of KEPT_BYTES
    (the verdicts need the first few; the transcript shows every line, cut), how many
    answers came (an array's entries each), and whether the message's own id did."""

    def __init__(self, fence_id: Any, id_: Any) -> None:
        self.fence_id = fence_id
        self.id = id_
        self.responses: list[Received] = []
        self.noise: list[Received] = []
        self.count = 0
        self.answered = False
        self._kept = {"responses": 0, "noise": 0}

    def take(self, line: Received) -> None:
        if not line.is_json_rpc:
            self._keep(self.noise, "noise", line)
        elif _is_response(line, self.fence_id):
            self.count += len(line.value) if isinstance(line.value, list) else 1
            self.answered = self.answered or _is_answer_to(line, self.id)
            self._keep(self.responses, "responses", line)

    def _keep(self, into: list[Received], which: str, line: Received) -> None:
        if len(into) < _KEPT and self._kept[which] + len(line.raw) <= KEPT_BYTES // 2:
            into.append(line)
            self._kept[which] += len(line.raw)


async def fenced(ctx: Context, wire: Wire, message: Any, *, want: int = 1) -> Fenced:
    """Send ``message`` (a JSON value, or bytes as they are), then the fence. Past the
    fence's answer, a request with a readable id still unanswered is waited for as long
    as any answer is (the timeout): a concurrent server may answer it after the ping.
    Else the grace is waited for ``want`` answers (a batch's entries) at most."""
    mark = wire.mark()
    posted = len(wire.posts)
    await wire.send(message)
    # Over HTTP each line is a POST of its own, in flight side by side: the fence goes
    # once the server has begun answering the message, so that it is behind it.
    await wire.posted(posted + 1, ctx.timeout)
    fence = fence_request(wire)
    await wire.send(fence)
    fence_id = fence["id"]
    readable, id_ = _readable_id(message)
    seen = _Seen(fence_id, id_ if readable else _NOTHING)

    def fence_answered(line: Received) -> bool:
        if _is_answer_to(line, fence_id):
            return True
        seen.take(line)
        return False

    def enough(line: Received) -> bool:
        seen.take(line)
        return seen.count >= want or seen.answered

    def more(line: Received) -> bool:
        seen.take(line)
        return seen.count >= want

    # The HTTP wire stops a wait early only for the request named here (a broken
    # message's POST ending without an answer is no reason to stop waiting the fence).
    wire.awaiting = fence_id
    try:
        alive = await wire.read_until(ctx.timeout, fence_answered)
        pending = any(same_id(i, id_) for i in wire.outstanding)
        waited_out = False
        if alive and readable and pending and seen.count < want:
            wire.awaiting = id_
            waited_out = not await wire.read_until(ctx.timeout, enough)
        if alive and seen.count < want and not waited_out:
            wire.awaiting = _NOTHING
            await wire.read_until(GRACE, more)
    finally:
        wire.awaiting = None
    if not alive:
        wire.broken = True
        wire.note("·", f"no answer to the ping within {ctx.timeout:g} s")
    http_error = next((p.status for p in wire.posts[posted:] if p.status >= 400), None)
    return Fenced(
        responses=tuple(seen.responses),
        noise=() if http_error else tuple(seen.noise),
        alive=alive,
        closed=wire.closed,
        evidence=wire.since(mark),
        http_error=http_error,
    )


def _broken(out: Fenced, what: str) -> str | None:
    """Why ``out`` fails whatever was due (the server died or hung on ``what``, or wrote
    a line that is not JSON-RPC); None if it did neither."""
    if not out.alive:
        how = "closed the connection" if out.closed else "stopped answering"
        return f"the server {how} after {what}"
    if out.noise:
        return f"answered {what} with a line that is not JSON-RPC"
    return None


def dead(ctx: Context, rule_id: str, out: Fenced, what: str) -> bool:
    """Fail ``rule_id`` (whatever its level: a server must survive what it is sent) if
    the server died or hung on ``what``, or wrote a line that is not JSON-RPC; True if
    it did."""
    problem = _broken(out, what)
    if problem is not None:
        ctx.judge(rule_id, Verdict.FAIL, problem, out.evidence)
    return problem is not None


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
    problem = _broken(out, what)
    if problem is not None:
        return Verdict.FAIL, problem
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
