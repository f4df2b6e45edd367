"""``mcpl-host call``: the result, the server's refusal, a timeout that sends
notifications/cancelled. (The readable output of a tool call, a resource read, a
prompt get and progress: test_docs.py runs docs/cli.md's examples.)"""

from __future__ import annotations

import time
from pathlib import Path

from .helpers import run, run_json, server


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
        # Long enough for the demo's start and handshake on a loaded machine (the
        # timeout bounds them too), far shorter than the countdown's 20 s.
        "--timeout",
        "3",
        "--tool",
        "countdown",
        "--args",
        '{"steps": 100, "delay": 0.2}',
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
    assert '"requestId":3' in cancels[0]  # 1 was server/discover, 2 initialize
    # The demo stops counting when cancelled, so closing it needs no SIGTERM grace.
    assert elapsed < 10


def test_a_resources_mime_type_is_shown_escaped_cut_and_redacted(tmp_path: Path) -> None:
    token = "tok-93c1e0aa77"
    mime = "text/\x1b[2J\x1b]0;owned\x07plain\u2028" + token + "x" * 5000
    argv = server(
        tmp_path,
        "mime",
        f"""
        initialized(read_initialize(), capabilities={{"resources": {{}}}})
        json.loads(sys.stdin.readline())  # notifications/initialized
        request = json.loads(sys.stdin.readline())
        contents = [{{"uri": "x://a", "mimeType": {mime!r}, "text": "hi"}}]
        send({{"jsonrpc": "2.0", "id": request["id"], "result": {{"contents": contents}}}})
        sys.stdin.read()
        """,
    )
    done = run("call", "--resource", "x://a", "--env", f"API_TOKEN={token}", "--", *argv)
    assert done.returncode == 0, done.stderr
    assert "x://a" in done.stdout
    assert "\\u001b[2J" in done.stdout
    assert "\x1b" not in done.stdout
    assert "\x07" not in done.stdout
    assert "\u2028" not in done.stdout
    assert token not in done.stdout
    assert "x" * 300 not in done.stdout


TASK_SERVER = """
TASK = {"taskId": "t-9", "status": "working", "createdAt": "2025-11-25T00:00:00Z",
        "lastUpdatedAt": "2025-11-25T00:00:00Z", "ttl": 1000, "pollInterval": 0}
polls = 0
for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "server/discover":  # a handshake-era server knows no discover
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
    elif method == "initialize":
        initialized(message, capabilities={"tools": {}, "tasks": {
            "requests": {"tools": {"call": {}}}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [{"name": "research",
              "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}]}})
    elif method == "tools/call":
        assert message["params"]["task"] == {}, message
        send({"jsonrpc": "2.0", "id": ident, "result": {"task": TASK}})
    elif method == "tasks/get":
        polls += 1
        send({"jsonrpc": "2.0", "id": ident, "result": dict(TASK,
              status="completed" if polls == 2 else "working")})
    elif method == "tasks/result":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "content": [{"type": "text", "text": "found " + message["params"]["taskId"]}]}})
"""


def test_a_tool_that_must_run_as_a_task_is_followed_to_its_result(tmp_path: Path) -> None:
    argv = server(tmp_path, "tasks", TASK_SERVER)
    report, done = run_json("call", "--json", "--trace", "--tool", "research", "--", *argv)
    assert done.returncode == 0, done.stderr
    assert report["result"] == {"content": [{"type": "text", "text": "found t-9"}]}
    sent = [line for line in done.stderr.splitlines() if " -> " in line]
    methods = [m for line in sent for m in ("tasks/get", "tasks/result") if f'"{m}"' in line]
    assert methods == ["tasks/get", "tasks/get", "tasks/result"]
