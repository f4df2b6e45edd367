"""2026-07-28 rules against the dual-era reference handler, over an in-memory stream and
over HTTP, each with the fault that breaks it (tests/check/modern_server.py)."""

from __future__ import annotations

from typing import Any

import trio

from mcpl_host import HttpTarget
from mcpl_host.check import Report, check
from mcpl_host.check.context import CheckOptions

from .http_server import HttpBehaviour, ReferenceServer, Reply, Request
from .modern_server import Behaviour, serving
from .servers import Fault, run, verdict

MODERN_RULES = (
    "modern.discover",
    "modern.discover-server-info",
    "modern.result-type",
    "modern.result-type-present",
    "modern.meta-required",
    "modern.unsupported-version",
    "modern.removed-methods",
    "modern.headers",
    "modern.legacy-http",
)


async def run_modern(behaviour: Behaviour | None = None, *only: str) -> Report:
    async with serving(behaviour or Behaviour()) as opener:
        with trio.fail_after(60):
            return await check(opener, only=only or ("modern",), options=CheckOptions(timeout=1.0))


async def run_http(
    behaviour: HttpBehaviour | None = None, *only: str, legacy: bool = False
) -> Report:
    with ReferenceServer(behaviour, legacy=legacy) as server:
        with trio.fail_after(60):
            return await check(
                HttpTarget(server.url), only=only or ("modern",), options=CheckOptions(timeout=1.0)
            )


def changing(method: str, change: Any) -> Behaviour:
    """A fault that rewrites the result of ``method`` with ``change(result)``."""

    def rewrite(request: Any, answer: dict[str, Any]) -> dict[str, Any]:
        if isinstance(request, dict) and request.get("method") == method and "result" in answer:
            change(answer["result"])
        return answer

    return Behaviour(change=rewrite)


def detail(report: Report, rule_id: str) -> str:
    (found,) = [f for f in report.findings if f.rule.id == rule_id]
    return found.detail


async def test_the_reference_passes_every_modern_rule_over_a_stream_and_http() -> None:
    report = await run_modern()
    expected = dict.fromkeys(MODERN_RULES, "pass")
    expected |= {"modern.headers": "n/a", "modern.legacy-http": "n/a"}
    assert {f.rule.id: f.verdict.value for f in report.findings} == expected
    report = await run_http()
    assert {f.rule.id: f.verdict.value for f in report.findings} == dict.fromkeys(
        MODERN_RULES, "pass"
    )
    assert "with 400" in detail(report, "modern.meta-required")


async def test_modern_rules_are_not_applicable_to_a_handshake_era_server() -> None:
    report = await run(Fault, "modern")
    assert {f.verdict.value for f in report.findings} == {"n/a"}


async def test_discover() -> None:
    report = await run_modern(changing("server/discover", lambda r: r.update(capabilities=[])))
    assert verdict(report, "modern.discover") == "fail"
    assert "capabilities" in detail(report, "modern.discover")
    report = await run_modern(changing("server/discover", lambda r: r.pop("_meta")))
    assert verdict(report, "modern.discover") == "pass"
    assert verdict(report, "modern.discover-server-info") == "warn"


async def test_result_type() -> None:
    report = await run_modern(changing("tools/list", lambda r: r.update(resultType="partial")))
    assert verdict(report, "modern.result-type") == "fail"
    assert 'resultType "partial"' in detail(report, "modern.result-type")
    assert verdict(report, "modern.result-type-present") == "pass"
    report = await run_modern(changing("tools/list", lambda r: r.pop("resultType")))
    assert verdict(report, "modern.result-type") == "pass"
    assert verdict(report, "modern.result-type-present") == "fail"


async def test_meta_required() -> None:
    report = await run_modern(Behaviour(skip=frozenset({"meta"})), "modern.meta-required")
    assert verdict(report, "modern.meta-required") == "fail"
    assert "no _meta: a result" in detail(report, "modern.meta-required")
    report = await run_http(HttpBehaviour(skip=frozenset({"meta"})), "modern.meta-required")
    assert verdict(report, "modern.meta-required") == "fail"


async def test_unsupported_version() -> None:
    def no_data(request: Any, answer: dict[str, Any]) -> dict[str, Any]:
        answer.get("error", {}).pop("data", None)
        return answer

    report = await run_modern(Behaviour(change=no_data), "modern.unsupported-version")
    assert verdict(report, "modern.unsupported-version") == "fail"
    assert "supported" in detail(report, "modern.unsupported-version")
    report = await run_http(
        HttpBehaviour(skip=frozenset({"version"})), "modern.unsupported-version"
    )
    assert verdict(report, "modern.unsupported-version") == "fail"


async def test_removed_methods() -> None:
    report = await run_modern(Behaviour(skip=frozenset({"removed"})), "modern.removed-methods")
    assert verdict(report, "modern.removed-methods") == "fail"
    assert "ping: a result" in detail(report, "modern.removed-methods")


async def test_headers() -> None:
    report = await run_http(HttpBehaviour(skip=frozenset({"headers"})), "modern.headers")
    assert verdict(report, "modern.headers") == "fail"
    found = detail(report, "modern.headers")
    assert "MCP-Protocol-Version: 2025-11-25: HTTP 200" in found
    assert "no Mcp-Method" in found
    assert "Mcp-Name: mcpl-host-check-other: HTTP 200, error -32602" in found


async def test_answers_of_the_wrong_shape_get_verdicts_not_breakdowns() -> None:
    def hostile(request: Any, answer: dict[str, Any]) -> dict[str, Any]:
        if isinstance(request, dict) and request.get("method") == "server/discover":
            if "result" in answer:
                answer["result"].update(capabilities={"tools": []}, ttlMs="soon", _meta=[1])
            return answer
        return {"jsonrpc": "2.0", "id": answer.get("id"), "result": [1, "two"], "error": "x"}

    report = await run_modern(Behaviour(change=hostile))
    assert all("broke down" not in f.detail for f in report.findings), report.findings
    assert verdict(report, "modern.discover") == "fail"
    assert verdict(report, "modern.meta-required") == "fail"


async def test_legacy_http() -> None:
    def serve_get(request: Request, reply: Reply) -> Reply:
        if request.verb == "GET":
            return Reply(200, headers={"Content-Type": "text/event-stream"}, events=[])
        if request.verb == "POST":
            reply.headers["Mcp-Session-Id"] = "minted"
        return reply

    report = await run_http(HttpBehaviour(reply=serve_get), "modern.legacy-http")
    assert verdict(report, "modern.legacy-http") == "warn"
    found = detail(report, "modern.legacy-http")
    assert "GET: HTTP 200" in found
    assert "Mcp-Session-Id" in found
    report = await run_http(None, "modern.legacy-http", legacy=True)
    assert verdict(report, "modern.legacy-http") == "n/a"
