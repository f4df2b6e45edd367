"""``--trace`` and secrets: a canary passed with --env, echoed by the server everywhere it
can, never reaches stdout or stderr; the trace lines do."""

from __future__ import annotations

import json
from pathlib import Path

from .helpers import run, server

CANARY = "Qz7kWx"  # under 8 characters, plainly named: a secret only because --env gave it

ECHOING = """
secret = os.environ["PLAIN"]
print("starting with", secret, file=sys.stderr, flush=True)
for line in sys.stdin:
    request = json.loads(line)
    if refused_discover(request):
        continue
    if request.get("method") == "initialize":
        initialized(request, server_info={"name": "leaky " + secret, "version": secret})
    elif request.get("method") == "tools/list":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": [
            {"name": secret, "description": "uses " + secret, "inputSchema": {"type": "object"}}
        ]}})
    elif request.get("method") == "tools/call":
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32000, "message": "bad " + secret, "data": {secret: secret}}})
"""


def test_trace_lines_on_stderr_and_the_canary_nowhere(tmp_path: Path) -> None:
    argv = server(tmp_path, "echoing", ECHOING)
    done = run("connect", "--json", "--trace", "-vv", "--env", f"PLAIN={CANARY}", "--", *argv)
    assert done.returncode == 0, done.stdout
    assert CANARY not in done.stdout
    assert CANARY not in done.stderr
    trace = [line for line in done.stderr.splitlines() if line.startswith("trace +")]
    assert any(" -> " in line and '"initialize"' in line for line in trace)
    assert any(" <- " in line and "leaky ***" in line for line in trace)
    assert '"name": "leaky ***"' in done.stdout  # masked in the report too
    assert "starting with ***" in done.stderr  # the server's stderr, logged with -vv


def test_the_canary_stays_hidden_in_failures_and_the_readable_report(tmp_path: Path) -> None:
    argv = server(tmp_path, "echoing", ECHOING)
    for args in (
        ("connect", "--trace"),
        ("call", "--trace", "--tool", "x"),
        ("call", "--json", "--tool", "x"),
    ):
        done = run(*args, "--env", f"PLAIN={CANARY}", "--", *argv)
        assert CANARY not in done.stdout + done.stderr, args
    assert done.returncode == 1  # the tool call was refused: a request-error


def test_a_trace_line_is_escaped_and_cut(tmp_path: Path) -> None:
    argv = server(
        tmp_path,
        "noisy",
        r"""
        sys.stdout.write('{"note": "\u001b[31mred", "pad": "' + "x" * 5000 + '"}\n')
        sys.stdout.flush()
        for line in sys.stdin:
            request = json.loads(line)
            if refused_discover(request):
                continue
            if request.get("method") == "initialize":
                initialized(request, capabilities={})
        """,
    )
    done = run("connect", "--json", "--trace", "--", *argv)
    assert done.returncode == 0, done.stdout
    noisy = [line for line in done.stderr.splitlines() if '"note"' in line]
    assert len(noisy) == 1
    assert "\x1b" not in noisy[0]
    assert "\\u001b[31mred" in noisy[0]  # the raw ESC the server wrote, escaped
    assert noisy[0].endswith("…[cut]")
    assert len(noisy[0]) < 700


def test_a_configured_env_value_is_a_secret_too(tmp_path: Path) -> None:
    argv = server(tmp_path, "echoing", ECHOING)
    config = tmp_path / "mcp.json"
    entry = {"command": argv[0], "args": argv[1:], "env": {"PLAIN": CANARY}}
    config.write_text(json.dumps({"mcpServers": {"leaky": entry}}))
    done = run("connect", "--trace", "-v", "--config", str(config), "--server", "leaky")
    assert done.returncode == 0, done.stdout
    assert "leaky ***" in done.stdout
    assert "trace [leaky] +" in done.stderr
    assert CANARY not in done.stdout + done.stderr
