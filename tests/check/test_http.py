"""HTTP rules against the reference Streamable HTTP server, each with the fault that
breaks it (tests/check/http_server.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import trio

from mcpl_host import HttpTarget
from mcpl_host.check import Report, check, httpwire
from mcpl_host.check.context import CheckOptions

from .http_server import HttpBehaviour, ReferenceServer, Reply, Request
from .modern_server import error
from .servers import Fault, run, verdict

HTTP_RULES = (
    "http.content-type",
    "http.notification-202",
    "http.accept",
    "http.origin",
    "http.origin-403",
    "http.session-id",
    "http.session-required",
    "http.session-unknown",
    "http.delete",
    "http.protocol-version-header",
    "http.protocol-version-absent",
    "http.get-stream",
    "http.sse-resumption",
)
SESSION_RULES = HTTP_RULES[5:]


async def run_http(
    behaviour: HttpBehaviour | None = None, *only: str, legacy: bool = True, sse: bool = True
) -> Report:
    with ReferenceServer(behaviour, legacy=legacy, sse=sse) as server:
        with trio.fail_after(60):
            return await check(
                HttpTarget(server.url), only=only or ("http",), options=CheckOptions(timeout=1.0)
            )


async def _run_http_quickly(behaviour: HttpBehaviour, *only: str, legacy: bool = True) -> Report:
    with ReferenceServer(behaviour, legacy=legacy) as server:
        with trio.fail_after(8):
            return await check(HttpTarget(server.url), only=only, options=CheckOptions(timeout=1.0))


def skipping(*checks: str) -> HttpBehaviour:
    return HttpBehaviour(skip=frozenset(checks))


def replying(change: Callable[[Request, Reply], Reply]) -> HttpBehaviour:
    return HttpBehaviour(reply=change)


def finding(report: Report, rule_id: str) -> Any:
    (found,) = [f for f in report.findings if f.rule.id == rule_id]
    return found


def sent(report: Report, rule_id: str) -> list[str]:
    return [line.text for line in finding(report, rule_id).evidence]


async def test_the_reference_server_passes_every_http_rule() -> None:
    report = await run_http()
    assert {f.rule.id: f.verdict.value for f in report.findings} == dict.fromkeys(
        HTTP_RULES, "pass"
    )
    assert "replayed 1 of the 1 event(s)" in finding(report, "http.sse-resumption").detail


async def test_json_answers_and_a_2026_07_28_only_server() -> None:
    report = await run_http(None, legacy=False)
    for rule_id in HTTP_RULES:
        expected = "n/a" if rule_id in SESSION_RULES else "pass"
        assert verdict(report, rule_id) == expected, rule_id
    report = await run_http(None, "http.content-type", sse=False)
    assert "application/json" in finding(report, "http.content-type").detail


async def test_http_rules_are_not_applicable_off_http() -> None:
    report = await run(Fault, "http")
    assert {f.verdict.value for f in report.findings} == {"n/a"}


async def test_content_type_and_notification_202() -> None:
    def plain_text(request: Request, reply: Reply) -> Reply:
        if reply.body is not None and reply.status == 200:
            reply.headers["Content-Type"] = "text/plain"
        return reply

    report = await run_http(replying(plain_text), "http.content-type", sse=False)
    assert verdict(report, "http.content-type") == "fail"
    assert "text/plain" in finding(report, "http.content-type").detail

    def answer_notifications(request: Request, reply: Reply) -> Reply:
        return Reply(200, body={}) if reply.status == 202 else reply

    report = await run_http(replying(answer_notifications), "http.notification-202")
    assert verdict(report, "http.notification-202") == "fail"
    assert "· POST → HTTP 200 (application/json)" in [
        f"{line.direction} {line.text}"
        for line in finding(report, "http.notification-202").evidence
    ]


async def test_accept_warns_when_served_anyway() -> None:
    report = await run_http(skipping("accept"), "http.accept")
    assert verdict(report, "http.accept") == "warn"
    assert "sent with Accept: text/html" in sent(report, "http.accept")


async def test_origin() -> None:
    report = await run_http(None, "http.origin")
    assert sent(report, "http.origin")[:3] == [
        "sent with Origin: http://attacker.example",
        '{"jsonrpc":"2.0","id":2,"method":"ping"}',
        "POST → HTTP 403 (application/json)",
    ]
    report = await run_http(skipping("origin"), "http.origin", "http.origin-403")
    assert verdict(report, "http.origin") == "fail"
    assert verdict(report, "http.origin-403") == "n/a"

    def bad_request(request: Request, reply: Reply) -> Reply:
        return Reply(400) if reply.status == 403 else reply

    report = await run_http(replying(bad_request), "http.origin", "http.origin-403")
    assert verdict(report, "http.origin") == "pass"
    assert verdict(report, "http.origin-403") == "fail"


async def test_a_server_that_serves_requests_without_its_session_id_is_not_warned() -> None:
    # basic/transports, "Session Management": "Servers that require a session ID SHOULD
    # respond to requests without an Mcp-Session-Id header (other than initialization)
    # with HTTP 400 Bad Request": a server that assigns one but serves without it does
    # not require one, and the SHOULD does not bind it.
    report = await run_http(skipping("session-required"), "http.session-required")
    found = finding(report, "http.session-required")
    assert found.verdict.value == "n/a", found.detail
    assert "sent without Mcp-Session-Id" in sent(report, "http.session-required")


async def test_a_server_that_requires_its_session_id_but_not_with_400_warns() -> None:
    def refuse_404(request: Request, reply: Reply) -> Reply:
        return Reply(404) if reply.status == 400 else reply

    report = await run_http(replying(refuse_404), "http.session-required")
    found = finding(report, "http.session-required")
    assert found.verdict.value == "warn", found.detail
    assert "404" in found.detail


async def test_session_id_rules() -> None:
    spaced = HttpBehaviour(session_id=lambda: "a session id")
    report = await run_http(spaced, "http.session-id")
    assert verdict(report, "http.session-id") == "fail"
    report = await run_http(HttpBehaviour(), "http.session-required")
    assert verdict(report, "http.session-required") == "pass"
    assert "sent without Mcp-Session-Id" in sent(report, "http.session-required")
    report = await run_http(skipping("session-unknown"), "http.session-unknown")
    assert verdict(report, "http.session-unknown") == "fail"


async def test_delete() -> None:
    report = await run_http(skipping("delete"), "http.delete")
    assert verdict(report, "http.delete") == "fail"

    def no_delete(request: Request, reply: Reply) -> Reply:
        return Reply(405) if request.verb == "DELETE" else reply

    report = await run_http(replying(no_delete), "http.delete")
    assert verdict(report, "http.delete") == "n/a"


async def test_protocol_version_header() -> None:
    report = await run_http(skipping("version-header"), "http.protocol-version-header")
    assert verdict(report, "http.protocol-version-header") == "fail"

    def needs_header(request: Request, reply: Reply) -> Reply:
        if (
            request.verb == "POST"
            and "mcp-session-id" in request.headers
            and "mcp-protocol-version" not in request.headers
        ):
            return Reply(400)
        return reply

    report = await run_http(replying(needs_header), "http.protocol-version-absent")
    assert verdict(report, "http.protocol-version-absent") == "warn"


async def test_get_stream_and_resumption() -> None:
    def no_get(request: Request, reply: Reply) -> Reply:
        return Reply(400) if request.verb == "GET" else reply

    report = await run_http(replying(no_get), "http.get-stream")
    assert verdict(report, "http.get-stream") == "fail"
    report = await run_http(skipping("resume"), "http.sse-resumption")
    assert verdict(report, "http.sse-resumption") == "fail"
    assert "sent before" in finding(report, "http.sse-resumption").detail

    def refuse_get(request: Request, reply: Reply) -> Reply:
        return Reply(405) if request.verb == "GET" else reply

    report = await run_http(
        replying(refuse_get), "http.get-stream", "http.sse-resumption", sse=False
    )
    assert verdict(report, "http.get-stream") == "pass"
    assert verdict(report, "http.sse-resumption") == "n/a"


async def test_answers_of_the_wrong_shape_get_verdicts_not_breakdowns() -> None:
    def hostile(request: Request, reply: Reply) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if body.get("method") in ("initialize", "server/discover", "notifications/initialized"):
            return reply
        if request.verb == "GET":
            return Reply(200, headers={"Content-Type": "text/event-stream"}, events=[("x", "[1]")])
        return Reply(200, body=[1, {"id": None}], headers={"Mcp-Session-Id": "\t"})

    report = await run_http(replying(hostile))
    assert all("broke down" not in f.detail for f in report.findings), report.findings
    assert verdict(report, "http.origin") == "fail"


async def test_what_an_event_stream_is_read_for_is_bounded_in_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bound is lowered so that the test is fast: 64 KiB kept, 40 events of 4 KiB.
    monkeypatch.setattr(httpwire, "KEPT_BYTES", 64 * 1024)

    def chatty_get(request: Request, reply: Reply) -> Reply:
        if request.verb == "GET":
            return Reply(200, events=[(None, "x" * 4096) for _ in range(40)], hold=True)
        return reply

    report = await run_http(replying(chatty_get), "http.get-stream")
    lines = sent(report, "http.get-stream")
    assert verdict(report, "http.get-stream") == "pass"
    assert sum(1 for line in lines if line.startswith("x")) <= 16
    assert any("the rest unread" in line for line in lines)


# --- http.get-stream: the GET's headers get the timeout ---------------------------------
async def test_a_get_answered_405_after_half_a_second_passes() -> None:
    # basic/transports (2025-03-26), "Listening for Messages from the Server": "The server
    # MUST either return Content-Type: text/event-stream in response to this HTTP GET, or
    # else return HTTP 405 Method Not Allowed". A 405 that takes 0.5 s (timeout 1.0) is
    # that answer: the GET's headers get the timeout, and the short grace bounds only
    # the reading of its events.
    def slow_405(request: Request, reply: Reply) -> Reply:
        if request.verb == "GET":
            time.sleep(0.5)
            return Reply(405)
        return reply

    report = await _run_http_quickly(HttpBehaviour(reply=slow_405), "http.get-stream")
    found = finding(report, "http.get-stream")
    assert found.verdict.value == "pass", found.detail


# --- utilities.cancellation over HTTP: a refusal of the POST is not an answer -----------
async def test_a_cancellation_refused_at_the_http_level_is_not_an_answer() -> None:
    # basic/transports (2025-03-26), "Sending Messages to the Server": for a POST of only
    # notifications, "If the server cannot accept the input, it MUST return an HTTP
    # error status code (e.g., 400 Bad Request). The HTTP response body MAY comprise a
    # JSON-RPC error response that has no id." That body is the transport's refusal of
    # the POST, not a JSON-RPC response to the notification, and is not counted as one.
    def refuse_cancellations(request: Request, reply: Reply) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if body.get("method") == "notifications/cancelled":
            return Reply(400, body=error(None, -32600, "Bad Request: cancellation refused"))
        return reply

    report = await _run_http_quickly(
        HttpBehaviour(reply=refuse_cancellations), "utilities.cancellation"
    )
    found = finding(report, "utilities.cancellation")
    assert found.verdict.value == "pass", found.detail


async def test_no_cancellation_notification_is_judged_on_a_2026_07_28_http_server() -> None:
    # 2026-07-28 basic/transports/streamable-http, "Sending Messages": "This revision of
    # the core protocol defines no client-to-server notifications over Streamable HTTP.
    # The only client-sent notification in the core protocol, notifications/cancelled,
    # is used only on the stdio transport; on Streamable HTTP, closing the SSE response
    # stream is itself the cancellation signal", and a notification the server cannot
    # accept "MUST return an HTTP error status code (e.g., 400 Bad Request). The HTTP
    # response body MAY comprise a JSON-RPC error response that has no id."
    # utilities.cancellation is n/a there.
    def refuse_notifications(request: Request, reply: Reply) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if request.verb == "POST" and "method" in body and "id" not in body:
            return Reply(400, body=error(None, -32600, "no notifications over HTTP"))
        return reply

    report = await _run_http_quickly(
        HttpBehaviour(reply=refuse_notifications), "utilities.cancellation", legacy=False
    )
    found = finding(report, "utilities.cancellation")
    assert found.verdict.value != "fail", found.detail
