"""Canaries in every HTTP credential the command takes (``--header``, ``--bearer``, the
variable ``--bearer-env`` names, a config entry's headers, client secret and bearer
variable), sent to a server that refuses with 401 and echoes them back, or to a port
where nothing listens: none of them shows on stdout or stderr (the report, ``--trace``,
``-vv`` logs, error messages), in process and in a real subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import closed_port_url, refusing_http_server, run, run_in_process

HEADER = "cAnAry-h3ader-1f"  # a header with a plain name: a secret only because given
AUTH_HEADER = "cAnAry-auth-h3ader-2e"
BEARER = "cAnAry-b3arer-3d"
ENV_TOKEN = "cAnAry-env-t0ken-4c"
CONFIG_HEADER = "cAnAry-cfg-h3ader-5b"
CLIENT_SECRET = "cAnAry-cl1ent-s3cret-6a"
CONFIG_TOKEN = "cAnAry-cfg-t0ken-79"
CANARIES = (HEADER, AUTH_HEADER, BEARER, ENV_TOKEN, CONFIG_HEADER, CLIENT_SECRET, CONFIG_TOKEN)
VARIABLES = {"MCPL_TEST_TOKEN": ENV_TOKEN, "MCPL_TEST_CFG_TOKEN": CONFIG_TOKEN}
LOUD = ("--json", "--trace", "-vv")


def _leaks(text: str) -> list[str]:
    return [canary for canary in CANARIES if canary in text]


def _config(tmp_path: Path, url: str) -> str:
    path = tmp_path / "servers.json"
    servers = {
        "web": {
            "url": url,
            "headers": {"X-Tenant": CONFIG_HEADER},
            "auth": {
                "type": "oauth",
                "client_id": "mcpl-host-test",
                "client_secret": CLIENT_SECRET,
                "scopes": "mcp",
            },
        },
        "token": {
            "url": url,
            "headers": {"X-Tenant": CONFIG_HEADER},
            "auth": {"type": "bearer", "token_env": "MCPL_TEST_CFG_TOKEN"},
        },
    }
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def _command_lines(url: str, config: str) -> list[tuple[str, ...]]:
    return [
        ("connect", *LOUD, "--header", f"X-Plain: {HEADER}", "--bearer", BEARER, url),
        ("connect", *LOUD, "--header", f"Authorization: Bearer {AUTH_HEADER}", url),
        ("connect", "--trace", "-vv", "--bearer-env", "MCPL_TEST_TOKEN", url),
        ("call", *LOUD, "--tool", "t", "--header", f"X-Plain: {HEADER}", "--bearer", BEARER, url),
        ("call", "--trace", "-vv", "--resource", "r://x", "--bearer-env=MCPL_TEST_TOKEN", url),
        ("connect", *LOUD, "--config", config, "--all"),
        ("connect", "--trace", "-vv", "--config", config, "--server", "web"),
        ("call", *LOUD, "--tool", "t", "--config", config, "--server", "token"),
        # Usage errors: the values are on the command line, never in the message.
        ("connect", "--json", "--header", f"X-Plain {HEADER}", url),
        # (argparse repeats what it cannot use: an unknown argument, a bad --timeout.)
        ("connect", "--json", "--bearer", BEARER, url, "--bogus", BEARER),
        ("connect", "--json", "--header", f"X-Plain: {HEADER}", "--timeout", HEADER, url),
        ("connect", "--json", "--bearer", BEARER, "--config", config, "--all"),
        ("connect", "--json", "--bearer-env", "MCPL_TEST_TOKEN", url, "--bogus", ENV_TOKEN),
    ]


def test_no_canary_shows_in_process_against_a_server_that_echoes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in VARIABLES.items():
        monkeypatch.setenv(name, value)
    with refusing_http_server() as server:
        config = _config(tmp_path, server.url)
        for args in _command_lines(server.url, config):
            status, out, err = run_in_process(capsys, *args)
            assert status in (1, 2, 4, 5, 6), (args, out, err)
            assert not _leaks(out + err), (args, out, err)
            if "--json" in args:
                json.loads(out)  # still exactly one object
        # The echo did reach the report (the challenge's realm), masked.
        status, out, _ = run_in_process(capsys, *_command_lines(server.url, config)[0])
        assert status == 4
        assert "X-Plain=***" in json.loads(out)["error"]["challenge"]["realm"]
    # The credentials did reach the server (so its echo held them).
    sent = json.dumps(server.seen)
    for canary in (HEADER, AUTH_HEADER, BEARER, ENV_TOKEN, CONFIG_HEADER, CONFIG_TOKEN):
        assert canary in sent, canary
    # The client secret goes only to an authorization server, never to the MCP server.
    assert CLIENT_SECRET not in sent


def test_no_canary_shows_in_process_where_nothing_listens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in VARIABLES.items():
        monkeypatch.setenv(name, value)
    url = closed_port_url()
    for args in _command_lines(url, _config(tmp_path, url)):
        status, out, err = run_in_process(capsys, *args)
        assert status in (1, 2, 4, 5, 6), (args, out, err)
        assert not _leaks(out + err), (args, out, err)


def test_no_canary_shows_from_a_real_subprocess(tmp_path: Path) -> None:
    with refusing_http_server() as server:
        config = _config(tmp_path, server.url)
        runs = [
            run(
                "connect",
                *LOUD,
                "--header",
                f"X-Plain: {HEADER}",
                "--bearer-env",
                "MCPL_TEST_TOKEN",
                server.url,
                env=VARIABLES,
            ),
            run("call", *LOUD, "--tool", "t", "--bearer", BEARER, server.url, env=VARIABLES),
            run("connect", *LOUD, "--config", config, "--all", env=VARIABLES),
            run(
                "connect",
                *LOUD,
                "--header",
                f"Authorization: Bearer {AUTH_HEADER}",
                closed_port_url(),
                env=VARIABLES,
            ),
        ]
    for done in runs:
        assert done.returncode in (1, 4, 5, 6), (done.args, done.stdout, done.stderr)
        assert json.loads(done.stdout)["ok"] is False
        assert "trace " in done.stderr  # the trace and the logs were on
        assert "[debug" in done.stderr or "[info" in done.stderr
        assert not _leaks(done.stdout + done.stderr), (done.args, done.stdout, done.stderr)
    assert ENV_TOKEN in json.dumps(server.seen)
