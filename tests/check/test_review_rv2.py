"""Review rv2 (issue 23): the HTTP, modern, utilities and content probes. Each test
shows one defect: it fails now, for the reason its comment gives (with the spec's words).
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pytest
import trio

from mcpl_host import HttpTarget
from mcpl_host.check import Report, check
from mcpl_host.check import listing as listing_module
from mcpl_host.check.context import CheckOptions
from mcpl_host.demo import TOOLS

from .http_server import HttpBehaviour, ReferenceServer, Reply, Request
from .modern_server import error
from .servers import Fault, rewrite, run

pytestmark = pytest.mark.timeout(10)


def _finding(report: Report, rule_id: str) -> Any:
    (found,) = [f for f in report.findings if f.rule.id == rule_id]
    return found


async def _run_http(behaviour: HttpBehaviour, *only: str, legacy: bool = True) -> Report:
    with ReferenceServer(behaviour, legacy=legacy) as server:
        with trio.fail_after(8):
            return await check(HttpTarget(server.url), only=only, options=CheckOptions(timeout=1.0))


# --- http.get-stream: the GET's headers get 0.3 s, not the timeout ----------------------
async def test_a_get_answered_405_after_half_a_second_passes() -> None:
    # basic/transports (2025-03-26), "Listening for Messages from the Server": "The server
    # MUST either return Content-Type: text/event-stream in response to this HTTP GET, or
    # else return HTTP 405 Method Not Allowed". A 405 that takes 0.5 s (timeout 1.0) is
    # that answer; http_stream.py reads the whole GET, headers included, within
    # min(_GET_GRACE, timeout) = 0.3 s and reports "no HTTP answer".
    def slow_405(request: Request, reply: Reply) -> Reply:
        if request.verb == "GET":
            time.sleep(0.5)
            return Reply(405)
        return reply

    report = await _run_http(HttpBehaviour(reply=slow_405), "http.get-stream")
    found = _finding(report, "http.get-stream")
    assert found.verdict.value == "pass", found.detail


# --- utilities.cancellation over HTTP: a transport refusal read as an answer -------------
async def test_a_cancellation_refused_at_the_http_level_is_not_an_answer() -> None:
    # basic/transports (2025-03-26), "Sending Messages to the Server": for a POST of only
    # notifications, "If the server cannot accept the input, it MUST return an HTTP
    # error status code (e.g., 400 Bad Request). The HTTP response body MAY comprise a
    # JSON-RPC error response that has no id." That body is the transport's refusal of
    # the POST, not a JSON-RPC response to the notification; utilities.settle counts it
    # as a stray response and fails the rule "answered a cancellation".
    def refuse_cancellations(request: Request, reply: Reply) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if body.get("method") == "notifications/cancelled":
            return Reply(400, body=error(None, -32600, "Bad Request: cancellation refused"))
        return reply

    report = await _run_http(HttpBehaviour(reply=refuse_cancellations), "utilities.cancellation")
    found = _finding(report, "utilities.cancellation")
    assert found.verdict.value == "pass", found.detail


async def test_no_cancellation_notification_is_judged_on_a_2026_07_28_http_server() -> None:
    # 2026-07-28 basic/transports/streamable-http, "Sending Messages": "This revision of
    # the core protocol defines no client-to-server notifications over Streamable HTTP.
    # The only client-sent notification in the core protocol, notifications/cancelled,
    # is used only on the stdio transport; on Streamable HTTP, closing the SSE response
    # stream is itself the cancellation signal", and a notification the server cannot
    # accept "MUST return an HTTP error status code (e.g., 400 Bad Request). The HTTP
    # response body MAY comprise a JSON-RPC error response that has no id."
    # utilities.cancellation POSTs notifications/cancelled to a 2026-07-28-only HTTP
    # server anyway and fails it for that refusal.
    def refuse_notifications(request: Request, reply: Reply) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if request.verb == "POST" and "method" in body and "id" not in body:
            return Reply(400, body=error(None, -32600, "no notifications over HTTP"))
        return reply

    report = await _run_http(
        HttpBehaviour(reply=refuse_notifications), "utilities.cancellation", legacy=False
    )
    found = _finding(report, "utilities.cancellation")
    assert found.verdict.value != "fail", found.detail


# --- pagination: the checker's own page bound is judged as the server's failure -----------
def _one_tool_a_page(request: Any, answer: Any) -> Any:
    """tools/list served one tool a page (cursor: the index of the next tool)."""
    if not isinstance(request, dict) or request.get("method") != "tools/list":
        return answer
    params = request.get("params") or {}
    cursor = params.get("cursor", "0")
    if not cursor.isdigit():
        return {"jsonrpc": "2.0", "id": answer["id"], "error": {"code": -32602, "message": "?"}}
    start = int(cursor)
    result: dict[str, Any] = {"tools": TOOLS[start : start + 1]}
    if start + 1 < len(TOOLS):
        result["nextCursor"] = str(start + 1)
    return {"jsonrpc": "2.0", "id": answer["id"], "result": result}


async def test_a_list_longer_than_the_page_bound_is_not_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # server/utilities/pagination (2024-11-05): a server may split a list into as many
    # pages as it likes ("The page size is determined by the server"); a list that still
    # has a nextCursor after MAX_PAGES (1000) pages, with no cursor repeated, is not shown
    # to loop. listing.py stops there with a `problem`, and the probes turn it into a
    # FAIL of a MUST, though rules.Verdict says a MUST the probe could not settle warns.
    # (The bound is lowered here so that the test is fast: 8 tools, 3 pages.)
    monkeypatch.setattr(listing_module, "MAX_PAGES", 3)
    report = await run(rewrite(_one_tool_a_page), "utilities.pagination", "content.list-shapes")
    for rule_id in ("utilities.pagination", "content.list-shapes"):
        found = _finding(report, rule_id)
        assert found.verdict.value != "fail", (rule_id, found.detail)


# --- content.undeclared-capabilities: 2024-11-05 has no completions capability ------------
def _no_completions_capability(request: Any, answer: Any) -> Any:
    if isinstance(request, dict) and request.get("method") == "initialize":
        answer["result"]["capabilities"].pop("completions", None)
    return answer


async def test_completion_served_without_a_capability_on_2024_11_05_is_right() -> None:
    # 2024-11-05's ServerCapabilities has no `completions` (schema/2024-11-05; the
    # capability came in 2025-03-26: "Added completions capability"), and its
    # server/utilities/completion page asks for none: a 2024-11-05 server serves
    # completion/complete without declaring anything. capabilities.py asks every server
    # to refuse it with -32601 unless `completions` is declared, and warns.
    report = await run(
        rewrite(_no_completions_capability),
        "content.undeclared-capabilities",
        versions=("2024-11-05",),
    )
    found = _finding(report, "content.undeclared-capabilities")
    assert found.verdict.value != "warn", found.detail


# --- a call that reports progress often: 1000 lines end the wait ----------------------------
class ManyProgressNotes(Fault):
    """Before a tools/call's result, 1200 progress notifications for its token (a tool
    working through 1200 items), all within a few milliseconds."""

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        message = msgspec.json.decode(line)
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return answers
        token = message["params"]["_meta"]["progressToken"]
        notes = [
            msgspec.json.encode(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": n, "total": 1200},
                }
            )
            for n in range(1, 1201)
        ]
        return [*notes, *answers]


async def test_a_call_with_many_progress_notifications_is_answered() -> None:
    # basic/utilities/progress: "The receiver MAY send progress notifications" as often
    # as it likes while the request is in flight (each with a rising progress), and the
    # result follows. listing.exchange reads with Wire.received_within(limit=1000):
    # the 1000th line ends the wait at once, long before the timeout, and the call is
    # reported unanswered ("no answer within 1 s"), its result left for the next read.
    report = await run(
        ManyProgressNotes, "content.structured-content", calls=[("add", {"a": 1, "b": 2})]
    )
    found = _finding(report, "content.structured-content")
    assert found.verdict.value == "pass", found.detail


# --- content.tool-schemas: what the checker cannot compile is judged invalid -------------
def _remote_ref(request: Any, answer: Any) -> Any:
    if isinstance(request, dict) and request.get("method") == "tools/list":
        tool = answer["result"]["tools"][0]
        tool["inputSchema"] = {
            "type": "object",
            "properties": {"where": {"$ref": "https://example.com/schemas/place.json"}},
        }
    return answer


async def test_a_schema_with_a_remote_ref_is_not_judged_invalid() -> None:
    # server/tools#tool: inputSchema is "A JSON Schema object defining the expected
    # parameters"; a `$ref` to another document is JSON Schema 2020-12 (Core 8.2.3.1), so
    # the schema is valid. The checker never fetches it (client/schema.py refuses it with
    # UnsupportedSchema), and content.py turns its own refusal into a FAIL of the MUST
    # "not a usable JSON Schema": a rule it could not settle, which warns.
    report = await run(rewrite(_remote_ref), "content.tool-schemas")
    found = _finding(report, "content.tool-schemas")
    assert found.verdict.value != "fail", found.detail
