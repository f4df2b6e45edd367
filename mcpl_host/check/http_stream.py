"""HTTP rules, part three: the GET stream and resuming an event stream with
``Last-Event-ID`` (basic/transports, 2025-03-26 to 2025-11-25; 2026-07-28 has neither).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..protocol.sse import SseEvent
from .context import Context
from .http import encode, http_only, replaced, status_of
from .http_session import _handshake_era
from .rules import probe, rule
from .wire import shown

if TYPE_CHECKING:
    from .httpwire import HttpWire

# How long a GET stream is read for an event with an id, when the server sends none:
# quiet streams are the rule, so this is kept short.
_GET_GRACE = 0.3

GET_STREAM = rule(
    "http.get-stream",
    "GET with Accept: text/event-stream is answered with an event stream or 405",
    revision="2025-03-26",
    section="basic/transports#listening-for-messages-from-the-server",
)
RESUMPTION = rule(
    "http.sse-resumption",
    "GET with Last-Event-ID replays only the events after that id on that stream, or is "
    "refused (405, 404) by a server that does not resume",
    revision="2025-03-26",
    section="basic/transports#resumability-and-redelivery",
)


def _with_id(events: list[SseEvent]) -> list[SseEvent]:
    return [e for e in events if e.id is not None]


@probe(GET_STREAM, RESUMPTION)
async def get_stream(ctx: Context) -> None:
    rules = (GET_STREAM, RESUMPTION)
    if not await http_only(ctx, *rules) or not await _handshake_era(ctx, *rules):
        return
    async with ctx.session() as plain:
        wire = cast("HttpWire", plain)
        message = wire.request("ping")
        line = encode(message)
        posted = await wire.http_request("POST", wire.headers(line), line)
        stream = posted.events if posted is not None else []
        if _with_id(stream):
            await _resume(ctx, wire, stream)
        mark = wire.mark()
        headers = replaced(wire.headers(), "Accept", "text/event-stream")
        got = await wire.http_request(
            "GET", headers, wait=min(_GET_GRACE, ctx.timeout), until=lambda e: bool(_with_id(e))
        )
        evidence = wire.since(mark)
        if got is not None and got.posted.status == 405:
            ctx.passed(GET_STREAM, "answered 405: no GET stream", evidence)
        elif (
            got is not None
            and got.posted.status == 200
            and got.posted.content_type == ("text/event-stream")
        ):
            ctx.passed(GET_STREAM, "answered with an event stream", evidence)
        else:
            kind = shown(got.posted.content_type) if got is not None else ""
            ctx.failed(GET_STREAM, f"answered {status_of(got)} {kind}".strip(), evidence)
        if RESUMPTION in ctx.findings or not ctx.wants(RESUMPTION):
            return
        if got is not None and _with_id(got.events):
            await _resume(ctx, wire, got.events)
        else:
            ctx.not_applicable(RESUMPTION, "no event the server sent carries an id")


async def _resume(ctx: Context, wire: HttpWire, stream: list[SseEvent]) -> None:
    """Resume ``stream`` after its first event with an id, and judge what comes back."""
    first = next(i for i, e in enumerate(stream) if e.id is not None)
    last_id = stream[first].id
    assert last_id is not None
    before = {e.data for e in stream[: first + 1] if e.data}
    before_ids = {e.id for e in stream[: first + 1] if e.id is not None}
    after = [e.data for e in stream[first + 1 :] if e.data]
    mark = wire.mark()
    wire.note("·", f"GET with Last-Event-ID: {last_id}")
    headers = {**replaced(wire.headers(), "Accept", "text/event-stream"), "Last-Event-ID": last_id}

    def complete(events: list[SseEvent]) -> bool:
        return all(data in {e.data for e in events} for data in after)

    got = await wire.http_request("GET", headers, wait=ctx.timeout, until=complete)
    evidence = wire.since(mark)
    if got is not None and got.posted.status in (404, 405):
        ctx.passed(
            RESUMPTION, f"answered {got.posted.status}: the server does not resume", evidence
        )
        return
    if got is None or got.posted.status != 200 or got.posted.content_type != "text/event-stream":
        kind = shown(got.posted.content_type) if got is not None else ""
        ctx.failed(RESUMPTION, f"answered {status_of(got)} {kind}".strip(), evidence)
        return
    again = [e for e in got.events if (e.data and e.data in before) or e.id in before_ids]
    if again:
        ctx.failed(
            RESUMPTION, f"replayed {len(again)} event(s) sent before {shown(last_id)}", evidence
        )
        return
    replayed = sum(1 for data in after if data in {e.data for e in got.events})
    ctx.passed(
        RESUMPTION,
        f"replayed {replayed} of the {len(after)} event(s) after {shown(last_id)}",
        evidence,
    )
