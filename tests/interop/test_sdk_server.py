"""Interop with servers written with the official Python SDK (mcp==2.3.0), over stdio.

The high-level server declares output schemas from type hints (pydantic), so its
structured results exercise the validator on what that SDK really emits ($defs, anyOf with
null, titles); the low-level one sends results that break their schemas on purpose.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    Connection,
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    Event,
    HookContext,
    ListChanged,
    OutputSchemaError,
    PromptRef,
    RequestError,
    ResourceTemplateRef,
    ResourceUpdated,
    Root,
    ServerLog,
    TextContent,
)

from .servers import sdk_lowlevel_server, sdk_server

# The SDK's server is dual-era: these tests are its handshake era (server requests,
# logging/setLevel, resources/subscribe). tests/interop/test_stateless.py has the other.
HANDSHAKE = ["2025-11-25"]


async def sample(params: CreateMessageParams, context: HookContext) -> CreateMessageResult:
    assert params.stop_sequences == ["STOP"]
    return CreateMessageResult(
        role="assistant",
        content=TextContent(text="Paris."),
        model="test-model",
        stop_reason="endTurn",
    )


async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
    assert params.requested_schema is not None
    assert params.requested_schema["required"] == ["name"]
    return ElicitResult(action="accept", content={"name": "Ada", "age": 36})


async def test_structured_tools_hooks_and_errors() -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    with trio.fail_after(30):
        async with Connection(
            sdk_server(),
            versions=HANDSHAKE,
            name="sdk",
            sampling=sample,
            elicitation=elicit,
            roots=[Root(uri="file:///tmp/a", name="A"), "file:///tmp/b"],
        ) as conn:
            assert conn.server_info == {"name": "mcpl-interop-sdk-server", "version": "1.0.0"}
            assert conn.instructions == (
                "Interop test server for mcpl_host. Every answer is deterministic."
            )
            tools = {tool.name: tool for tool in await conn.list_tools()}
            assert tools["add"].title == "Add"
            assert tools["list_roots"].output_schema is not None
            assert "$defs" in tools["list_roots"].output_schema

            added = await conn.call_tool("add", {"a": 2, "b": 3})
            assert (added.text, added.structured_content) == ("5", {"result": 5})
            weather = await conn.call_tool("weather", {"city": "Oslo"})
            assert weather.structured_content == {
                "city": "Oslo",
                "temperature_c": 21.5,
                "conditions": "Sunny",
                "humidity": 40,
                "alerts": [],
            }
            stats = await conn.call_tool("stats", {"numbers": [1, 2, 3, 4]})
            assert stats.structured_content == {"count": 4, "total": 10.0, "mean": 2.5}

            failed = await conn.call_tool("fail", {"message": "boom"})
            assert (failed.is_error, failed.text) == (True, "Error executing tool fail: boom")
            with pytest.raises(OutputSchemaError) as caught:
                await conn.call_tool("mismatched_output")
            assert [(v.path, v.keyword) for v in caught.value.violations] == [("/result", "type")]
            assert caught.value.result.structured_content == {"result": "not a number"}

            counted = await conn.call_tool(
                "progress", {"steps": 3, "delay": 0}, on_progress=lambda *a: progress.append(a)
            )
            assert counted.text == "done after 3 steps"

            # the server asks the host while the tool runs
            sampled = await conn.call_tool("sample", {"prompt": "Capital of France?"})
            assert sampled.structured_content == {
                "model": "test-model",
                "role": "assistant",
                "text": "Paris.",
                "stop_reason": "endTurn",
            }
            contact = await conn.call_tool("elicit_contact")
            assert contact.structured_content == {
                "action": "accept",
                "content": {"name": "Ada", "age": 36, "subscribe": False},
            }
            roots = await conn.call_tool("list_roots")  # its schema uses $ref into $defs
            assert roots.structured_content == {
                "roots": [
                    {"uri": "file:///tmp/a", "name": "A"},
                    {"uri": "file:///tmp/b", "name": None},
                ]
            }
    assert progress == [(1, 3, "step 1/3"), (2, 3, "step 2/3"), (3, 3, "step 3/3")]


async def test_a_refused_server_request_fails_the_call_with_the_hosts_error() -> None:
    async def refuse(params: CreateMessageParams, context: HookContext) -> Any:
        raise RequestError(-1, "User rejected sampling request")

    with trio.fail_after(30):
        async with Connection(sdk_server(), versions=HANDSHAKE, sampling=refuse) as conn:
            with pytest.raises(RequestError) as refused:
                await conn.call_tool("sample", {"prompt": "?"})
            # this SDK passes the host's error on as the error of the tools/call itself
            assert (refused.value.code, refused.value.error_message) == (
                -1,
                "User rejected sampling request",
            )
            # roots were not given: the host answers -32601 and the call fails alike
            with pytest.raises(RequestError) as no_roots:
                await conn.call_tool("list_roots")
            assert no_roots.value.code == -32601


async def test_logging_list_changes_and_subscriptions() -> None:
    events: list[Event] = []
    with capture_logs() as logs, trio.fail_after(30):
        async with Connection(
            sdk_server(), versions=HANDSHAKE, name="sdk", on_event=events.append
        ) as conn:
            logged = await conn.call_tool("log_levels")
            assert logged.text == "logged 5 messages"
            await conn.set_logging_level("warning")
            assert (await conn.call_tool("log_levels")).text == "logged 2 messages"

            before = [tool.name for tool in await conn.list_tools()]
            assert "extra_tool" not in before
            await conn.call_tool("add_extra_tool")
            while ListChanged("tools") not in events:
                await trio.sleep(0.01)
            after = [tool.name for tool in await conn.list_tools()]
            assert after == [*before, "extra_tool"]

            await conn.subscribe_resource("resource://static/greeting")
            touched = await conn.call_tool("touch_resource")
            assert touched.text == "updated: resource://static/greeting"
            while not any(isinstance(e, ResourceUpdated) for e in events):
                await trio.sleep(0.01)
            await conn.unsubscribe_resource("resource://static/greeting")
            assert (await conn.call_tool("touch_resource")).text == (
                "not subscribed: resource://static/greeting"
            )
    messages = [e for e in events if isinstance(e, ServerLog)]
    assert [(m.level, m.logger, m.data) for m in messages] == [
        ("debug", None, "debug message"),
        ("info", None, "info message"),
        ("notice", "interop", {"detail": "notice with structured data"}),
        ("warning", None, "warning message"),
        ("error", None, "error message"),
        ("warning", None, "warning message"),
        ("error", None, "error message"),
    ]
    records = [entry for entry in logs if entry["event"] == "server log"]
    assert [r["log_level"] for r in records[:5]] == ["debug", "info", "info", "warning", "error"]
    assert records[2]["server_logger"] == "interop"
    assert records[2]["data"] == '{"detail":"notice with structured data"}'
    assert {r["server"] for r in records} == {"sdk"}
    assert ResourceUpdated("resource://static/greeting") in events


async def test_resources_prompts_and_completion() -> None:
    with trio.fail_after(30):
        async with Connection(sdk_server()) as conn:
            resources = await conn.list_resources()
            assert [(r.name, r.uri) for r in resources] == [
                ("greeting", "resource://static/greeting"),
                ("bytes", "resource://static/bytes"),
            ]
            [template] = await conn.list_resource_templates()
            assert template.uri_template == "resource://users/{user_id}/profile"
            text = await conn.read_resource("resource://static/greeting")
            assert text.contents[0].text == "Hello from the SDK interop server."
            blob = await conn.read_resource("resource://static/bytes")
            assert blob.contents[0].blob == "AAECAwQFBgc="
            profile = await conn.read_resource("resource://users/alice/profile")
            assert profile.contents[0].text == '{"id": "alice", "name": "Alice"}'
            with pytest.raises(RequestError) as missing:
                await conn.read_resource("resource://users/zed/profile")
            assert (missing.value.code, missing.value.data) == (
                -32602,
                {"uri": "resource://users/zed/profile"},
            )

            prompts = await conn.list_prompts()
            assert [p.name for p in prompts] == ["greet", "review_code"]
            greeting = await conn.get_prompt("greet", {"name": "Ada", "style": "pirate"})
            assert greeting.description == "Greet someone in a style."
            assert greeting.messages[0].content == TextContent(
                text="Write a pirate greeting for Ada."
            )
            review = await conn.get_prompt("review_code", {"code": "print(1)"})
            assert [m.role for m in review.messages] == ["user", "assistant"]

            styles = await conn.complete(PromptRef(name="greet"), "style", "f")
            assert (styles.values, styles.total, styles.has_more) == (
                ["friendly", "formal"],
                2,
                False,
            )
            users = await conn.complete(
                ResourceTemplateRef(uri="resource://users/{user_id}/profile"), "user_id", "b"
            )
            assert users.values == ["bob"]


@pytest.mark.parametrize(
    ("tool", "violations"),
    [
        ("wrong_type", [("/result", "type")]),
        ("missing_required", [("", "required")]),
        ("extra_property", [("/z", "additionalProperties")]),
        ("no_structured", []),
    ],
)
async def test_results_breaking_their_schema_are_caught(
    tool: str, violations: list[tuple[str, str]]
) -> None:
    with trio.fail_after(30):
        async with Connection(sdk_lowlevel_server()) as conn:
            assert (await conn.call_tool("valid")).structured_content == {"result": 5}
            assert (await conn.call_tool("declared_error")).is_error  # errors owe no structure
            with pytest.raises(OutputSchemaError) as caught:
                await conn.call_tool(tool)
            assert [(v.path, v.keyword) for v in caught.value.violations] == violations
            assert caught.value.tool == tool
            unchecked = await conn.call_tool(tool, validate_output=False)
            assert unchecked.structured_content == caught.value.result.structured_content
