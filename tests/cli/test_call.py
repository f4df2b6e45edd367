"""``mcpl-host call``: the result, the server's refusal, a timeout that sends
notifications/cancelled. (The readable output of a tool call, a resource read, a
prompt get and progress: test_docs.py runs docs/cli.md's examples.)"""

from __future__ import annotations

import time

from .helpers import run_json


def test_call_echo_gives_the_result_whole() -> None:
    args = ("--tool", "echo", "--args", '{"text": "hello there"}', "--demo")
    report, done = run_json("call", "--json", *args)
    assert done.returncode == 0, done.stderr
    assert report["ok"] is True
    assert report["result"] == {"content": [{"type": "text", "text": "hello there"}]}
    assert set(report["timings_ms"]) == {"spawn", "initialize", "call", "total"}


def test_the_servers_refusal_is_a_request_error_with_its_code() -> None:
    report, done = run_json("call", "--json", "--resource", "demo://nothing", "--demo")
    assert done.returncode == 1
    error = report["error"]
    assert error["kind"] == "request-error"
    assert error["code"] == -32002
    assert error["method"] == "resources/read"
    assert "Resource not found" in error["message"]


def test_a_call_that_times_out_is_cancelled_and_reported() -> None:
    started = time.monotonic()
    report, done = run_json(
        "call",
        "--json",
        "--trace",
        "--timeout",
        "0.5",
        "--tool",
        "countdown",
        "--args",
        '{"steps": 50, "delay": 0.2}',
        "--demo",
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 1
    assert report["error"]["kind"] == "timeout"
    assert report["error"]["method"] == "tools/call"
    assert report["serverInfo"]["name"] == "mcpl-host-demo"
    cancels = [line for line in done.stderr.splitlines() if "notifications/cancelled" in line]
    assert len(cancels) == 1
    assert " -> " in cancels[0]
    assert '"requestId":2' in cancels[0]
    # The demo stops counting when cancelled, so closing it needs no SIGTERM grace.
    assert elapsed < 5
