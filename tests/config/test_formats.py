"""Each client's config format and variable syntax, read as its owner writes it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcpl_host import ConfigurationError, StdioTarget, TcpTarget
from mcpl_host.config import InputSpec, load_config, parse_config, read_config
from mcpl_host.transports.targets import HttpTarget, WebSocketTarget

from .helpers import error_of

CANARY = "canary-f0rmat-secret"


def _file(tmp_path: Path, data: Any, name: str = "servers.json") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_claude_code_variables_in_every_field() -> None:
    environ = {"TOKEN": CANARY, "BIN": "/opt/bin/server", "HOST": "mcp.example.test"}
    servers = parse_config(
        {
            "mcpServers": {
                "local": {
                    "command": "${BIN}",
                    "args": ["--token=${TOKEN}", "--level=${LEVEL:-info}"],
                    "env": {"API_KEY": "${TOKEN}", "MODE": "${MODE:-fast}"},
                },
                "remote": {
                    "type": "http",
                    "url": "https://${HOST}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                },
            }
        },
        environ=environ,
    )
    local = servers["local"]
    assert local.target == StdioTarget.of(
        ["/opt/bin/server", f"--token={CANARY}", "--level=info"],
        env={"API_KEY": CANARY, "MODE": "fast"},
    )
    remote = servers["remote"].target
    assert isinstance(remote, HttpTarget)
    assert remote.url == "https://mcp.example.test/mcp"
    assert remote.transport == "streamable-http"
    assert dict(remote.headers) == {"Authorization": f"Bearer {CANARY}"}
    # What variables gave outside command/cwd/envFile is masked like any credential.
    assert CANARY in local.secrets
    assert "info" not in local.secrets
    assert "mcp.example.test" in servers["remote"].secrets
    assert "/opt/bin/server" not in local.secrets


def test_what_the_variables_naming_places_give_is_not_masked() -> None:
    environ = {"HOME": "/home/ann", "XDG_DATA_HOME": "/data/ann", "TOKEN": CANARY}
    entry = {"command": "s", "args": ["--root=${HOME}/p", "${XDG_DATA_HOME}", "${TOKEN}"]}
    config = parse_config({"mcpServers": {"s": entry}}, environ=environ)["s"]
    assert config.target == StdioTarget.of(["s", "--root=/home/ann/p", "/data/ann", CANARY])
    assert config.secrets == (CANARY,)


def test_a_default_applies_to_an_empty_variable_too() -> None:
    servers = parse_config(
        {"mcpServers": {"a": {"command": "x", "args": ["${EMPTY:-d}", "${EMPTY}"]}}},
        environ={"EMPTY": ""},
    )
    target = servers["a"].target
    assert isinstance(target, StdioTarget)
    assert target.argv == ("x", "d", "")


@pytest.mark.parametrize(
    ("field", "entry", "names"),
    [
        ("args", {"command": "x", "args": ["${MISSING}"]}, "MISSING"),
        ("env", {"command": "x", "env": {"K": "${env:MISSING}"}}, "MISSING"),
        ("url", {"url": "https://h/${MISSING}"}, "MISSING"),
        ("headers", {"url": "https://h/", "headers": {"X": "${MISSING}"}}, "MISSING"),
        ("args", {"command": "x", "args": ["${config:editor.font}"]}, "${config:editor.font}"),
        ("args", {"command": "x", "args": ["${ sk-" + CANARY + " }"]}, "a ${...} form"),
    ],
)
def test_an_unresolved_variable_is_the_entry_problem_naming_it(
    field: str, entry: dict[str, Any], names: str
) -> None:
    servers = parse_config(
        {"mcpServers": {"bad": entry, "good": {"command": "y"}}}, environ={"SET": CANARY}
    )
    bad = servers["bad"]
    assert bad.target is None
    assert bad.problem is not None
    assert bad.problem.startswith(f"{field}: ")
    assert names in bad.problem
    assert CANARY not in bad.problem
    assert servers["good"].target == StdioTarget.of(["y"])


def test_a_bare_dollar_variable_is_left_as_written() -> None:
    servers = parse_config({"mcpServers": {"a": {"command": "x", "args": ["$HOME", "a$b"]}}})
    target = servers["a"].target
    assert isinstance(target, StdioTarget)
    assert target.argv == ("x", "$HOME", "a$b")


def test_cursor_predefined_variables_and_static_oauth(tmp_path: Path) -> None:
    workspace = tmp_path / "proj"
    path = _file(
        tmp_path,
        {
            "mcpServers": {
                "files": {
                    "command": "npx",
                    "args": [
                        "${workspaceFolder}${/}src",
                        "${workspaceFolderBasename}",
                        "${userHome}${pathSeparator}x",
                        "${env:NAME}",
                    ],
                },
                "remote": {
                    "url": "https://mcp.example.test/mcp",
                    "auth": {
                        "CLIENT_ID": "${env:CID}",
                        "CLIENT_SECRET": "${env:CSECRET}",
                        "scopes": ["read", "write"],
                    },
                },
            }
        },
        name="proj/.cursor/mcp.json",
    )
    environ = {"HOME": "/home/ada", "NAME": "n", "CID": "client-1", "CSECRET": CANARY}
    servers = load_config(path, environ=environ)
    target = servers["files"].target
    assert isinstance(target, StdioTarget)
    sep = os.sep
    # The workspace of a file in .cursor/ is the directory holding .cursor.
    assert target.argv[1:] == (
        f"{workspace.resolve()}{sep}src",
        "proj",
        f"/home/ada{sep}x",
        "n",
    )
    auth = servers["remote"].auth
    assert auth is not None
    assert (auth.kind, auth.client_id, auth.client_secret, auth.scopes) == (
        "oauth",
        "client-1",
        CANARY,
        "read write",
    )
    assert CANARY in servers["remote"].secrets


def test_windsurf_server_url_and_file_variable(tmp_path: Path) -> None:
    (tmp_path / "token.txt").write_text(CANARY + "\n")
    path = _file(
        tmp_path,
        {
            "mcpServers": {
                "remote": {
                    "serverUrl": "https://mcp.example.test/sse",
                    "headers": {"X-Key": "${file:token.txt}", "X-User": "${env:USER_NAME}"},
                },
                "gone": {"serverUrl": "https://h/", "headers": {"X": "${file:missing.txt}"}},
            }
        },
        name="mcp_config.json",
    )
    servers = load_config(path, environ={"USER_NAME": "ada"})
    target = servers["remote"].target
    assert isinstance(target, HttpTarget)
    assert dict(target.headers) == {"X-Key": CANARY, "X-User": "ada"}
    assert CANARY in servers["remote"].secrets
    problem = servers["gone"].problem
    assert problem is not None
    assert "missing.txt" in problem


@pytest.mark.parametrize(
    ("entry", "kind", "transport"),
    [
        ({"type": "sse", "url": "https://h/sse"}, "sse", "sse"),
        ({"url": "sse+https://h/sse"}, "sse", "sse"),
        ({"type": "http", "url": "https://h/mcp"}, "http", "streamable-http"),
        ({"type": "streamable-http", "url": "https://h/mcp"}, "http", "streamable-http"),
        ({"type": "streamableHttp", "url": "https://h/mcp"}, "http", "streamable-http"),
        ({"url": "http://h/mcp"}, "http", "streamable-http"),
    ],
)
def test_type_chooses_the_http_transport(entry: dict[str, Any], kind: str, transport: str) -> None:
    config = parse_config({"mcpServers": {"s": entry}})["s"]
    assert config.kind == kind
    assert isinstance(config.target, HttpTarget)
    assert config.target.transport == transport


def test_type_ws_and_stdio() -> None:
    servers = parse_config(
        {
            "mcpServers": {
                "w": {"type": "ws", "url": "wss://h/mcp"},
                "s": {"type": "stdio", "command": "x"},
                "t": {"url": "tcp://127.0.0.1:9"},
            }
        }
    )
    assert isinstance(servers["w"].target, WebSocketTarget)
    assert servers["s"].target == StdioTarget.of(["x"])
    assert servers["t"].target == TcpTarget("127.0.0.1", 9)
    assert [c.kind for c in servers.values()] == ["ws", "stdio", "tcp"]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"type": "stdio", "url": "https://h/"}, "type stdio needs a command"),
        ({"type": "sse", "command": "x"}, "needs a url, not a command"),
        ({"type": "ws", "url": "https://h/"}, "type ws does not match its http(s):// url"),
        ({"type": "http", "url": "wss://h/"}, "type http does not match its ws(s):// url"),
        ({"type": "http", "url": "sse+https://h/"}, "type http does not match its sse+http"),
        ({"type": "sse", "url": "tcp://h:1"}, "type sse does not match its tcp: url"),
        ({"type": "grpc", "url": "https://h/"}, "type must be one of stdio, http"),
        ({"url": "https://h/", "serverUrl": "https://h/"}, "both url and serverUrl"),
        ({"command": "x", "headers": {"A": "b"}}, "headers is only for servers with a url"),
    ],
)
def test_a_type_contradicting_the_entry_is_an_error(entry: dict[str, Any], says: str) -> None:
    message = error_of(lambda: parse_config({"mcpServers": {"s": entry}}), "<config>")
    assert "key 'mcpServers.s'" in message
    assert says in message


def test_vscode_servers_and_inputs_asked_once_and_secret(tmp_path: Path) -> None:
    asked: list[tuple[str, InputSpec]] = []

    def resolver(server: str, spec: InputSpec) -> str | None:
        asked.append((server, spec))
        return CANARY

    path = _file(
        tmp_path,
        """{
          // a comment, as VS Code allows
          "inputs": [
            {"type": "promptString", "id": "api-key", "description": "API key", "password": true},
          ],
          "servers": {
            "a": {"type": "stdio", "command": "x", "env": {"KEY": "${input:api-key}"}},
            "b": {"type": "http", "url": "https://h/mcp", "headers": {"K": "${input:api-key}"}},
          },
        }""",
        name="proj/.vscode/mcp.json",
    )
    loaded = read_config(path, inputs=resolver)
    assert loaded.format == "vscode"
    assert loaded.servers_key == "servers"
    assert [(s, spec.id, spec.password, spec.description) for s, spec in asked] == [
        ("a", "api-key", True, "API key")
    ]
    a, b = loaded.servers["a"], loaded.servers["b"]
    assert a.source == f"{path}:servers.a"
    assert isinstance(a.target, StdioTarget)
    assert dict(a.target.env) == {"KEY": CANARY}
    assert isinstance(b.target, HttpTarget)
    assert dict(b.target.headers) == {"K": CANARY}
    assert CANARY in a.secrets
    assert CANARY in b.secrets


def test_an_input_without_anyone_to_ask(tmp_path: Path) -> None:
    data = {
        "inputs": [
            {"type": "promptString", "id": "tok", "password": True},
            {"type": "promptString", "id": "region", "default": "eu"},
        ],
        "servers": {
            "a": {"command": "x", "args": ["${input:tok}", "${input:region}"]},
            "off": {"command": "x", "args": ["${input:tok}"], "disabled": True},
        },
    }

    def nobody(server: str, spec: InputSpec) -> str | None:
        assert server != "off", "a disabled entry asks nobody"
        return None

    unanswered = parse_config(data, inputs=nobody)["a"]
    assert unanswered.target is None
    assert unanswered.problem == (
        "args: input 'tok' has no value: set the environment variable MCPL_HOST_INPUT_TOK, "
        "or run mcpl-host on a terminal to be asked"
    )
    answered = parse_config(data, environ={"MCPL_HOST_INPUT_TOK": CANARY})["a"]
    assert isinstance(answered.target, StdioTarget)
    assert answered.target.argv == ("x", CANARY, "eu")  # the region's default
    assert CANARY in answered.secrets


def test_vscode_user_settings_hold_mcp_servers() -> None:
    loaded = parse_config(
        {"editor.fontSize": 12, "mcp": {"servers": {"a": {"command": "x"}}, "inputs": []}}
    )
    assert loaded["a"].source == "<config>:mcp.servers.a"


def test_claude_json_user_and_current_project_servers(tmp_path: Path) -> None:
    project = str(tmp_path / "proj")
    path = _file(
        tmp_path,
        {
            "numStartups": 3,
            "mcpServers": {"shared": {"command": "user-one"}, "mine": {"command": "m"}},
            "projects": {
                project: {"mcpServers": {"shared": {"command": "project-one"}}},
                "/elsewhere": {"mcpServers": {"other": {"command": "o"}}},
            },
        },
        name=".claude.json",
    )
    loaded = read_config(path, workspace=project)
    assert loaded.format == "claude-code"
    assert list(loaded.servers) == ["mine", "shared"]
    shared = loaded.servers["shared"]
    assert shared.target == StdioTarget.of(["project-one"])  # the local scope wins
    assert shared.source == f"{path}:projects.{project}.mcpServers.shared"


def test_env_file_the_entry_env_wins_and_bad_lines_are_warned(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "# secrets\n"
        f"export API_KEY={CANARY}\n"
        'QUOTED="a b\\n"  # comment\n'
        "SINGLE='$NOT ${EXPANDED}'\n"
        "PLAIN=v # comment\n"
        "MODE=from-file\n"
        f"this line is wrong {CANARY}\n"
    )
    path = _file(
        tmp_path,
        {
            "servers": {
                "a": {"command": "x", "envFile": "${workspaceFolder}/.env", "env": {"MODE": "m"}},
                "b": {"command": "x", "envFile": "missing.env"},
            }
        },
    )
    loaded = read_config(path, workspace=str(tmp_path))
    target = loaded.servers["a"].target
    assert isinstance(target, StdioTarget)
    assert dict(target.env) == {
        "API_KEY": CANARY,
        "QUOTED": "a b\n",
        "SINGLE": "$NOT ${EXPANDED}",
        "PLAIN": "v",
        "MODE": "m",
    }
    assert CANARY in loaded.servers["a"].secrets
    assert loaded.warnings == (
        f"{path}: key 'servers.a'.envFile: line 7 of {tmp_path}/.env is not KEY=VALUE: skipped",
    )
    missing = loaded.servers["b"]
    assert missing.target is None
    assert missing.problem == (
        f"envFile: cannot read {tmp_path}/missing.env (No such file or directory)"
    )


def test_unknown_keys_are_warned_known_ones_quiet(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        {
            "mcpServers": {
                "a": {
                    "command": "x",
                    "autoApprove": ["t"],
                    "timeout": 30,
                    "alwaysAllow": [],
                    "description": "d",
                    "disabledTools": [],
                    "comand": "typo",
                    f"Bearer {CANARY}": 1,
                },
                # Keys ignored for the kind are not expanded: no problem from them.
                "b": {"url": "https://h/", "env": {"K": "${UNSET_VAR}"}, "token": "${UNSET_VAR}"},
            }
        },
    )
    loaded = read_config(path, environ={})
    assert loaded.servers["b"].problem is None
    assert isinstance(loaded.servers["b"].target, HttpTarget)
    warnings = loaded.warnings
    assert warnings == (
        f"{path}: key 'mcpServers.a.comand' is not one mcpl-host knows: ignored",
        f"{path}: key 'mcpServers.a' has a key mcpl-host does not know: ignored",
        f"{path}: key 'mcpServers.b.env' is only for stdio servers: ignored",
        f"{path}: key 'mcpServers.b.token' is only for ws(s):// servers: ignored",
    )
    assert CANARY not in "".join(warnings)


def test_jsonc_comments_keep_strings_whole(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        '{"servers": {/* block */ "a": {"command": "x", "args": ["//not a comment", "/*x*/",]},},}',
    )
    target = load_config(path)["a"].target
    assert isinstance(target, StdioTarget)
    assert target.argv == ("x", "//not a comment", "/*x*/")


def test_what_is_still_not_json_names_the_file(tmp_path: Path) -> None:
    path = _file(tmp_path, '{"servers": {"a": } // broken')
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        load_config(path)


@pytest.mark.parametrize("written", ["${API}", "${env:API}"])
def test_an_unset_variable_is_named_as_the_file_wrote_it(written: str) -> None:
    entry = {"command": "s", "args": [written], "env": {"OK": "${HOME:-x}"}}
    config = parse_config({"mcpServers": {"s": entry}}, environ={})["s"]
    assert config.target is None
    assert config.problem == f"args: environment variable API is not set ({written})"
