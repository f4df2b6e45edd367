"""Utilities rules (cancellation, progress, pagination, logging, completion) against the
demo server, each with the fault that breaks it."""

from __future__ import annotations

import sys
from typing import Any

import msgspec
import pytest
import trio

from mcpl_host.check import check
from mcpl_host.check import listing as listing_module
from mcpl_host.check.context import CheckOptions
from mcpl_host.demo import TOOLS
from mcpl_host.transports.targets import StdioTarget

from .servers import Fault, rewrite, run, verdict

ADD = [("add", {"a": 1, "b": 2})]


def _decode(line: bytes) -> Any:
    try:
        return msgspec.json.decode(line)
    except msgspec.DecodeError:
        return None


def _method(line: bytes) -> Any:
    message = _decode(line)
    return message.get("method") if isinstance(message, dict) else None


def _params(line: bytes) -> dict[str, Any]:
    message = _decode(line)
    params = message.get("params") if isinstance(message, dict) else None
    return params if isinstance(params, dict) else {}


def _finding(report: Any, rule_id: str) -> Any:
    (finding,) = [f for f in report.findings if f.rule.id == rule_id]
    return finding


def _notification(method: str, params: dict[str, Any]) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "method": method, "params": params})


# --- cancellation ---------------------------------------------------------------------
class AnswersCancellation(Fault):
    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        if _method(line) == "notifications/cancelled":
            error = {"code": -32601, "message": "Method not found"}
            return [*answers, msgspec.json.encode({"jsonrpc": "2.0", "id": None, "error": error})]
        return answers


async def test_cancellation_passes_on_the_demo_server_with_a_call() -> None:
    report = await run(Fault, "utilities.cancellation", calls=ADD)
    finding = _finding(report, "utilities.cancellation")
    assert finding.verdict.value == "pass", finding.detail
    sent = [line.text for line in finding.evidence if line.direction == "→"]
    assert any('"notifications/cancelled"' in s and "never-sent" in s for s in sent)
    assert any('"tools/call"' in s for s in sent)


async def test_cancellation_fails_when_the_notification_is_answered() -> None:
    report = await run(AnswersCancellation, "utilities.cancellation")
    finding = _finding(report, "utilities.cancellation")
    assert finding.verdict.value == "fail"
    assert any(line.direction == "←" and '"id":null' in line.text for line in finding.evidence)


class FallsSilent(Fault):
    """Answers nothing once it read a line with ``after`` in it."""

    after = b'"notifications/cancelled"'

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self.silent = False

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        self.silent = self.silent or self.after in line
        return [] if self.silent else answers


class BusyAfterACall(FallsSilent):
    after = b'"tools/call"'


async def test_cancellation_fails_when_the_server_stops_answering() -> None:
    report = await run(FallsSilent, "utilities.cancellation", timeout=0.3)
    finding = _finding(report, "utilities.cancellation")
    assert finding.verdict.value == "fail"
    assert "no longer answers" in finding.detail


async def test_cancellation_of_a_call_warns_when_the_server_stays_busy() -> None:
    report = await run(BusyAfterACall, "utilities.cancellation", timeout=0.3, calls=ADD)
    finding = _finding(report, "utilities.cancellation")
    assert finding.verdict.value == "warn"
    assert "may still be running" in finding.detail


# --- progress -------------------------------------------------------------------------
def _progress_fault(make: Any) -> type[Fault]:
    """Before a list request's answer, the progress notifications ``make(token)``."""

    class Progress(Fault):
        def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
            meta = _params(line).get("_meta")
            token = meta.get("progressToken") if isinstance(meta, dict) else None
            if token is None or _method(line) == "tools/call":
                return answers
            notes = [_notification("notifications/progress", p) for p in make(token)]
            return [*notes, *answers]

    return Progress


async def test_progress_is_not_applicable_without_progress() -> None:
    report = await run(Fault, "utilities.progress")
    finding = _finding(report, "utilities.progress")
    assert finding.verdict.value == "n/a"
    assert "no progress" in finding.detail


async def test_progress_passes_with_the_token_given_and_rising() -> None:
    fault = _progress_fault(
        lambda t: [{"progressToken": t, "progress": 1}, {"progressToken": t, "progress": 2.5}]
    )
    report = await run(fault, "utilities.progress")
    finding = _finding(report, "utilities.progress")
    assert finding.verdict.value == "pass", finding.detail
    assert all("notifications/progress" in line.text for line in finding.evidence)


async def test_progress_fails_with_another_token() -> None:
    fault = _progress_fault(lambda t: [{"progressToken": f"{t}-other", "progress": 1}])
    report = await run(fault, "utilities.progress")
    finding = _finding(report, "utilities.progress")
    assert finding.verdict.value == "fail"
    assert "not one of a request in flight" in finding.detail


async def test_progress_fails_when_it_falls() -> None:
    fault = _progress_fault(
        lambda t: [{"progressToken": t, "progress": 2}, {"progressToken": t, "progress": 1}]
    )
    report = await run(fault, "utilities.progress")
    assert verdict(report, "utilities.progress") == "fail"


async def test_progress_of_a_called_tool_over_stdio() -> None:
    target = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])
    options = CheckOptions(timeout=5.0, calls=[("countdown", {"steps": 3, "delay": 0.01})])
    with trio.fail_after(30):
        report = await check(target, only=["utilities.progress"], options=options)
    finding = _finding(report, "utilities.progress")
    assert finding.verdict.value == "pass", finding.detail
    assert len(finding.evidence) == 3
    assert '"mcpl-host-check-call-1"' in finding.evidence[0].text


# --- pagination -----------------------------------------------------------------------
def _paged(next_of: Any) -> type[Fault]:
    """tools/list in pages of one tool: ``next_of(page)`` is the page's nextCursor."""

    class Paged(Fault):
        def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
            if _method(line) != "tools/list":
                return answers
            cursor = _params(line).get("cursor")
            if cursor is not None and not str(cursor).startswith("page-"):
                return answers  # the demo's own refusal
            page = int(str(cursor or "page-0")[5:])
            result: dict[str, Any] = {"tools": TOOLS[page % len(TOOLS) : page % len(TOOLS) + 1]}
            following = next_of(page)
            if following is not None:
                result["nextCursor"] = following
            message = _decode(line)
            return [msgspec.json.encode({"jsonrpc": "2.0", "id": message["id"], "result": result})]

    return Paged


async def test_pagination_passes_on_the_demo_server_and_through_pages() -> None:
    report = await run(Fault, "utilities.pagination", "utilities.invalid-cursor")
    assert verdict(report, "utilities.pagination") == "pass"
    assert verdict(report, "utilities.invalid-cursor") == "pass"
    fault = _paged(lambda page: f"page-{page + 1}" if page + 1 < len(TOOLS) else None)
    report = await run(fault, "utilities.pagination")
    finding = _finding(report, "utilities.pagination")
    assert finding.verdict.value == "pass", finding.detail
    assert f"{len(TOOLS) + 3} pages" in finding.detail


async def test_pagination_fails_on_a_repeated_cursor() -> None:
    report = await run(_paged(lambda page: "page-1"), "utilities.pagination")
    finding = _finding(report, "utilities.pagination")
    assert finding.verdict.value == "fail"
    assert "repeats an earlier cursor" in finding.detail


async def test_pagination_fails_on_a_duplicate() -> None:
    # Pages 0 and len(TOOLS) hold the same tool.
    fault = _paged(lambda page: f"page-{page + 1}" if page < len(TOOLS) else None)
    report = await run(fault, "utilities.pagination")
    finding = _finding(report, "utilities.pagination")
    assert finding.verdict.value == "fail"
    assert '"echo"' in finding.detail
    assert "twice" in finding.detail


async def test_invalid_cursor_warns_when_served_a_page() -> None:
    def ignore_cursor(request: Any, answer: Any) -> Any:
        if "cursor" in (request.get("params") or {}):
            return {"jsonrpc": "2.0", "id": answer["id"], "result": {"tools": []}}
        return answer

    report = await run(rewrite(ignore_cursor), "utilities.invalid-cursor")
    finding = _finding(report, "utilities.invalid-cursor")
    assert finding.verdict.value == "warn"
    assert [line.direction for line in finding.evidence] == ["→", "←"]
    assert "mcpl-host-check-invalid" in finding.evidence[0].text


# --- logging --------------------------------------------------------------------------
LOGGING = ("utilities.logging", "utilities.log-level-filter", "utilities.invalid-log-level")


def _on(method: str, change: Any) -> Any:
    def changed(request: Any, answer: Any) -> Any:
        if isinstance(request, dict) and request.get("method") == method:
            return change(request, answer)
        return answer

    return rewrite(changed)


async def test_logging_passes_on_the_demo_server() -> None:
    report = await run(Fault, *LOGGING, calls=ADD)
    for rule_id in LOGGING:
        assert verdict(report, rule_id) == "pass", rule_id
    assert "during 1 tool calls" in _finding(report, "utilities.log-level-filter").detail


async def test_logging_is_not_applicable_without_the_capability() -> None:
    def undeclare(request: Any, answer: Any) -> Any:
        del answer["result"]["capabilities"]["logging"]
        return answer

    report = await run(_on("initialize", undeclare), *LOGGING)
    for rule_id in LOGGING:
        assert verdict(report, rule_id) == "n/a"


async def test_logging_fails_when_set_level_answers_otherwise() -> None:
    def result(request: Any, answer: Any) -> Any:
        if request["params"]["level"] == "debug":
            return {"jsonrpc": "2.0", "id": answer["id"], "result": {"level": "debug"}}
        return answer

    report = await run(_on("logging/setLevel", result), *LOGGING)
    finding = _finding(report, "utilities.logging")
    assert finding.verdict.value == "fail"
    assert finding.detail == "level 'debug' was answered with a result other than {}"
    assert verdict(report, "utilities.invalid-log-level") == "pass"


async def test_an_unknown_level_accepted_warns() -> None:
    def accept(request: Any, answer: Any) -> Any:
        return {"jsonrpc": "2.0", "id": answer["id"], "result": {}}

    report = await run(_on("logging/setLevel", accept), *LOGGING)
    assert verdict(report, "utilities.logging") == "pass"
    finding = _finding(report, "utilities.invalid-log-level")
    assert finding.verdict.value == "warn"
    assert '"loud"' in finding.evidence[0].text


class LogsBelowTheLevel(Fault):
    """An info message before every ping's answer, whatever the level."""

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        if _method(line) == "ping":
            note = _notification("notifications/message", {"level": "info", "data": "hi"})
            return [note, *answers]
        return answers


async def test_messages_below_the_level_warn() -> None:
    report = await run(LogsBelowTheLevel, *LOGGING)
    finding = _finding(report, "utilities.log-level-filter")
    assert finding.verdict.value == "warn"
    assert [line.direction for line in finding.evidence] == ["←"]
    assert '"info"' in finding.evidence[0].text


# --- completion -----------------------------------------------------------------------
async def test_completion_passes_on_the_demo_server() -> None:
    report = await run(Fault, "utilities.completion")
    finding = _finding(report, "utilities.completion")
    assert finding.verdict.value == "pass"
    assert '"completion/complete"' in finding.evidence[0].text


async def test_completion_fails_on_too_many_or_wrong_values() -> None:
    def too_many(request: Any, answer: Any) -> Any:
        answer["result"]["completion"]["values"] = [str(i) for i in range(101)]
        return answer

    report = await run(_on("completion/complete", too_many), "utilities.completion")
    assert verdict(report, "utilities.completion") == "fail"
    assert "101 values" in _finding(report, "utilities.completion").detail

    def numbers(request: Any, answer: Any) -> Any:
        answer["result"] = {"completion": {"values": [1, 2]}}
        return answer

    report = await run(_on("completion/complete", numbers), "utilities.completion")
    assert verdict(report, "utilities.completion") == "fail"

    def listed(request: Any, answer: Any) -> Any:
        answer["result"] = ["Ada"]  # a list where an object is due: a verdict, no exception
        return answer

    report = await run(_on("completion/complete", listed), "utilities.completion")
    assert verdict(report, "utilities.completion") == "fail"


async def test_completion_is_not_applicable_without_the_capability() -> None:
    def undeclare(request: Any, answer: Any) -> Any:
        del answer["result"]["capabilities"]["completions"]
        return answer

    report = await run(_on("initialize", undeclare), "utilities.completion")
    assert verdict(report, "utilities.completion") == "n/a"


async def test_a_server_without_resource_templates_is_not_at_fault() -> None:
    def no_templates(request: Any, answer: Any) -> Any:
        error = {"code": -32601, "message": "Method not found"}
        return {"jsonrpc": "2.0", "id": answer["id"], "error": error}

    report = await run(_on("resources/templates/list", no_templates), "utilities.pagination")
    assert verdict(report, "utilities.pagination") == "pass"


# --- pagination: the checker's own page bound is not the server's failure ---------------
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
    # to loop. The checker stops there: a MUST it could not settle, which warns.
    # (The bound is lowered here so that the test is fast: 8 tools, 3 pages.)
    monkeypatch.setattr(listing_module, "MAX_PAGES", 3)
    report = await run(rewrite(_one_tool_a_page), "utilities.pagination", "content.list-shapes")
    for rule_id in ("utilities.pagination", "content.list-shapes"):
        found = _finding(report, rule_id)
        assert found.verdict.value != "fail", (rule_id, found.detail)


# --- a call that reports progress often is answered -------------------------------------
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
    # result follows. Reading goes on to the result; only what is kept of the lines
    # before it is bounded.
    report = await run(
        ManyProgressNotes, "content.structured-content", calls=[("add", {"a": 1, "b": 2})]
    )
    found = _finding(report, "content.structured-content")
    assert found.verdict.value == "pass", found.detail


async def test_long_names_that_share_a_prefix_are_not_duplicates() -> None:
    # Two tools whose names differ only past their 200th character are two tools.
    def long_names(request: Any, answer: Any) -> Any:
        if (
            isinstance(request, dict)
            and request.get("method") == "tools/list"
            and "result" in answer
        ):
            schema = {"type": "object"}
            answer["result"]["tools"] = [
                {"name": "t" * 300 + end, "inputSchema": schema} for end in "ab"
            ]
        return answer

    report = await run(rewrite(long_names), "utilities.pagination")
    assert verdict(report, "utilities.pagination") == "pass"
