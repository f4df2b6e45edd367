"""Lifecycle rules against the demo server, each with the fault that breaks it."""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from mcpl_host.check import Report

from .servers import Fault, rewrite, run, run_stdio, verdict


async def test_initialize_newest_passes_on_the_demo_server() -> None:
    report = await run(Fault, "lifecycle.initialize-newest")
    assert verdict(report, "lifecycle.initialize-newest") == "pass"
    assert report.findings[0].evidence[0].direction == "→"


async def test_initialize_newest_fails_without_server_info() -> None:
    def drop_server_info(request: Any, answer: Any) -> Any:
        if isinstance(request, dict) and request.get("method") == "initialize":
            del answer["result"]["serverInfo"]
        return answer

    report = await run(rewrite(drop_server_info), "lifecycle.initialize-newest")
    assert verdict(report, "lifecycle.initialize-newest") == "fail"
    assert "serverInfo" in report.findings[0].detail


async def test_ping_after_initialize() -> None:
    report = await run(Fault, "lifecycle.ping-after-initialize")
    assert verdict(report, "lifecycle.ping-after-initialize") == "pass"
    sent = [line.text for line in report.findings[0].evidence if line.direction == "→"]
    assert sent == ['{"jsonrpc":"2.0","id":2,"method":"ping"}']

    def no_pong(request: Any, answer: Any) -> Any:
        return None if request.get("method") == "ping" else answer

    report = await run(rewrite(no_pong), "lifecycle.ping-after-initialize")
    assert verdict(report, "lifecycle.ping-after-initialize") == "fail"


def _detail(report: Report, rule_id: str) -> str:
    (finding,) = [f for f in report.findings if f.rule.id == rule_id]
    return finding.detail


def _initialize_offering(offered: Any, answer: Any) -> Any:
    """A fault answering initialize offering ``offered`` (a predicate) with ``answer``."""

    def change(request: Any, original: Any) -> Any:
        if (
            isinstance(request, dict)
            and request.get("method") == "initialize"
            and offered(request["params"].get("protocolVersion"))
        ):
            return answer(request, original)
        return original

    return rewrite(change)


async def test_every_handshake_rule_passes_on_the_demo_server() -> None:
    rules = (
        "lifecycle.initialize-older",
        "lifecycle.initialize-future",
        "lifecycle.ping-before-initialize",
        "lifecycle.request-before-initialize",
        "lifecycle.initialized",
    )
    report = await run(Fault, *rules)
    assert [(f.rule.id, f.verdict.value) for f in report.findings] == [(r, "pass") for r in rules]
    assert _detail(report, "lifecycle.initialize-older") == (
        "offered 2025-06-18, answered 2025-06-18; offered 2025-03-26, answered 2025-03-26; "
        "offered 2024-11-05, answered 2024-11-05"
    )
    assert (
        _detail(report, "lifecycle.initialize-future") == "offered 2999-12-31, answered 2025-11-25"
    )


async def test_an_older_revision_refused_fails() -> None:
    def refuse(request: Any, _answer: Any) -> Any:
        error = {"code": -32602, "message": "Unsupported protocol version"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}

    fault = _initialize_offering(lambda v: v == "2025-03-26", refuse)
    report = await run(fault, "lifecycle.initialize-older")
    assert verdict(report, "lifecycle.initialize-older") == "fail"
    assert "offered 2025-03-26: answered with an error" in _detail(
        report, "lifecycle.initialize-older"
    )

    # An older revision answered with the server's own: allowed.
    def own(_request: Any, answer: Any) -> Any:
        answer["result"]["protocolVersion"] = "2025-11-25"
        return answer

    report = await run(
        _initialize_offering(lambda v: v < "2025-06-18", own), "lifecycle.initialize-older"
    )
    assert verdict(report, "lifecycle.initialize-older") == "pass"
    # Only the revisions the run checks are offered.
    report = await run(Fault, "lifecycle.initialize-older", versions=("2025-11-25",))
    assert verdict(report, "lifecycle.initialize-older") == "n/a"


async def test_a_future_revision_echoed_or_refused_fails() -> None:
    def echo(request: Any, answer: Any) -> Any:
        answer["result"]["protocolVersion"] = request["params"]["protocolVersion"]
        return answer

    report = await run(
        _initialize_offering(lambda v: v == "2999-12-31", echo), "lifecycle.initialize-future"
    )
    assert verdict(report, "lifecycle.initialize-future") == "fail"
    assert _detail(report, "lifecycle.initialize-future").endswith("a revision it cannot support")
    silent = _initialize_offering(lambda v: v == "2999-12-31", lambda _r, _a: None)
    report = await run(silent, "lifecycle.initialize-future")
    assert verdict(report, "lifecycle.initialize-future") == "fail"


class _BeforeInitialize(Fault):
    """Changes the answers to requests before initialize with ``change``."""

    change: Any = staticmethod(lambda request, answer: answer)

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        if self.session.version is not None or b'"initialize"' in line:
            return answers
        request = msgspec.json.decode(line)
        changed = [self.change(request, msgspec.json.decode(a)) for a in answers]
        return [msgspec.json.encode(c) for c in changed if c is not None]


async def test_a_ping_before_initialize_refused_fails() -> None:
    class Refuses(_BeforeInitialize):
        change = staticmethod(
            lambda request, answer: {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32600, "message": "initialize first"},
            }
        )

    report = await run(Refuses, "lifecycle.ping-before-initialize")
    assert verdict(report, "lifecycle.ping-before-initialize") == "fail"
    assert report.findings[0].evidence[0].text == ('{"jsonrpc":"2.0","id":1,"method":"ping"}')


async def test_a_request_before_initialize() -> None:
    class Serves(_BeforeInitialize):
        change = staticmethod(
            lambda request, answer: {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}}
        )

    report = await run(Serves, "lifecycle.request-before-initialize")
    assert verdict(report, "lifecycle.request-before-initialize") == "warn"

    class Silent(_BeforeInitialize):
        change = staticmethod(lambda request, answer: None)

    report = await run(Silent, "lifecycle.request-before-initialize", timeout=0.5)
    assert verdict(report, "lifecycle.request-before-initialize") == "fail"


async def test_an_answered_initialized_notification_fails() -> None:
    class Answers(Fault):
        def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
            if b"notifications/initialized" in line:
                return [b'{"jsonrpc":"2.0","id":null,"result":{}}']
            return answers

    report = await run(Answers, "lifecycle.initialized")
    assert verdict(report, "lifecycle.initialized") == "fail"
    assert _detail(report, "lifecycle.initialized") == "answered the initialized notification"


async def test_the_stdio_process_rules() -> None:
    eof, term, stdout = "lifecycle.stdin-eof", "lifecycle.sigterm", "lifecycle.stdout-json-rpc"
    runs = {
        "none": (eof, term, stdout),
        "linger": (eof,),
        "ignore-sigterm": (term,),
        "stdout-noise": (stdout,),
    }
    reports: dict[str, Report] = {}

    async def one(fault: str) -> None:
        # A short grace (a server that ignores EOF costs it on every connection), yet
        # one a busy machine's Python exits within.
        reports[fault] = await run_stdio(fault, *runs[fault], exit_grace=2.0)

    async with trio.open_nursery() as nursery:
        for fault in runs:
            nursery.start_soon(one, fault)
    assert [f.verdict.value for f in reports["none"].findings] == ["pass"] * 3
    assert "exited (status 0)" in _detail(reports["none"], eof)
    assert "killed by signal 15" in _detail(reports["none"], term)
    # SHOULDs: a server that keeps running warns, and the evidence says so.
    assert verdict(reports["linger"], eof) == "warn"
    assert reports["linger"].findings[0].evidence[-1].text == "still running after 2 s"
    assert verdict(reports["ignore-sigterm"], term) == "warn"
    assert verdict(reports["stdout-noise"], stdout) == "fail"
    evidence = reports["stdout-noise"].findings[0].evidence
    assert ("←", "server ready") in [(line.direction, line.text) for line in evidence]


async def test_the_stdio_process_rules_do_not_apply_elsewhere() -> None:
    report = await run(Fault, "lifecycle.stdin-eof", "lifecycle.sigterm")
    assert [f.verdict.value for f in report.findings] == ["n/a", "n/a"]


async def test_answers_of_the_wrong_shape_get_a_verdict() -> None:
    def shapeless(request: Any, answer: Any) -> Any:
        if not isinstance(request, dict) or request.get("method") != "initialize":
            return answer
        if request["params"]["protocolVersion"] == "2025-11-25":
            return answer
        return {"jsonrpc": "2.0", "id": request["id"], "result": ["2025-03-26"]}

    rules = ("lifecycle.initialize-older", "lifecycle.initialize-future")
    report = await run(rewrite(shapeless), *rules)
    assert [f.verdict.value for f in report.findings] == ["fail", "fail"]
    assert _detail(report, "lifecycle.initialize-future") == (
        "offered 2999-12-31: the result is not an object"
    )
