"""A peer's text in the host's own log events is escaped, cut and redacted where the event
is made (DESIGN 3.11), so no embedder's structlog setup can leak it: a method name, a
string id (of a request, an invalid request, an unmatched response, a response during
the handshake), whatever the logger's processors do with it afterwards."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import pytest
import structlog
import trio
from structlog.testing import capture_logs

from mcpl_host import Event, Mcpl, McplGrantChanged, ServerRequest
from mcpl_host.protocol.redact import (
    CUT_MARK,
    LOG_VALUE_LIMIT,
    REDACTION_MARK,
    log_value,
    utf16_len,
)

from ..logcheck import assert_safe, strings
from .conftest import connected
from .peer import Peer, memory_connection

# A terminal escape (clear the screen, retitle the window), a bell and a Unicode line
# separator that log viewers break lines on.
HOSTILE = "x/\x1b[2J\x1b]0;owned\x07 here\u2028forged=1"
ESCAPED = log_value(HOSTILE)
TOKEN = "tok-5b1d0c9e7a"
LONG = "m" * 5000
CUT = "m" * (LOG_VALUE_LIMIT - len(CUT_MARK)) + CUT_MARK


def line(**members: Any) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", **members})


async def hostile_peer(peer: Peer, text: str, *, long: str = LONG) -> None:
    """Puts ``text`` (and ``long``) in every peer field the host logs: before the
    handshake ends, then after it, syncing on an answer after each message."""
    init = await peer.expect("initialize")
    await peer.send(line(id=text, result={}))  # a string-id response during the handshake
    await peer.send(line(id=1, method=text))  # a request other than ping, ignored
    await peer.send(line(method=text))  # a notification, ignored
    await peer.send(line(id=init["id"], result={"protocolVersion": "2025-11-25"}))
    await peer.expect("notifications/initialized")

    async def sync() -> None:
        await peer.send(line(id="sync", method="ping"))
        assert await peer.recv() == {"jsonrpc": "2.0", "id": "sync", "result": {}}

    await peer.send(line(id=text, method=text))  # unknown method: -32601
    assert (await peer.recv())["error"]["code"] == -32601
    await peer.send(line(id=[1], method=text))  # invalid (its id): -32600, id null
    assert (await peer.recv())["error"]["code"] == -32600
    await peer.send(line(id=text, method=7))  # invalid (its method): -32600, its id
    assert (await peer.recv())["error"]["code"] == -32600
    await peer.send(line(id=text, result={}))  # a response to nothing the host asked
    await peer.send(line(id=text, error={"code": 1, "message": "no"}))
    await peer.send(line(method=text))  # a notification the host does not know
    await sync()
    await peer.send(line(id=long, method=long))
    assert (await peer.recv())["error"]["code"] == -32601
    await peer.send(line(id=long, result={}))
    await sync()


async def run_hostile(text: str, **kwargs: Any) -> None:
    conn, peer = memory_connection(**kwargs)
    done = trio.Event()

    async def server() -> None:
        await hostile_peer(peer, text)
        done.set()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            async with conn:
                await done.wait()


def messages(events: list[dict[str, Any]], outcome: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "message" and e.get("outcome") == outcome]


async def test_each_peer_field_is_escaped_in_the_event() -> None:
    with capture_logs() as events:
        await run_hostile(HOSTILE)
    assert_safe(events)
    assert "\\u001b[2J" in ESCAPED
    assert "\\u2028" in ESCAPED
    during = [e for e in events if "before initialize completed" in e.get("reason", "")]
    assert [e["method"] for e in during] == [ESCAPED, ESCAPED]
    unmatched = messages(events, "response-unmatched")
    # the one read during the handshake, the two after it, and the long one
    assert [e["id"] for e in unmatched] == [ESCAPED, ESCAPED, ESCAPED, CUT]
    assert unmatched[1]["log_level"] == "warning"
    not_found = [e for e in events if e.get("reason") == "method not found"]
    assert [(e["id"], e["method"]) for e in not_found] == [(ESCAPED, ESCAPED), (CUT, CUT)]
    invalid = messages(events, "answered-invalid")
    assert [(e["id"], e["method"]) for e in invalid] == [(None, ESCAPED), (ESCAPED, None)]
    notes = [e for e in messages(events, "dispatched") if "id" not in e]
    assert [e["method"] for e in notes] == [ESCAPED]


async def test_a_long_id_or_method_is_cut_with_the_mark() -> None:
    with capture_logs() as events:
        await run_hostile("short")
    cut = [v for e in events for v in (e.get("id"), e.get("method")) if v == CUT]
    assert len(cut) == 3  # the request's id and method, the response's id
    assert utf16_len(CUT) == LOG_VALUE_LIMIT
    assert not any(LONG[:300] in text for e in events for text in strings(e))


async def test_a_secret_of_the_connection_in_peer_fields_is_masked() -> None:
    hostile = f"{HOSTILE}/{TOKEN}"
    with capture_logs() as events:
        await run_hostile(hostile, secrets=(TOKEN,))
    assert_safe(events, TOKEN)
    masked = log_value(HOSTILE) + "/" + REDACTION_MARK
    not_found = [e for e in events if e.get("reason") == "method not found"]
    assert (not_found[0]["id"], not_found[0]["method"]) == (masked, masked)
    assert messages(events, "response-unmatched")[1]["id"] == masked


def plain_renderer(_logger: Any, _name: str, event: dict[str, Any]) -> str:
    """What an embedder might write: key=value, each value as str() gives it."""
    return " ".join(f"{key}={value}" for key, value in event.items())


@contextmanager
def embedder_structlog() -> Iterator[io.StringIO]:
    """structlog as an application configures it, with none of the CLI's masking."""
    out = io.StringIO()
    saved, was_configured = structlog.get_config(), structlog.is_configured()
    structlog.configure(
        processors=[structlog.processors.add_log_level, plain_renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    try:
        yield out
    finally:
        if was_configured:
            structlog.configure(**saved)
        else:
            structlog.reset_defaults()


@pytest.mark.parametrize(
    "text",
    [HOSTILE, f"{HOSTILE}{TOKEN}", f"{TOKEN}\u2028"],
    ids=["escapes", "escapes-and-secret", "secret"],
)
async def test_an_embedders_own_structlog_never_sees_the_raw_text(text: str) -> None:
    with embedder_structlog() as out:
        await run_hostile(text, secrets=(TOKEN,))
    written = out.getvalue()
    assert "method not found" in written  # the events were rendered
    assert "\x1b" not in written
    assert "\x07" not in written
    assert "\u2028" not in written
    assert TOKEN not in written
    assert LONG[:300] not in written
    # one event, one line: nothing the peer sent ended a line or began another
    assert written.splitlines() == written.split("\n")[:-1]


async def test_a_server_requests_id_is_safe_in_the_responders_events() -> None:
    hostile = f"{HOSTILE}/{TOKEN}"
    masked = log_value(HOSTILE) + "/" + REDACTION_MARK
    started = trio.Event()

    async def crash(_request: ServerRequest) -> Any:
        raise RuntimeError("a bug")

    async def unencodable(_request: ServerRequest) -> Any:
        return {"x": object()}

    async def twice(request: ServerRequest) -> Any:
        await request.responder.respond({})
        await request.responder.respond({})  # refused

    async def slow(_request: ServerRequest) -> Any:
        started.set()
        await trio.sleep_forever()

    handlers = {"a/crash": crash, "a/bad": unencodable, "a/twice": twice, "a/slow": slow}
    with capture_logs() as events, trio.fail_after(5):
        async with connected(handlers=handlers, secrets=(TOKEN,)) as (_conn, peer, _nursery):
            for method in ("a/crash", "a/bad", "a/twice"):
                await peer.send(line(id=hostile, method=method))
                assert (await peer.recv())["id"] == hostile
            await peer.send(line(id=hostile, method="a/slow"))
            await started.wait()
            await peer.send(line(method="notifications/cancelled", params={"requestId": hostile}))
            await peer.send(line(id="sync", method="ping"))
            assert (await peer.recv())["id"] == "sync"
    assert_safe(events, TOKEN)
    shown = {e["event"]: e.get("request_id") for e in events if "request_id" in e}
    assert shown == {
        "handler failed": masked,
        "handler result not encodable": masked,
        "second answer refused": masked,
        "server request cancelled": masked,
    }


async def test_advertised_capability_names_are_safe_in_the_grant_event() -> None:
    granted = trio.Event()

    def on_event(event: Event) -> None:
        if isinstance(event, McplGrantChanged):
            granted.set()

    tree = {"version": "0.5", HOSTILE: True, TOKEN: True, LONG: True}
    conn, peer = memory_connection(mcpl=Mcpl(grants=("*",)), secrets=(TOKEN,), on_event=on_event)
    with capture_logs() as events, trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            init = await peer.expect("initialize")
            capabilities = {"experimental": {"mcpl": tree}}
            await peer.send(
                line(
                    id=init["id"],
                    result={"protocolVersion": "2025-11-25", "capabilities": capabilities},
                )
            )
            await peer.expect("notifications/initialized")
            update = await peer.expect("featureSets/update")
            await peer.send(line(id=update["id"], result={"accepted": True}))
            await granted.wait()
            await conn.aclose()
    assert_safe(events, TOKEN)
    grant = next(e for e in events if e["event"] == "grant")
    assert sorted(grant["granted"]) == sorted([ESCAPED, REDACTION_MARK, CUT])
