"""Config files written in each client's syntax, run through the real ``mcpl-host``:
variables the server observes, VS Code inputs (without a terminal, and asked on one),
envFile, warnings, ``config list``; no secret ever printed."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .helpers import (
    CLI,
    TIMEOUT,
    TerminalReader,
    closed_port_url,
    run,
    run_in_process,
    run_json,
    server,
)

CANARY = "canary-c0nf1g-f1le-secret"
ANSWER = "typed-1nput-answer"
LOUD = ("--json", "-vv", "--trace")

# A server whose one tool reports digests of its arguments and of its PROBE_* variables:
# what the host expanded is observed without the secrets ever being printed.
PROBE = """\
import hashlib

def digest(value):
    return hashlib.sha256(value.encode()).hexdigest()[:16]

initialized(read_initialize())
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "tools/list":
        result = {"tools": [{"name": "probe", "inputSchema": {"type": "object"}}]}
    elif message["method"] == "tools/call":
        seen = {
            "args": [digest(a) for a in sys.argv[1:]],
            "env": {k: digest(v) for k, v in sorted(os.environ.items()) if k.startswith("PROBE_")},
        }
        result = {"content": [{"type": "text", "text": json.dumps(seen)}]}
    else:
        send({"jsonrpc": "2.0", "id": message["id"],
              "error": {"code": -32601, "message": "Method not found"}})
        continue
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
"""


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def _write(path: Path, data: Any) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return str(path)


def _probe_report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    seen = json.loads(report["result"]["content"][0]["text"])
    assert isinstance(seen, dict)
    return seen


def _cases(tmp_path: Path) -> dict[str, tuple[str, dict[str, str], list[str], dict[str, str]]]:
    """Per client: (config file, extra environment, the arguments and PROBE_* values the
    server must see)."""
    argv = server(tmp_path, "probe", PROBE)
    python, script = argv
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / ".env").write_text(f"# from the envFile\nexport PROBE_FILE='{CANARY}'\n")
    (tmp_path / "token.txt").write_text(CANARY + "\n")
    claude = _write(
        tmp_path / "claude" / ".mcp.json",
        {
            "mcpServers": {
                "probe": {
                    "command": python,
                    "args": [script, "--key=${PROBE_SECRET}", "${LEVEL:-info}"],
                    "env": {"PROBE_TOKEN": "${PROBE_SECRET}"},
                }
            }
        },
    )
    vscode = _write(
        tmp_path / "proj" / ".vscode" / "mcp.json",
        {
            "inputs": [
                {"type": "promptString", "id": "token", "description": "Token", "password": True}
            ],
            "servers": {
                "probe": {
                    "type": "stdio",
                    "command": python,
                    "args": [script, "--key=${env:PROBE_SECRET}"],
                    "env": {"PROBE_TOKEN": "${input:token}"},
                    "envFile": "${workspaceFolder}/.env",
                }
            },
        },
    )
    cursor = _write(
        tmp_path / "proj" / ".cursor" / "mcp.json",
        {
            "mcpServers": {
                "probe": {
                    "command": python,
                    "args": [script, "--key=${env:PROBE_SECRET}", "${workspaceFolderBasename}"],
                    "env": {"PROBE_TOKEN": "${env:PROBE_SECRET}"},
                    "envFile": ".env",
                },
                "off": {"command": "nothing", "disabled": True},
            }
        },
    )
    windsurf = _write(
        tmp_path / "mcp_config.json",
        {
            "mcpServers": {
                "probe": {
                    "command": python,
                    "args": [script, "--key=${env:PROBE_SECRET}"],
                    "env": {"PROBE_TOKEN": "${file:token.txt}"},
                }
            }
        },
    )
    key = _digest(f"--key={CANARY}")
    secret = _digest(CANARY)
    return {
        "claude-code": (claude, {}, [key, _digest("info")], {"PROBE_TOKEN": secret}),
        "vscode": (
            vscode,
            {"MCPL_HOST_INPUT_TOKEN": CANARY},
            [key],
            {"PROBE_FILE": secret, "PROBE_TOKEN": secret},
        ),
        "cursor": (
            cursor,
            {},
            [key, _digest("proj")],
            {"PROBE_FILE": secret, "PROBE_TOKEN": secret},
        ),
        "windsurf": (windsurf, {}, [key], {"PROBE_TOKEN": secret}),
    }


@pytest.mark.parametrize("client", ["claude-code", "vscode", "cursor", "windsurf"])
def test_each_clients_file_expands_what_the_server_sees(tmp_path: Path, client: str) -> None:
    config, env, args, values = _cases(tmp_path)[client]
    # One enabled server: no --server needed.
    done = run(
        "call", *LOUD, "--tool", "probe", "--config", config, env={"PROBE_SECRET": CANARY, **env}
    )
    seen = _probe_report(done)
    assert seen["args"] == args
    assert seen["env"] == values
    assert json.loads(done.stdout)["server"] == "probe"
    assert CANARY not in done.stdout + done.stderr


def test_an_input_without_a_terminal_names_it_and_how_to_give_it(tmp_path: Path) -> None:
    config = _cases(tmp_path)["vscode"][0]
    report, done = run_json("connect", "--json", "--config", config, env={"PROBE_SECRET": CANARY})
    assert done.returncode == 2
    assert report["error"]["kind"] == "config-error"
    assert report["error"]["message"] == (
        f"{config}:servers.probe: env: input 'token' (Token) has no value: set the environment "
        "variable MCPL_HOST_INPUT_TOKEN, or run mcpl-host on a terminal to be asked"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_an_input_is_asked_on_the_terminal_without_echo(tmp_path: Path) -> None:
    config = _cases(tmp_path)["vscode"][0]
    leader, follower = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MCPL_HOST_INPUT_")}
    environment["PROBE_SECRET"] = CANARY
    process = subprocess.Popen(
        [*CLI, "call", "--json", "--tool", "probe", "--config", config],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=environment,
        text=True,
    )
    os.close(follower)
    reader = TerminalReader(leader)
    try:
        deadline = time.monotonic() + TIMEOUT
        while "needs Token" not in reader.text():
            assert time.monotonic() < deadline, reader.text()
            assert process.poll() is None, reader.text()  # ended without asking
            time.sleep(0.02)
        os.write(leader, ANSWER.encode() + b"\n")
        out, _ = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join()
        os.close(leader)
    terminal = reader.text()
    assert "mcpl-host: probe needs Token: " in terminal
    assert ANSWER not in terminal  # not echoed
    seen = json.loads(json.loads(out)["result"]["content"][0]["text"])
    assert seen["env"]["PROBE_TOKEN"] == _digest(ANSWER)
    assert ANSWER not in out  # an input's answer is a secret


def test_warnings_on_stderr_or_in_the_json_report(tmp_path: Path) -> None:
    python, script = server(tmp_path, "probe", PROBE)
    config = _write(
        tmp_path / "c.json",
        {
            "mcpServers": {
                "probe": {"command": python, "args": [script], "autoApprove": [], "frobnicate": 1}
            }
        },
    )
    warning = f"{config}: key 'mcpServers.probe.frobnicate' is not one mcpl-host knows: ignored"
    done = run("connect", "--config", config)
    assert done.returncode == 0, done.stderr
    assert f"mcpl-host: warning: {warning}\n" in done.stderr
    assert "autoApprove" not in done.stderr  # a key the clients define: quiet
    report, done = run_json("connect", "--json", "--config", config)
    assert report["warnings"] == [warning]
    assert "warning" not in done.stderr


def test_several_enabled_servers_still_need_server(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "c.json", {"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}
    )
    report, done = run_json("call", "--json", "--tool", "t", "--config", config)
    assert done.returncode == 2
    assert report["error"]["message"] == (
        f"{config} has 2 enabled servers ('a', 'b'): give --server NAME"
    )


def test_http_and_sse_entries_are_described(tmp_path: Path) -> None:
    url = closed_port_url()
    config = _write(
        tmp_path / ".mcp.json",
        {
            "mcpServers": {
                "legacy": {
                    "type": "sse",
                    "url": url + "?key=${API_KEY}",
                    "headers": {"Authorization": "Bearer ${API_KEY}"},
                },
                "web": {"type": "http", "url": "https://mcp.example.test/mcp"},
                "sock": {"type": "ws", "url": "wss://mcp.example.test/ws", "token": "${API_KEY}"},
            }
        },
    )
    report, done = run_json("config", "list", "--json", config, env={"API_KEY": CANARY})
    assert done.returncode == 0, done.stderr
    (listed,) = report["files"]
    assert listed["format"] == "mcpServers"
    described = {s["name"]: (s["type"], s["target"]) for s in listed["servers"]}
    assert described == {
        "legacy": ("sse", "sse+" + url),
        "web": ("http", "https://mcp.example.test/mcp"),
        "sock": ("ws", "wss://mcp.example.test/ws"),
    }
    report, done = run_json(
        "connect", *LOUD, "--config", config, "--server", "legacy", env={"API_KEY": CANARY}
    )
    assert report["target"] == "sse+" + url
    assert CANARY not in done.stdout + done.stderr


def test_auth_reads_the_new_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _write(
        tmp_path / ".vscode" / "mcp.json",
        {
            "inputs": [{"type": "promptString", "id": "client", "password": False}],
            "servers": {
                "web": {
                    "type": "http",
                    "url": "https://mcp.example.test/mcp",
                    "auth": {"type": "oauth", "client_id": "${input:client}"},
                },
                "open": {"serverUrl": "${env:OPEN_URL}", "auth": "none"},
            },
        },
    )
    # A login reads the entry as status does (this one has nothing to log in to).
    monkeypatch.setenv("OPEN_URL", "https://open.example.test/mcp")
    status, out, _ = run_in_process(
        capsys, "auth", "login", "--json", "--config", config, "--server", "open"
    )
    assert status == 2
    assert json.loads(out)["error"]["message"] == (
        f"{config}:servers.open: its auth is none, not oauth: there is nothing to log in to"
    )
    args = ("auth", "status", "--json", "--config", config, "--server", "web")
    report, done = run_json(*args, env={"MCPL_HOST_INPUT_CLIENT": "client-a"})
    assert done.returncode == 0, done.stderr
    assert report["target"] == f"{config}:servers.web"
    report, done = run_json(*args[:-1], "nope")
    assert report["error"]["message"].startswith(f"{config}: key 'servers.nope' not found")


def _clients_home(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir(parents=True)
    _write(
        home / ".config" / "Claude" / "claude_desktop_config.json",
        {"mcpServers": {"files": {"command": "npx", "args": ["-y", "srv", "/tmp"]}}},
    )
    _write(
        home / ".claude.json",
        {
            "mcpServers": {"github": {"type": "http", "url": "https://api.example.test/mcp"}},
            "projects": {
                str(project.resolve()): {
                    "mcpServers": {"local": {"command": "node", "env": {"K": "${API_KEY}"}}}
                }
            },
        },
    )
    _write(
        home / ".config" / "Code" / "User" / "mcp.json",
        {"servers": {"remote": {"type": "sse", "url": "https://sse.example.test/sse"}}},
    )
    _write(
        home / ".cursor" / "mcp.json",
        {
            "mcpServers": {
                "db": {"url": "https://db.example.test/mcp", "headers": {"X-Key": CANARY}}
            }
        },
    )
    broken = home / ".codeium" / "windsurf" / "mcp_config.json"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"mcpServers": {')
    _write(
        project / ".vscode" / "mcp.json",
        {"servers": {"mine": {"command": "python", "env": {"TOKEN": "${input:tok}"}}}},
    )
    return home, project


def _run_in(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NO_COLOR", "COLUMNS") and not k.startswith("MCPL_HOST_INPUT_")
    }
    environment.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), API_KEY=CANARY)
    return subprocess.run(
        [*CLI, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment,
        cwd=project,
    )


def test_config_list_finds_the_clients_files(tmp_path: Path) -> None:
    home, project = _clients_home(tmp_path)
    done = _run_in(project, home, "config", "list", "--json")
    assert done.returncode == 2  # one file could not be read
    report = json.loads(done.stdout)
    files = report["files"]
    assert [(f["client"], f["scope"]) for f in files] == [
        ("Claude Desktop", "user"),
        ("Claude Code", "user"),
        ("VS Code", "user"),
        ("Cursor", "user"),
        ("Windsurf", "user"),
        ("VS Code", "project"),
    ]
    servers = {
        f["client"] + "/" + f["scope"]: [(s["name"], s["type"], s["target"]) for s in f["servers"]]
        for f in files
        if f["ok"]
    }
    assert servers == {
        "Claude Desktop/user": [("files", "stdio", "stdio:npx (+3 args)")],
        "Claude Code/user": [
            ("github", "http", "https://api.example.test/mcp"),
            ("local", "stdio", "stdio:node (+0 args)"),
        ],
        "VS Code/user": [("remote", "sse", "sse+https://sse.example.test/sse")],
        "Cursor/user": [("db", "http", "https://db.example.test/mcp")],
        "VS Code/project": [("mine", "stdio", None)],
    }
    assert "not valid JSON" in files[4]["error"]["message"]
    assert files[5]["servers"][0]["problem"].startswith("env: input 'tok' has no value")
    assert report["error"]["kind"] == "config-error"
    assert CANARY not in done.stdout + done.stderr

    done = _run_in(project, home, "config", "list")
    assert done.returncode == 2
    for shown in (
        f"Claude Desktop (user)  {home}/.config/Claude/claude_desktop_config.json",
        "  files  stdio  stdio:npx (+3 args)",
        f"Windsurf (user)  {home}/.codeium/windsurf/mcp_config.json",
        "  error: ",
        "  remote  sse  sse+https://sse.example.test/sse",
    ):
        assert shown in done.stdout
    assert CANARY not in done.stdout + done.stderr


def test_config_list_with_nothing_installed(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    home.mkdir()
    done = _run_in(project, home, "config", "list")
    assert done.returncode == 0
    assert done.stdout.startswith("no MCP client config files found; looked for:\n")
    assert f"{home}/.cursor/mcp.json" in done.stdout
