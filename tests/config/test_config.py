"""mcpServers config files: the format users have, errors that name the file and key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpl_host import ConfigurationError, StdioTarget, TcpTarget, UnixTarget
from mcpl_host.config import MAX_CONFIG_BYTES, load_config, parse_config
from mcpl_host.transports.targets import HttpTarget

from .helpers import error_of

CANARY = "canary-c0nf1g-secret"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(text)
    return path


def test_reads_stdio_and_socket_servers_in_file_order(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '{"mcpServers": {'
        '"files": {"command": "npx", "args": ["-y", "@scope/server", "/srv"], '
        '"env": {"TOKEN": "' + CANARY + '"}, "cwd": "/tmp", "autoApprove": []},'
        '"sock": {"url": "unix:/run/mcp.sock"},'
        '"net": {"url": "tcp://127.0.0.1:9000", "disabled": true}}}',
    )
    servers = load_config(path)
    assert list(servers) == ["files", "sock", "net"]
    files = servers["files"]
    assert files.target == StdioTarget.of(
        ["npx", "-y", "@scope/server", "/srv"], cwd="/tmp", env={"TOKEN": CANARY}
    )
    assert files.source == f"{path}:mcpServers.files"
    assert servers["sock"].target == UnixTarget("/run/mcp.sock")
    assert servers["net"].target == TcpTarget("127.0.0.1", 9000)
    assert servers["net"].disabled


def test_an_http_server_with_headers() -> None:
    servers = parse_config(
        {
            "mcpServers": {
                "web": {
                    "url": "https://example.test/mcp",
                    "headers": {"Authorization": "Bearer s3cret-token"},
                },
                "ok": {"command": "x"},
            }
        }
    )
    target = servers["web"].target
    assert isinstance(target, HttpTarget)
    assert target.url == "https://example.test/mcp"
    assert dict(target.headers) == {"Authorization": "Bearer s3cret-token"}
    assert servers["web"].problem is None


def test_a_bad_http_entry_names_the_key_and_never_the_header_value() -> None:
    bad = {"url": "https://example.test/mcp", "headers": {"Mcp-Session-Id": "s3cret-token"}}
    message = error_of(lambda: parse_config({"mcpServers": {"web": bad}}), "<config>")
    assert "mcpServers.web" in message
    assert "s3cret-token" not in message


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("not json", "not valid JSON"),
        ("[]", "top level"),
        ('{"server": {}}', "no servers: expected mcpServers"),
        ('{"mcpServers": []}', "key 'mcpServers' must be an object"),
        ('{"servers": {"a": {"command": "x"}}, "mcpServers": {}}', "both mcpServers and servers"),
        ('{"mcpServers": {"a": 1}}', "key 'mcpServers.a' must be an object"),
        ('{"mcpServers": {"a": {}}}', "key 'mcpServers.a' needs exactly one"),
        ('{"mcpServers": {"a": {"command": "x", "url": "tcp://h:1"}}}', "exactly one"),
        ('{"mcpServers": {"a": {"command": ""}}}', "key 'mcpServers.a'.command"),
        ('{"mcpServers": {"a": {"command": "x", "args": "-v"}}}', "'mcpServers.a'.args"),
        ('{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}', "'mcpServers.a'.env"),
        ('{"mcpServers": {"a": {"command": "x", "cwd": 3}}}', "'mcpServers.a'.cwd"),
        ('{"mcpServers": {"a": {"url": "ftp://h"}}}', "'mcpServers.a'.url"),
        ('{"mcpServers": {"a": {"url": "tcp://h:1", "disabled": "no"}}}', ".disabled"),
    ],
)
def test_errors_name_the_file_and_the_key(tmp_path: Path, text: str, names: str) -> None:
    path = _write(tmp_path, text)
    message = error_of(lambda: load_config(path), str(path))
    assert str(path) in message
    assert names in message


def test_an_entry_of_the_wrong_shape_leaves_the_others_usable() -> None:
    servers = parse_config(
        {
            "mcpServers": {
                "other": {"type": "streamable", "url": "https://example.test/mcp"},
                "bad": {"command": "x", "args": "-v"},
                "good": {"command": "server", "disabled": False},
            }
        },
        source="c.json",
    )
    assert servers["good"].target == StdioTarget.of(["server"])
    for name in ("other", "bad"):
        assert servers[name].target is None
        assert servers[name].source == f"c.json:mcpServers.{name}"
    assert servers["other"].problem is not None
    assert servers["other"].problem.startswith("key 'mcpServers.other'.type must be one of")


def test_a_file_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_bytes(b'{"mcpServers": {}}' + b" " * MAX_CONFIG_BYTES)
    with pytest.raises(ConfigurationError, match=r"huge\.json: the config file is over"):
        load_config(path)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"missing\.json: cannot read"):
        load_config(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("entry", "shown"),
    [
        # The key configured, and pasted whole into a name too: the error shows the name.
        (
            {
                "command": "x",
                "args": ["--token=" + CANARY],
                "env": {"API_KEY": CANARY, "API_KEY=" + CANARY: ""},
            },
            "invalid environment variable name 'API_KEY=***'",
        ),
        (
            {
                "url": "wss://example.test/mcp",
                "token": CANARY,
                "headers": {"X-Token: " + CANARY: "x"},
            },
            "invalid WebSocket header name 'X-Token: ***'",
        ),
        # Only pasted into a name (NAME=VALUE, or a whole "Name: value" header line).
        (
            {"command": "x", "env": {"GITHUB_TOKEN=" + CANARY: ""}},
            "invalid environment variable name 'GITHUB_TOKEN=***'",
        ),
        (
            {"url": "https://example.test/mcp", "headers": {"Authorization: Bearer " + CANARY: ""}},
            "invalid HTTP header name 'Authorization: ***'",
        ),
        (
            {"url": "https://example.test/mcp", "headers": {"Authorization Bearer " + CANARY: ""}},
            "invalid HTTP header name 'Authorization ***'",
        ),
    ],
)
def test_an_error_that_shows_a_configured_name_masks_the_secret_in_it(
    tmp_path: Path, entry: dict[str, Any], shown: str
) -> None:
    path = _write(tmp_path, json.dumps({"mcpServers": {"a": entry}}))
    message = error_of(lambda: load_config(path), str(path))
    assert f"{path}: key 'mcpServers.a'" in message
    assert shown in message
    assert CANARY not in message
