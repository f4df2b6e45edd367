"""``mcpl-host connect`` against the bundled demo server: the JSON report, the readable
one, and the installed console script."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import TIMEOUT, run, run_json, server

CONSOLE_SCRIPT = Path(sys.executable).parent / "mcpl-host"


def test_json_report_fields_and_types() -> None:
    report, done = run_json("connect", "--json", "--demo")
    assert done.returncode == 0, done.stderr
    assert report["ok"] is True
    assert isinstance(report["target"], str)
    assert report["target"].startswith("stdio:")
    assert report["protocolVersion"] == "2025-11-25"
    assert report["serverInfo"] == {"name": "mcpl-host-demo", "version": "1.0.0"}
    assert report["capabilities"] == {
        "tools": {},
        "resources": {"subscribe": True},
        "prompts": {},
        "logging": {},
        "completions": {},
    }
    assert isinstance(report["instructions"], str)
    timings = report["timings_ms"]
    assert set(timings) == {"spawn", "initialize", "list", "total"}
    assert all(isinstance(v, float) and v >= 0 for v in timings.values())
    assert timings["total"] >= timings["initialize"]
    assert [t["name"] for t in report["tools"]] == [
        "echo",
        "add",
        "sleep",
        "countdown",
        "wrong_shape",
        "log",
        "touch",
        "ask",
    ]
    assert all(isinstance(t["inputSchema"], dict) for t in report["tools"])
    assert [r["uri"] for r in report["resources"]] == ["demo://readme"]
    assert [t["uriTemplate"] for t in report["resourceTemplates"]] == ["demo://echo/{text}"]
    assert [p["name"] for p in report["prompts"]] == ["greet"]
    assert "error" not in report


def test_only_advertised_lists_are_asked_for(tmp_path: Path) -> None:
    argv = server(
        tmp_path,
        "tools_only",
        """
        for line in sys.stdin:
            request = json.loads(line)
            if refused_discover(request):
                continue
            if request.get("method") == "initialize":
                initialized(request, capabilities={"tools": {}})
            elif request.get("method") == "tools/list":
                send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}})
            elif "id" in request:
                print("unexpected", request["method"], file=sys.stderr, flush=True)
                send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}})
        """,
    )
    report, done = run_json("connect", "--json", "--", *argv)
    assert done.returncode == 0, done.stdout
    assert report["tools"] == []
    assert report["resources"] is None
    assert report["resourceTemplates"] is None
    assert report["prompts"] is None
    assert "unexpected" not in done.stderr


def test_readable_report_lists_the_tools() -> None:
    done = run("connect", "--demo", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "mcpl-host-demo 1.0.0" in out
    assert "tools (8)" in out
    for tool in ("echo(text: string)", "add(a: number, b: number)", "sleep", "countdown"):
        assert f"\n  {tool}" in out
    assert "Return the text it is given." in out
    assert "greet(name)" in out
    assert "\x1b[" not in out  # not a terminal: no colour
    # Not a terminal: no width, COLUMNS included; descriptions are whole.
    assert "reporting progress; stops when cancelled." in out


@pytest.mark.parametrize(("no_color", "coloured"), [(None, True), ("1", False)])
def test_colour_only_on_a_terminal_without_no_color(no_color: str | None, coloured: bool) -> None:
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color is not None:
        env["NO_COLOR"] = no_color
    chunks = []
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpl_host.cli", "connect", "--demo"],
            stdout=follower,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        os.close(follower)  # the child holds its own copy
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal and all was read
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=TIMEOUT) == 0
    finally:
        os.close(leader)
    out = b"".join(chunks).decode()
    assert "tools (8)" in out
    assert ("\x1b[" in out) is coloured


def test_the_installed_console_script() -> None:
    assert CONSOLE_SCRIPT.exists(), "pip install -e . puts mcpl-host next to the interpreter"
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "connect", "--json", "--demo"],
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert '"ok": true' in done.stdout


def test_the_servers_own_requests_are_answered_while_connected(tmp_path: Path) -> None:
    argv = server(
        tmp_path,
        "asks",
        """
        initialized(read_initialize())
        json.loads(sys.stdin.readline())  # notifications/initialized
        send({"jsonrpc": "2.0", "id": None, "method": "ping"})
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
        answers, list_request = [], None
        while len(answers) < 2 or list_request is None:
            message = json.loads(sys.stdin.readline())
            if message.get("method") == "tools/list":
                list_request = message
            else:
                answers.append(message)
        # The answers the host gave, handed back as the one tool's description.
        send({"jsonrpc": "2.0", "id": list_request["id"], "result": {"tools": [
            {"name": "seen", "description": json.dumps(answers), "inputSchema": {"type": "object"}}
        ]}})
        sys.stdin.read()
        """,
    )
    report, done = run_json("connect", "--json", "--timeout", "10", "--", *argv)
    assert done.returncode == 0, done.stdout
    answers = json.loads(report["tools"][0]["description"])
    assert {"jsonrpc": "2.0", "id": None, "result": {}} in answers
    refused = next(a for a in answers if a.get("id") == "s1")
    assert refused["error"]["code"] == -32601
