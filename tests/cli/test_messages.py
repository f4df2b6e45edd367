"""What the real command says about targets: every ``--help`` and every target error
names every kind of target; a server command given without ``--`` is answered with the
exact command line to run instead (secrets masked); ``--env`` with a network target says
what that target is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpl_host.cli.args import parse
from mcpl_host.cli.targets import resolve
from mcpl_host.transports.targets import HttpTarget

from .helpers import run, run_json

KINDS = ("-- CMD", "tcp://HOST:PORT", "unix:PATH", "ws(s)://", "http(s)://", "sse+http(s)://")
OTHERS = ("--demo", "--config")


def names_every_kind(text: str) -> None:
    flat = " ".join(text.split())  # argparse wraps its help to the terminal's width
    for kind in (*KINDS, *OTHERS):
        assert kind in flat, (kind, text)


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["connect"],
        ["call"],
        ["auth"],
        ["auth", "login"],
        ["auth", "status"],
        ["auth", "logout"],
    ],
)
def test_every_help_names_every_kind_of_target(command: list[str]) -> None:
    done = run(*command, "--help")
    assert done.returncode == 0, done.stderr
    names_every_kind(done.stdout)


@pytest.mark.parametrize(
    "args",
    [
        ["connect"],
        ["connect", "--demo", "tcp://127.0.0.1:9"],
        ["call", "--tool", "t"],
        ["connect", "ftp://example.com/mcp"],
        ["connect", "tcp://nowhere"],
    ],
)
def test_every_target_error_names_every_kind(args: list[str]) -> None:
    report, done = run_json(*args[:1], "--json", *args[1:])
    assert done.returncode == 2
    assert report["error"]["kind"] == "config-error"
    names_every_kind(report["error"]["message"])
    names_every_kind(done.stderr + report["error"]["message"])


@pytest.mark.parametrize(
    ("args", "fixed"),
    [
        (["connect", "npx", "-y", "@pkg/server"], "mcpl-host connect -- npx -y @pkg/server"),
        (["connect", "python", "server.py"], "mcpl-host connect -- python server.py"),
        (["connect", "uvx"], "mcpl-host connect -- uvx"),
        (
            [
                "call",
                "--tool",
                "echo",
                "--args",
                '{"a": 1}',
                "node",
                "dist/index.js",
                "--port",
                "3",
            ],
            "mcpl-host call --tool echo --args '{\"a\": 1}' -- node dist/index.js --port 3",
        ),
        (["connect", "./my server"], "mcpl-host connect -- './my server'"),
    ],
)
def test_a_command_without_the_mark_is_answered_with_the_exact_fix(
    args: list[str], fixed: str
) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"to run a stdio server, put -- before its command: {fixed}\n" in done.stderr
    assert "unrecognized arguments" not in done.stderr


def test_the_fix_shown_in_the_docs_is_what_the_command_writes() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    done = run("connect", "npx", "-y", "@pkg/server")
    said = done.stderr.splitlines()[-1]
    assert said.startswith("mcpl-host: error: 'npx' is not a TARGET")
    assert f"\n```\n{said}\n```\n" in page


def test_the_fix_is_one_json_object_under_json() -> None:
    report, done = run_json("connect", "--json", "python", "server.py")
    assert done.returncode == 2
    assert report["ok"] is False
    assert report["error"]["kind"] == "config-error"
    assert "mcpl-host connect --json -- python server.py" in report["error"]["message"]


def test_secrets_in_the_echoed_command_line_are_masked() -> None:
    secret, token = "hunter2-env-value", "sk-live-0123456789abcdefXYZ"
    done = run(
        "connect", "--env", f"API_KEY={secret}", "--json",
        "npx", "server", "--api-key", token, "--token=" + token,
    )  # fmt: skip
    assert done.returncode == 2
    shown = done.stdout + done.stderr
    assert secret not in shown
    assert token not in shown
    report = json.loads(done.stdout)
    assert (
        "mcpl-host connect --env 'API_KEY=***' --json -- npx server --api-key '***' '--token=***'"
        in report["error"]["message"]
    )


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        ("http://127.0.0.1:9/mcp", "an HTTP server"),
        ("sse+https://example.com/sse", "an HTTP server (the legacy HTTP+SSE transport)"),
        ("ws://127.0.0.1:9/mcp", "a WebSocket server"),
        ("tcp://127.0.0.1:9", "a TCP socket"),
        ("unix:/tmp/mcp.sock", "a Unix socket"),
    ],
)
def test_env_with_a_network_target_says_what_the_target_is(target: str, kind: str) -> None:
    done = run("connect", "--env", "TOKEN=s3cret-value-1", target)
    assert done.returncode == 2
    assert "socket" not in done.stderr or "socket" in kind
    assert f"--env is for stdio servers (-- CMD, --demo, --config); TARGET is {kind}" in done.stderr
    if "HTTP" in kind:
        assert "--header" in done.stderr
    assert "s3cret-value-1" not in done.stderr


def test_http_options_name_the_http_targets_and_what_was_given() -> None:
    done = run("connect", "--header", "X-Key: v4lue-secret", "--demo")
    assert done.returncode == 2
    assert "are for an http(s):// or sse+http(s):// TARGET, not --demo" in done.stderr
    assert "v4lue-secret" not in done.stderr


def test_headers_go_with_an_sse_target_and_keep_its_transport() -> None:
    options = parse(["connect", "--header", "X-Key: value", "sse+https://example.com/sse"])
    target = resolve(options).servers[0].target
    assert isinstance(target, HttpTarget)
    assert target.transport == "sse"
    assert dict(target.headers) == {"X-Key": "value"}
