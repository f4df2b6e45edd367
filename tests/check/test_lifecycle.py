"""Lifecycle rules against the demo server, each with the fault that breaks it."""

from __future__ import annotations

from typing import Any

from .servers import Fault, rewrite, run, verdict


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
