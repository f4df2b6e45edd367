"""Servers that answer late, concurrently, in floods, with requests of their own or with
made-up revisions: the checker's verdicts stay right and its probes never break down.
(Each test was written by a review against the first version, and failed on it.)"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from mcpl_host.check import Opener, check
from mcpl_host.check.context import CheckOptions
from mcpl_host.demo import Session, answer_line
from mcpl_host.protocol.framing import LineDecoder
from mcpl_host.transports import Transport
from mcpl_host.transports.memory import StreamTransport

from .servers import Fault, rewrite, run, verdict

pytestmark = pytest.mark.timeout(10)

_ENCODER = msgspec.json.Encoder()


# --- a concurrent server: the demo, each request handled in a task of its own --------------
async def _serve_concurrently(stream: trio.abc.Stream, delay: Callable[[Any], float]) -> None:
    """The demo server, except that a request ``delay(message)`` says is slow is handled
    in a task of its own and answered that many seconds later, while the next lines are
    served at once: a server that handles requests concurrently, as the SDKs do."""
    session = Session()
    decoder = LineDecoder()
    lock = trio.Lock()

    async def write(answer: Any) -> None:
        if answer is not None:
            async with lock:
                await stream.send_all(_ENCODER.encode(answer) + b"\n")

    async def later(line: bytes, seconds: float) -> None:
        await trio.sleep(seconds)
        await write(answer_line(line, session))

    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        async with trio.open_nursery() as nursery:
            while data := await stream.receive_some(65536):
                for line in decoder.feed(data):
                    if not isinstance(line, bytes | bytearray):
                        continue
                    try:
                        message = msgspec.json.decode(line)
                    except msgspec.DecodeError:
                        message = None
                    seconds = delay(message)
                    if seconds:
                        nursery.start_soon(later, bytes(line), seconds)
                    else:
                        await write(answer_line(bytes(line), session))
            nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def _concurrent(delay: Callable[[Any], float]) -> AsyncIterator[Opener]:
    async with trio.open_nursery() as nursery:

        async def open_one() -> Transport:
            host, peer = trio.testing.memory_stream_pair()
            nursery.start_soon(_serve_concurrently, peer, delay)
            return StreamTransport(host, "concurrent")

        yield open_one
        nursery.cancel_scope.cancel()


def _slow(method: str, seconds: float) -> Callable[[Any], float]:
    def delay(message: Any) -> float:
        is_it = isinstance(message, dict) and message.get("method") == method
        return seconds if is_it and "id" in message else 0.0

    return delay


async def _check(delay: Callable[[Any], float], *only: str) -> Any:
    async with _concurrent(delay) as opener:
        with trio.fail_after(8):
            return await check(opener, only=only, options=CheckOptions(timeout=1.0))


# --- 1. the fence waits only GRACE (0.25 s) for a request whose id it could wait for ------
async def test_initialized_passes_when_tools_list_is_answered_after_the_fence() -> None:
    # basic/lifecycle (2024-11-05 on): after initialized, "the client and server exchange
    # messages according to the negotiated capabilities"; JSON-RPC 2.0 sets no order on
    # responses ("The Server MAY process a batch rpc call as a set of concurrent tasks,
    # processing them in any order"), and MCP sets no deadline but the client's timeout.
    # A server that answers ping at once and tools/list 0.5 s later (well within the
    # 1 s timeout) served tools/list; the probe says it did not.
    report = await _check(_slow("tools/list", 0.5), "lifecycle.initialized")
    finding = report.findings[0]
    assert verdict(report, "lifecycle.initialized") == "pass", finding.detail


async def test_unknown_method_error_after_the_fence_is_still_its_answer() -> None:
    # basic#responses: "Responses MUST include the same ID as the request they
    # correspond to"; nothing asks them to come before a later request's. The -32601
    # comes 0.5 s after the request (1 s timeout), after the ping behind it.
    report = await _check(_slow("mcpl-host-check/no-such-method", 0.5), "envelope.unknown-method")
    finding = report.findings[0]
    assert verdict(report, "envelope.unknown-method") == "pass", finding.detail


# --- 2. answer() gives up after 1000 lines, holding them all -------------------------------
class _ChattyPing(Fault):
    """Logs 1100 notifications/message before each ping's answer (all at once)."""

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        if b'"ping"' not in line or self.session.version is None:
            return answers
        log = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "debug", "data": "pinged"},
        }
        return [_ENCODER.encode(log)] * 1100 + answers


async def test_ping_answered_after_many_log_messages_is_answered() -> None:
    # basic/utilities/logging: a server with the logging capability sends
    # notifications/message at will; basic/utilities/ping: "The receiver MUST respond
    # promptly with an empty response" -- it did, within a few ms. Wire.answer reads
    # through received_within(limit=1000), so line 1101 is never read: "no answer".
    with trio.fail_after(5):
        report = await run(_ChattyPing, "lifecycle.ping-after-initialize")
    finding = report.findings[0]
    assert verdict(report, "lifecycle.ping-after-initialize") == "pass", finding.detail


# --- 3. (moved: tests/test_demo_server.py, a notification with params of the wrong type)


# --- 4. a 2026-07-28-only server refusing initialize, as its revision says, fails ----------
async def _serve_modern_only(stream: trio.abc.Stream) -> None:
    from .modern_server import answer_modern  # noqa: PLC0415

    decoder = LineDecoder()
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while data := await stream.receive_some(65536):
            for line in decoder.feed(data):
                if not isinstance(line, bytes | bytearray):
                    continue
                message = msgspec.json.decode(line)
                _, answer = answer_modern(message) if isinstance(message, dict) else (0, None)
                if answer is not None:
                    await stream.send_all(_ENCODER.encode(answer) + b"\n")


async def test_a_modern_only_server_refusing_initialize_is_not_failed() -> None:
    # 2026-07-28 basic/versioning, compatibility matrix, Legacy client / Modern server:
    # "stdio: the server rejects `initialize` with a JSON-RPC error; the exact code is
    # implementation-defined". So a 2026-07-28-only server that answers initialize with
    # an error does what its revision asks: initialize-newest does not apply (as it is
    # judged when the same server stays silent), it does not fail.
    async with trio.open_nursery() as nursery:

        async def open_one() -> Transport:
            host, peer = trio.testing.memory_stream_pair()
            nursery.start_soon(_serve_modern_only, peer)
            return StreamTransport(host, "modern-only")

        with trio.fail_after(8):
            report = await check(
                open_one,
                only=("lifecycle.initialize-newest",),
                options=CheckOptions(timeout=1.0),
            )
        nursery.cancel_scope.cancel()
    assert report.facts is not None
    assert report.facts.modern
    assert report.facts.version is None
    finding = report.findings[0]
    assert verdict(report, "lifecycle.initialize-newest") == "n/a", finding.detail


# --- 5. the checker never answers the server's own requests (a ping with a string id) ------
class _PingsTheClient(Fault):
    """After the initialized notification, pings the client (a string id) and serves
    what comes next once the client has answered it: a server that checks its peer is
    alive before it goes on. Nothing is dropped: the answers wait for the pong."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.waiting = False
        self.held: list[bytes] = []

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        try:
            message = msgspec.json.decode(line)
        except msgspec.DecodeError:
            message = None
        if isinstance(message, dict) and message.get("method") == "notifications/initialized":
            self.waiting = True
            ping = {"jsonrpc": "2.0", "id": "server-ping-1", "method": "ping"}
            return [*answers, _ENCODER.encode(ping)]
        if not self.waiting:
            return answers
        if isinstance(message, dict) and message.get("id") == "server-ping-1":
            self.waiting = False
            held, self.held = self.held, []
            return held + answers
        self.held += answers
        return []


async def test_a_server_that_pings_the_client_is_answered() -> None:
    # basic/utilities/ping (2024-11-05 on): "Either party can send a ping request";
    # "The receiver MUST respond promptly with an empty response". The checker is the
    # receiver of the server's ping and never answers it, so a server that waits for
    # its pong is judged as if it had stopped answering.
    with trio.fail_after(5):
        report = await run(_PingsTheClient, "lifecycle.ping-after-initialize")
    finding = report.findings[0]
    assert verdict(report, "lifecycle.ping-after-initialize") == "pass", finding.detail


# --- 6. a borrowed session goes back to the pool with an answer still on its way ----------
async def test_a_late_answer_from_one_probe_does_not_judge_the_next() -> None:
    # basic#notifications: "The receiver MUST NOT send a response" -- this server never
    # answers a notification. It answers the string-id ping of envelope.string-id late
    # (0.45 s, within the 1 s timeout); the session goes back to the pool, and the next
    # probe that borrows it reads that answer as one to its notifications. The probes
    # are run one after the other on one Context, as a run does when they queue.
    from mcpl_host.check.context import Context  # noqa: PLC0415
    from mcpl_host.check.envelope import notification_unanswered, string_id  # noqa: PLC0415
    from mcpl_host.protocol.redact import Redactor  # noqa: PLC0415

    def delay(message: Any) -> float:
        is_ping = isinstance(message, dict) and message.get("method") == "ping"
        return 0.45 if is_ping and isinstance(message.get("id"), str) else 0.0

    rules = frozenset({"envelope.string-id", "envelope.notification-unanswered"})
    async with _concurrent(delay) as opener:
        ctx = Context(opener, Redactor(), CheckOptions(timeout=1.0), rules)
        with trio.fail_after(8):
            async with trio.open_nursery() as keepers:
                ctx.keepers = keepers
                await string_id(ctx)
                await notification_unanswered(ctx)
                ctx.done.set()
    finding = ctx.findings["envelope.notification-unanswered"]
    assert finding.verdict.value == "pass", finding.detail


# --- 7. initialize-newest passes any string as the revision answered --------------------
async def test_initialize_newest_does_not_pass_a_revision_that_is_no_revision() -> None:
    # basic/lifecycle#version-negotiation: "If the server supports the requested
    # protocol version, it MUST respond with the same version. Otherwise, the server
    # MUST respond with another protocol version it supports"; versioning: "The Model
    # Context Protocol uses string-based version identifiers following the format
    # YYYY-MM-DD". "banana" is no protocol version, and initialize-older and
    # initialize-future warn on an unknown one; initialize-newest passes it.
    def banana(request: Any, answer: Any) -> Any:
        if isinstance(request, dict) and request.get("method") == "initialize":
            answer["result"]["protocolVersion"] = "banana"
        return answer

    report = await run(rewrite(banana), "lifecycle.initialize-newest")
    finding = report.findings[0]
    assert verdict(report, "lifecycle.initialize-newest") != "pass", finding.detail


# --- 8. over HTTP, a revision answered with a non-ASCII character crashes every probe -----
async def test_a_non_ascii_revision_over_http_does_not_break_the_probes_down() -> None:
    # Peer text reaches an HTTP header unchecked: HttpWire.headers() sends
    # MCP-Protocol-Version: <the revision the server answered>, and httpx raises
    # UnicodeEncodeError (not an httpx.HTTPError) in the POST's task, so the probe
    # breaks down. A checker must judge what a broken server says (here: a revision
    # that is none, basic/lifecycle#version-negotiation), never crash on it.
    from mcpl_host import HttpTarget  # noqa: PLC0415

    from .http_server import HttpBehaviour, ReferenceServer  # noqa: PLC0415

    def accented(request: Any, answer: dict[str, Any]) -> dict[str, Any]:
        if isinstance(request, dict) and request.get("method") == "initialize":
            answer["result"]["protocolVersion"] = "2025-11-25\u00e9"
        return answer

    with ReferenceServer(HttpBehaviour(change=accented)) as server:
        with trio.fail_after(8):
            report = await check(
                HttpTarget(server.url),
                only=("lifecycle.ping-after-initialize",),
                options=CheckOptions(timeout=1.0),
            )
    finding = report.findings[0]
    assert "broke down" not in finding.detail, finding.detail
