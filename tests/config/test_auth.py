"""A config entry's ``auth`` and ``headers``: parsed strictly into an AuthSpec, every error
naming the file and the key and never a value, every credential a secret of the server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpl_host import StdioTarget
from mcpl_host.config import AuthSpec, ServerConfig, load_config, parse_config
from mcpl_host.transports.targets import HttpTarget, WebSocketTarget

from .helpers import error_of

CANARY = "canary-4uth-S3cret"
URL = "https://mcp.example.test/mcp"
CIMD = "https://client.example.test/mcpl-host.json"


def _one(entry: dict[str, Any], environ: dict[str, str] | None = None) -> ServerConfig:
    return parse_config({"mcpServers": {"web": entry}}, source="c.json", environ=environ or {})[
        "web"
    ]


@pytest.mark.parametrize(
    ("auth", "spec"),
    [
        ("oauth", AuthSpec("oauth")),
        ("none", AuthSpec("none")),
        ({"type": "none"}, AuthSpec("none")),
        ({"type": "oauth"}, AuthSpec("oauth")),
        ({"type": "oauth", "client_id": "abc"}, AuthSpec("oauth", client_id="abc")),
        (
            {
                "type": "oauth",
                "client_id": "abc",
                "client_secret": CANARY,
                "token_endpoint_auth_method": "client_secret_post",
                "scopes": "  mcp:read   mcp:write ",
                "client_metadata_url": CIMD,
            },
            AuthSpec(
                "oauth",
                client_id="abc",
                client_secret=CANARY,
                token_endpoint_auth_method="client_secret_post",
                scopes="mcp:read mcp:write",
                client_metadata_url=CIMD,
            ),
        ),
        (
            {"type": "oauth", "client_metadata_url": CIMD, "token_endpoint_auth_method": "none"},
            AuthSpec("oauth", token_endpoint_auth_method="none", client_metadata_url=CIMD),
        ),
    ],
)
def test_auth_forms(auth: Any, spec: AuthSpec) -> None:
    config = _one({"url": URL, "auth": auth})
    assert config.auth == spec
    assert isinstance(config.target, HttpTarget)
    assert "Authorization" not in config.target.headers
    assert config.problem is None


def test_the_client_secret_is_never_in_the_repr() -> None:
    config = _one(
        {"url": URL, "auth": {"type": "oauth", "client_id": "a", "client_secret": CANARY}}
    )
    assert CANARY not in repr(config)
    assert CANARY not in repr(config.auth)
    assert config.secrets == (CANARY,)


def test_a_client_secret_read_from_the_environment() -> None:
    entry = {"url": URL, "auth": {"type": "oauth", "client_id": "a", "client_secret_env": "SEC"}}
    config = _one(entry, {"SEC": CANARY})
    assert config.auth == AuthSpec("oauth", client_id="a", client_secret=CANARY)
    assert CANARY in config.secrets


def test_a_bearer_token_read_from_the_environment_is_the_authorization_header() -> None:
    entry = {
        "url": URL,
        "headers": {"X-Tenant": "t1"},
        "auth": {"type": "bearer", "token_env": "T"},
    }
    config = _one(entry, {"T": CANARY})
    assert config.auth == AuthSpec("bearer")
    assert isinstance(config.target, HttpTarget)
    assert dict(config.target.headers) == {"X-Tenant": "t1", "Authorization": f"Bearer {CANARY}"}
    assert f"Bearer {CANARY}" in config.secrets
    assert CANARY not in repr(config)


def test_load_config_reads_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            {"mcpServers": {"web": {"url": URL, "auth": {"type": "bearer", "token_env": "MCPL_T"}}}}
        )
    )
    monkeypatch.setenv("MCPL_T", CANARY)
    target = load_config(path)["web"].target
    assert isinstance(target, HttpTarget)
    assert target.headers["Authorization"] == f"Bearer {CANARY}"
    assert load_config(path, environ={})["web"].target is None


@pytest.mark.parametrize(
    ("auth", "environ", "problem"),
    [
        (
            {"type": "bearer", "token_env": "T"},
            {},
            "auth.token_env: environment variable T is not set",
        ),
        ({"type": "bearer", "token_env": "T"}, {"T": ""}, "variable T is not set or empty"),
        (
            {"type": "bearer", "token_env": "T"},
            {"T": f"Bearer {CANARY}"},
            "variable T does not hold a token",
        ),
        (
            {"type": "oauth", "client_id": "a", "client_secret_env": "S"},
            {},
            "auth.client_secret_env: environment variable S is not set or empty",
        ),
    ],
)
def test_an_unset_variable_makes_that_server_unusable_not_the_file(
    auth: dict[str, Any], environ: dict[str, str], problem: str
) -> None:
    servers = parse_config(
        {"mcpServers": {"web": {"url": URL, "auth": auth}, "ok": {"command": "x"}}},
        source="c.json",
        environ=environ,
    )
    assert servers["web"].target is None
    assert servers["web"].problem is not None
    assert problem in servers["web"].problem
    assert CANARY not in servers["web"].problem
    assert servers["web"].auth is not None
    assert servers["ok"].target is not None


def test_every_credential_of_an_entry_is_a_secret() -> None:
    servers = parse_config(
        {
            "mcpServers": {
                "stdio": {"command": "x", "env": {"PLAIN": "v1v1"}},
                "ws": {"url": "wss://h/mcp", "token": "tok1", "headers": {"X-A": "hdr1"}},
                "http": {
                    "url": URL,
                    "headers": {"X-Plain": "hdr2"},
                    "auth": {"type": "oauth", "client_id": "id", "client_secret": "sec1"},
                },
                "sock": {"url": "tcp://127.0.0.1:9"},
            }
        },
        environ={},
    )
    assert servers["stdio"].secrets == ("v1v1",)
    assert isinstance(servers["ws"].target, WebSocketTarget)
    assert set(servers["ws"].secrets) == {"tok1", "hdr1"}
    assert set(servers["http"].secrets) == {"hdr2", "sec1"}
    assert servers["sock"].secrets == ()
    assert isinstance(servers["stdio"].target, StdioTarget)


@pytest.mark.parametrize(
    ("entry", "names"),
    [
        ({"url": URL, "auth": "bearer"}, '.auth must be "oauth", "none", or an object'),
        ({"url": URL, "auth": CANARY}, ".auth must be"),
        ({"url": URL, "auth": 1}, ".auth must be"),
        ({"url": URL, "auth": {}}, ".auth.type must be"),
        ({"url": URL, "auth": {"type": CANARY}}, ".auth.type must be"),
        ({"url": URL, "auth": {"type": "oauth", "clientId": "a"}}, "unknown key 'clientId'"),
        ({"url": URL, "auth": {"type": "oauth", CANARY + " x": "a"}}, "has an unknown key for"),
        ({"url": URL, "auth": {"type": "none", "client_id": "a"}}, "unknown key 'client_id'"),
        ({"url": URL, "auth": {"type": "bearer", "token": CANARY}}, "unknown key 'token'"),
        ({"url": URL, "auth": {"type": "bearer"}}, ".auth.token_env must be the name of"),
        ({"url": URL, "auth": {"type": "bearer", "token_env": "A=" + CANARY}}, ".token_env must"),
        ({"url": URL, "auth": {"type": "oauth", "client_id": 7}}, ".auth.client_id must be"),
        ({"url": URL, "auth": {"type": "oauth", "client_id": ""}}, ".auth.client_id must be"),
        (
            {"url": URL, "auth": {"type": "oauth", "client_id": "a", "client_secret": ["x"]}},
            ".auth.client_secret must be a non-empty string",
        ),
        (
            {"url": URL, "auth": {"type": "oauth", "client_secret_env": 3}},
            ".auth.client_secret_env must be the name",
        ),
        (
            {
                "url": URL,
                "auth": {"type": "oauth", "token_endpoint_auth_method": "private_key_jwt"},
            },
            ".token_endpoint_auth_method must be one of",
        ),
        ({"url": URL, "auth": {"type": "oauth", "scopes": ["a"]}}, ".auth.scopes must be"),
        ({"url": URL, "auth": {"type": "oauth", "scopes": "   "}}, "at least one scope"),
        (
            {"url": URL, "auth": {"type": "oauth", "client_metadata_url": "http://c.test/x.json"}},
            ".client_metadata_url must be an https:// URL with a path",
        ),
        (
            {"url": URL, "auth": {"type": "oauth", "client_metadata_url": "https://c.test/"}},
            ".client_metadata_url must be",
        ),
        (
            {
                "url": URL,
                "auth": {"type": "oauth", "client_metadata_url": f"https://u:{CANARY}@c.test/x"},
            },
            ".client_metadata_url must be",
        ),
        (
            {
                "url": URL,
                "auth": {
                    "type": "oauth",
                    "client_id": "a",
                    "client_secret": CANARY,
                    "client_secret_env": "S",
                },
            },
            "client_secret or client_secret_env, not both",
        ),
        (
            {"url": URL, "auth": {"type": "oauth", "client_secret": CANARY}},
            "a client secret needs its client_id",
        ),
        (
            {
                "url": URL,
                "auth": {
                    "type": "oauth",
                    "client_id": "a",
                    "client_secret": CANARY,
                    "token_endpoint_auth_method": "none",
                },
            },
            "none sends no secret",
        ),
        (
            {
                "url": URL,
                "auth": {
                    "type": "oauth",
                    "client_id": "a",
                    "token_endpoint_auth_method": "client_secret_basic",
                },
            },
            "client_secret_basic needs client_secret or client_secret_env",
        ),
        (
            {
                "url": URL,
                "headers": {"authorization": f"Bearer {CANARY}"},
                "auth": {"type": "bearer", "token_env": "T"},
            },
            "auth type bearer sets Authorization itself",
        ),
        (
            {"url": URL, "headers": {"Authorization": f"Bearer {CANARY}"}, "auth": "oauth"},
            "auth type oauth sets Authorization itself",
        ),
        ({"url": URL, "headers": {"X-A": 5}}, ".headers must map names to string values"),
        ({"url": URL, "headers": [f"X-A: {CANARY}"]}, ".headers must map names"),
        ({"command": "x", "auth": "oauth"}, ".auth is only for servers with a url"),
        ({"command": "x", "headers": {"X-A": CANARY}}, ".headers is only for servers with a url"),
        ({"url": "tcp://h:1", "headers": {"X-A": CANARY}}, ".headers is only for http(s)://"),
        ({"url": "unix:/s", "auth": "none"}, ".auth is only for http:// and https://"),
        ({"url": "wss://h/mcp", "auth": "oauth"}, ".auth is only for http:// and https://"),
    ],
)
def test_a_bad_entry_names_the_file_and_the_key_never_a_value(
    tmp_path: Path, entry: dict[str, Any], names: str
) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"web": entry}}))
    message = error_of(lambda: load_config(path, environ={"T": CANARY, "S": CANARY}), str(path))
    assert f"{path}: key 'mcpServers.web'" in message
    assert names in message
    assert CANARY not in message
