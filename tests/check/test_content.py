"""Content rules (tool schemas and names, list shapes, capabilities, structured content)
against the demo server, each with the fault that breaks it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .servers import Fault, rewrite, run, verdict

ADD = [("add", {"a": 1, "b": 2})]


def _on(method: str, change: Any) -> Any:
    def changed(request: Any, answer: Any) -> Any:
        if isinstance(request, dict) and request.get("method") == method:
            return change(request, answer)
        return answer

    return rewrite(changed)


def _finding(report: Any, rule_id: str) -> Any:
    (finding,) = [f for f in report.findings if f.rule.id == rule_id]
    return finding


def _tools(change: Any) -> Any:
    """A fault that changes the first tool tools/list lists."""

    def changed(request: Any, answer: Any) -> Any:
        change(answer["result"]["tools"])
        return answer

    return _on("tools/list", changed)


LISTED = ("content.tool-schemas", "content.tool-names", "content.list-shapes")


async def test_listed_content_passes_on_the_demo_server() -> None:
    report = await run(Fault, *LISTED)
    for rule_id in LISTED:
        finding = _finding(report, rule_id)
        assert finding.verdict.value == "pass", finding.detail
    assert '"tools/list"' in _finding(report, "content.tool-schemas").evidence[0].text


async def test_tool_schemas_fail_on_an_input_schema_not_an_object() -> None:
    def string_input(tools: list[Any]) -> None:
        tools[0]["inputSchema"] = {"type": "string"}

    report = await run(_tools(string_input), *LISTED)
    finding = _finding(report, "content.tool-schemas")
    assert finding.verdict.value == "fail"
    assert '"echo"' in finding.detail
    assert verdict(report, "content.list-shapes") == "pass"


async def test_tool_schemas_fail_on_an_invalid_output_schema() -> None:
    def broken_output(tools: list[Any]) -> None:
        tools[1]["outputSchema"] = {"type": "object", "properties": {"sum": {"type": 5}}}

    report = await run(_tools(broken_output), "content.tool-schemas")
    finding = _finding(report, "content.tool-schemas")
    assert finding.verdict.value == "fail"
    assert '"add"' in finding.detail
    assert "outputSchema" in finding.detail


async def test_tool_names_warn_on_a_bad_or_repeated_name() -> None:
    def bad(tools: list[Any]) -> None:
        tools[0]["name"] = "echo it!"

    report = await run(_tools(bad), "content.tool-names")
    finding = _finding(report, "content.tool-names")
    assert finding.verdict.value == "warn"
    assert '"echo it!"' in finding.detail

    def repeated(tools: list[Any]) -> None:
        tools[1]["name"] = tools[0]["name"]

    report = await run(_tools(repeated), "content.tool-names")
    assert verdict(report, "content.tool-names") == "warn"

    def too_long(tools: list[Any]) -> None:
        tools[0]["name"] = "a" * 129

    report = await run(_tools(too_long), "content.tool-names")
    assert verdict(report, "content.tool-names") == "warn"


async def test_tool_names_are_not_judged_before_2025_11_25() -> None:
    def older(request: Any, answer: Any) -> Any:
        answer["result"]["protocolVersion"] = "2025-06-18"
        return answer

    report = await run(_on("initialize", older), "content.tool-names")
    assert verdict(report, "content.tool-names") == "n/a"


async def test_list_shapes_fail_on_missing_members() -> None:
    def no_uri(request: Any, answer: Any) -> Any:
        del answer["result"]["resources"][0]["uri"]
        return answer

    report = await run(_on("resources/list", no_uri), "content.list-shapes")
    finding = _finding(report, "content.list-shapes")
    assert finding.verdict.value == "fail"
    assert "no uri" in finding.detail
    assert any('"resources/list"' in line.text for line in finding.evidence)

    def unnamed_argument(request: Any, answer: Any) -> Any:
        answer["result"]["prompts"][0]["arguments"] = [{"description": "who"}]
        return answer

    report = await run(_on("prompts/list", unnamed_argument), "content.list-shapes")
    assert verdict(report, "content.list-shapes") == "fail"

    def not_a_list(request: Any, answer: Any) -> Any:
        answer["result"] = {"tools": {"echo": {}}}
        return answer

    report = await run(_on("tools/list", not_a_list), *LISTED)
    assert verdict(report, "content.tool-schemas") == "fail"
    assert verdict(report, "content.tool-names") == "warn"  # a SHOULD
    assert "has no tools list" in _finding(report, "content.list-shapes").detail


CAPABILITIES = ("content.capabilities-agree", "content.undeclared-capabilities")


def _undeclare(*names: str) -> Callable[[Any, Any], Any]:
    def undeclare(request: Any, answer: Any) -> Any:
        for name in names:
            del answer["result"]["capabilities"][name]
        return answer

    return undeclare


async def test_capabilities_agree_on_the_demo_server() -> None:
    report = await run(Fault, *CAPABILITIES)
    assert verdict(report, "content.capabilities-agree") == "pass"
    finding = _finding(report, "content.undeclared-capabilities")
    assert finding.verdict.value == "n/a"


async def test_a_declared_capability_not_served_fails() -> None:
    def refuse(request: Any, answer: Any) -> Any:
        error = {"code": -32601, "message": "Method not found"}
        return {"jsonrpc": "2.0", "id": answer["id"], "error": error}

    report = await run(_on("prompts/list", refuse), *CAPABILITIES)
    finding = _finding(report, "content.capabilities-agree")
    assert finding.verdict.value == "fail"
    assert "prompts/list" in finding.detail
    assert finding.evidence[-1].direction == "←"
    assert "-32601" in finding.evidence[-1].text


async def test_an_undeclared_capability_served_warns() -> None:
    report = await run(_on("initialize", _undeclare("prompts")), *CAPABILITIES)
    assert verdict(report, "content.capabilities-agree") == "pass"
    finding = _finding(report, "content.undeclared-capabilities")
    assert finding.verdict.value == "warn"
    assert finding.detail == "prompts/list (prompts not declared) was answered with a result"


async def test_an_undeclared_capability_refused_passes() -> None:
    undeclare = _undeclare("completions")

    def no_completions(request: Any, answer: Any) -> Any:
        method = request.get("method") if isinstance(request, dict) else None
        if method == "initialize":
            return undeclare(request, answer)
        if method == "completion/complete":
            answer["error"] = {"code": -32601, "message": "Method not found"}
        return answer

    report = await run(rewrite(no_completions), *CAPABILITIES)
    finding = _finding(report, "content.undeclared-capabilities")
    assert finding.verdict.value == "pass", finding.detail
    assert "completions" in finding.detail


async def test_structured_content() -> None:
    report = await run(Fault, "content.structured-content")
    finding = _finding(report, "content.structured-content")
    assert finding.verdict.value == "n/a"
    assert "use --call" in finding.detail

    report = await run(Fault, "content.structured-content", calls=ADD)
    assert verdict(report, "content.structured-content") == "pass"


async def test_structured_content_fails_on_a_mismatch() -> None:
    report = await run(Fault, "content.structured-content", calls=[("wrong_shape", {})])
    finding = _finding(report, "content.structured-content")
    assert finding.verdict.value == "fail"
    assert "wrong_shape" in finding.detail
    assert "/count" in finding.detail
    assert any('"structuredContent"' in line.text for line in finding.evidence)


async def test_structured_content_fails_on_a_result_that_is_no_call_tool_result() -> None:
    def no_content(request: Any, answer: Any) -> Any:
        answer["result"]["content"] = "3"
        return answer

    report = await run(_on("tools/call", no_content), "content.structured-content", calls=ADD)
    finding = _finding(report, "content.structured-content")
    assert finding.verdict.value == "fail"
    assert "content list" in finding.detail

    def missing(request: Any, answer: Any) -> Any:
        del answer["result"]["structuredContent"]
        return answer

    report = await run(_on("tools/call", missing), "content.structured-content", calls=ADD)
    assert verdict(report, "content.structured-content") == "fail"


async def test_structured_content_warns_when_the_call_is_refused() -> None:
    report = await run(Fault, "content.structured-content", calls=[("nope", {})])
    assert verdict(report, "content.structured-content") == "warn"


async def test_an_undeclared_capability_unanswered_warns() -> None:
    undeclare = _undeclare("prompts")

    def silent(request: Any, answer: Any) -> Any:
        method = request.get("method") if isinstance(request, dict) else None
        if method == "initialize":
            return undeclare(request, answer)
        return None if method == "prompts/list" else answer

    report = await run(rewrite(silent), *CAPABILITIES, timeout=0.3)
    finding = _finding(report, "content.undeclared-capabilities")
    assert finding.verdict.value == "warn"
    assert finding.detail == "prompts/list (prompts not declared) was not answered"


# --- content.undeclared-capabilities: 2024-11-05 has no completions capability ------------
def _no_completions_capability(request: Any, answer: Any) -> Any:
    if isinstance(request, dict) and request.get("method") == "initialize":
        answer["result"]["capabilities"].pop("completions", None)
    return answer


async def test_completion_served_without_a_capability_on_2024_11_05_is_right() -> None:
    # 2024-11-05's ServerCapabilities has no `completions` (schema/2024-11-05; the
    # capability came in 2025-03-26: "Added completions capability"), and its
    # server/utilities/completion page asks for none: a 2024-11-05 server serves
    # completion/complete without declaring anything. The checker does not ask a
    # 2024-11-05 server to refuse it.
    report = await run(
        rewrite(_no_completions_capability),
        "content.undeclared-capabilities",
        versions=("2024-11-05",),
    )
    found = _finding(report, "content.undeclared-capabilities")
    assert found.verdict.value != "warn", found.detail


# --- content.tool-schemas: what the checker will not check warns ------------------------
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
    # the schema is valid. The checker never fetches it (client/schema.py refuses it
    # with an UnsupportedSchema that is not malformed): a MUST it could not settle,
    # which warns.
    report = await run(rewrite(_remote_ref), "content.tool-schemas")
    found = _finding(report, "content.tool-schemas")
    assert found.verdict.value != "fail", found.detail
