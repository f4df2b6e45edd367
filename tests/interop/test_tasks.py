"""Tasks (2025-11-25) with the real @modelcontextprotocol/server-everything: its
``simulate-research-query`` tool has ``execution.taskSupport: "required"`` and runs four
stages of about a second each. The three calls run side by side, so the test takes
about as long as one task (≈4-5 s)."""

from __future__ import annotations

from typing import Any

import trio

from mcpl_host import (
    CallToolResult,
    Connection,
    ElicitParams,
    ElicitResult,
    HookContext,
    Task,
)
from mcpl_host.protocol.tasks import RELATED_TASK

from .servers import everything

TOOL = "simulate-research-query"


async def test_a_task_tool_through_call_tool_the_explicit_calls_and_the_hooks() -> None:
    asked: list[tuple[str, Any]] = []

    async def elicit(params: ElicitParams, context: HookContext) -> ElicitResult:
        asked.append((params.message, (params.meta or {}).get(RELATED_TASK)))
        return ElicitResult(action="accept", content={"interpretation": "snake"})

    plain: list[CallToolResult] = []
    ambiguous: list[CallToolResult] = []
    watched: list[Task] = []
    with trio.fail_after(30):
        async with Connection(everything(), name="everything", elicitation=elicit) as conn:
            assert conn.protocol_version == "2025-11-25"
            while TOOL not in [tool.name for tool in await conn.list_tools()]:
                await trio.sleep(0.02)  # registered after initialize, then list_changed

            async def transparent() -> None:
                plain.append(await conn.call_tool(TOOL, {"topic": "tides"}))

            async def with_input() -> None:
                # Status input_required: the host waits in tasks/result, where the
                # server's elicitation/create arrives and the hook answers it.
                ambiguous.append(await conn.call_tool(TOOL, {"topic": "python", "ambiguous": True}))

            async def explicit() -> None:
                created = await conn.start_task(TOOL, {"topic": "moons"}, ttl=60000)
                assert isinstance(created, Task)
                assert created.status == "working"
                assert created.poll_interval == 1000
                listed = await conn.list_tasks()
                assert created.task_id in [t.task_id for t in listed]
                last = await conn.watch_task(created.task_id, on_status=watched.append)
                assert last.status == "completed"
                result = await conn.task_result(created.task_id, tool=TOOL)
                assert "# Research Report: moons" in result.text

            async with trio.open_nursery() as nursery:
                nursery.start_soon(transparent)
                nursery.start_soon(with_input)
                nursery.start_soon(explicit)

    assert plain[0].text.startswith("# Research Report: tides\n")
    assert not plain[0].is_error
    assert "Stage 4: Generating report ✓" in plain[0].text
    assert ambiguous[0].text.startswith("# Research Report: python (snake)\n")
    message, related = asked[0]
    assert message.startswith('The research query "python" could have multiple')
    assert isinstance(related, dict)
    assert isinstance(related.get("taskId"), str)
    messages = [t.status_message for t in watched]
    assert "Analyzing content..." in messages
    assert watched[-1].status == "completed"
