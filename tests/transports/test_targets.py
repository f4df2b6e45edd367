"""Targets: validated at construction, parsed strictly, described without secrets."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from mcpl_host.protocol.errors import ConfigurationError
from mcpl_host.protocol.redact import REDACTION_MARK
from mcpl_host.transports.targets import (
    HttpTarget,
    StdioTarget,
    TcpTarget,
    UnixTarget,
    describe,
    parse_target,
    redactor_for,
)

CANARY = "canary-5d02b7e1c4"
GITHUB_SHAPED = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2


def test_stdio_target_of_converts_and_freezes() -> None:
    argv = ["node", "server.js", "--port", "1"]
    env = {"API_TOKEN": CANARY}
    target = StdioTarget.of(argv, env=env, cwd="/tmp")
    argv.append("changed")
    env["API_TOKEN"] = "changed"
    assert target.argv == ("node", "server.js", "--port", "1")
    assert target.env == {"API_TOKEN": CANARY}
    assert isinstance(target.env, MappingProxyType)
    assert target.cwd == "/tmp"
    assert target.inherit_env is False
    same = StdioTarget.of(["node", "server.js", "--port", "1"], cwd="/tmp")
    assert hash(target) == hash(same)
    assert target != same
    assert target == StdioTarget.of(argv[:4], env={"API_TOKEN": CANARY}, cwd="/tmp")


def test_stdio_target_repr_hides_credentials() -> None:
    target = StdioTarget.of(["server", "--token", GITHUB_SHAPED], env={"API_TOKEN": CANARY})
    shown = repr(target)
    assert CANARY not in shown
    assert GITHUB_SHAPED not in shown
    assert "API_TOKEN" in shown
    assert "'--token'" in shown


def test_stdio_target_default_env_is_empty_and_read_only() -> None:
    target = StdioTarget(("prog",))
    assert dict(target.env) == {}
    with pytest.raises(TypeError):
        target.env["X"] = "y"  # type: ignore[index]


@pytest.mark.parametrize("command", ["npx -y @scope/server", "prog", b"prog"])
def test_a_shell_string_is_never_accepted(command: object) -> None:
    with pytest.raises(ConfigurationError, match="not a shell string"):
        StdioTarget.of(command)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="not a shell string"):
        StdioTarget(command)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        ([], "at least the program"),
        (["prog", 3], "argument 1 is a int"),
        ([None], "argument 0 is a NoneType"),
        ([""], "program name is empty"),
        (["prog", "a\0b"], "NUL"),
    ],
)
def test_stdio_argv_is_validated(argv: list[object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        StdioTarget.of(argv)  # type: ignore[arg-type]


def test_stdio_env_is_validated_without_echoing_values() -> None:
    with pytest.raises(ConfigurationError, match="API_TOKEN") as info:
        StdioTarget.of(["prog"], env={"API_TOKEN": 12345678})  # type: ignore[dict-item]
    assert "12345678" not in str(info.value)
    with pytest.raises(ConfigurationError) as info:
        StdioTarget.of(["prog"], env={"API_TOKEN": CANARY + "\0"})
    assert CANARY not in str(info.value)
    for bad_name in ("", "A=B"):
        with pytest.raises(ConfigurationError, match="name"):
            StdioTarget.of(["prog"], env={bad_name: "v"})
    with pytest.raises(ConfigurationError, match="working directory"):
        StdioTarget.of(["prog"], cwd="")
    assert StdioTarget.of(["prog"], cwd=__import__("pathlib").Path("/tmp")).cwd == "/tmp"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tcp://127.0.0.1:8080", TcpTarget("127.0.0.1", 8080)),
        ("tcp://localhost:1", TcpTarget("localhost", 1)),
        ("tcp://mcp.example.com:65535/", TcpTarget("mcp.example.com", 65535)),
        ("TCP://host-1:443", TcpTarget("host-1", 443)),
        ("tcp://[::1]:9000", TcpTarget("::1", 9000)),
        ("tcp://[2001:db8::5]:80", TcpTarget("2001:db8::5", 80)),
        ("unix:/run/mcp/server.sock", UnixTarget("/run/mcp/server.sock")),
        ("unix:relative/server.sock", UnixTarget("relative/server.sock")),
        ("unix:///abs/path.sock", UnixTarget("/abs/path.sock")),
        ("http://example.com:80/mcp", HttpTarget("http://example.com:80/mcp")),
        ("https://example.com/mcp?x=1", HttpTarget("https://example.com/mcp?x=1")),
    ],
)
def test_parse_target_accepts(text: str, expected: object) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "not a server address"),
        ("127.0.0.1:8080", "not a server address"),
        ("just some words", "not a server address"),
        ("http://user:pw@example.com/mcp", "user info"),
        ("http:///mcp", "with a host"),
        ("https://example.com/mcp#frag", "fragment"),
        ("http://example.com:99999/", "bad port"),
        ("ftp://example.com:80", "unsupported target scheme 'ftp'"),
        ("tcp:host:80", "tcp://HOST:PORT"),
        ("tcp://host", "needs a port"),
        ("tcp://host:", "1..65535"),
        ("tcp://host:0", "1..65535"),
        ("tcp://host:65536", "1..65535"),
        ("tcp://host:+80", "1..65535"),
        ("tcp://host:8o", "1..65535"),
        ("tcp://:80", "not a valid host"),
        ("tcp://ho st:80", "not a valid host"),
        ("tcp://::1:80", "in brackets"),
        ("tcp://[::1:80", "unclosed"),
        ("tcp://[not-ipv6]:80", "not an IPv6 address"),
        ("tcp://[::1]80", "needs a port"),
        ("tcp://host:80/mcp", "no path"),
        ("unix:", "needs a socket path"),
        ("unix://host/path", "unix:///ABSOLUTE/PATH"),
        ("unix:a\0b", "NUL"),
    ],
)
def test_parse_target_rejects(text: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        parse_target(text)


@pytest.mark.parametrize(
    "text",
    [
        f"tcp://user:{CANARY}@host:80",
        f"tcp://{CANARY}@host:80",
        f"tcp://host:80?token={CANARY}",
        f"tcp://host:80/#{CANARY}",
        f"tcp://host:99999?api_key={CANARY}",
        f"unix://{CANARY}@host/x",
    ],
)
def test_parse_errors_never_echo_credentials(text: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_target(text)
    assert CANARY not in str(info.value)


def test_parse_target_refuses_non_text() -> None:
    with pytest.raises(ConfigurationError):
        parse_target(8080)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("host", "port"), [("", 80), ("h", 0), ("h", 65536), ("h", True), ("h", "80")]
)
def test_tcp_target_validates(host: str, port: int) -> None:
    with pytest.raises(ConfigurationError):
        TcpTarget(host, port)


def test_unix_target_validates() -> None:
    with pytest.raises(ConfigurationError):
        UnixTarget("")


def test_describe_is_short_and_safe() -> None:
    stdio = StdioTarget.of(["/usr/local/bin/npx", "-y", "server", "--token", CANARY])
    assert describe(stdio) == "stdio:npx (+4 args)"
    assert describe(StdioTarget.of(["prog", "x"])) == "stdio:prog (+1 arg)"
    assert (
        describe(StdioTarget.of([f"/opt/{GITHUB_SHAPED}"])) == f"stdio:{REDACTION_MARK} (+0 args)"
    )
    assert describe(TcpTarget("127.0.0.1", 80)) == "tcp://127.0.0.1:80"
    assert describe(TcpTarget("::1", 80)) == "tcp://[::1]:80"
    assert describe(UnixTarget("/run/s.sock")) == "unix:/run/s.sock"
    assert describe(UnixTarget("/run/evil\nforged=1")) == "unix:/run/evil\\u000aforged=1"


def test_redactor_for_stdio_masks_configured_credentials() -> None:
    target = StdioTarget.of(
        ["server", "--api-key", "argsecret-1234", GITHUB_SHAPED],
        env={"SERVICE_TOKEN": CANARY, "LOG_LEVEL": "info"},
    )
    redactor = redactor_for(target, extra_secrets=["extra-secret-99"])
    text = f"{CANARY} argsecret-1234 {GITHUB_SHAPED} extra-secret-99 info"
    masked = redactor.redact(text)
    assert masked == " ".join([REDACTION_MARK] * 4 + ["info"])


def test_redactor_for_sockets_masks_only_extra_secrets() -> None:
    redactor = redactor_for(TcpTarget("h", 1), extra_secrets=[CANARY])
    assert redactor.redact(f"x {CANARY} y") == f"x {REDACTION_MARK} y"
    assert redactor_for(UnixTarget("/s")).redact(CANARY) == CANARY


@pytest.mark.parametrize("value", ["Bearer caf\u00e9-secret", "a\r\nb", "x\0"])
def test_an_http_header_value_that_cannot_go_on_the_wire_is_a_configuration_error(
    value: str,
) -> None:
    with pytest.raises(ConfigurationError) as info:
        HttpTarget("https://example.test/mcp", headers={"Authorization": value})
    assert "secret" not in str(info.value)
    assert "ASCII" in str(info.value)
