"""``mcpl-host auth login|status|logout`` and the OAuth that ``connect`` and ``call`` give
an HTTP server: the parser's rules, status and logout over a token file in a temporary
directory (MCPL_HOST_AUTH_FILE, set for every test by conftest.py), and the whole flow
against a real authorization server (tests/auth/asserver.py), a stand-in browser and a
real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpl_host.auth import ClientInfo, FileTokenStore, TokenSet
from mcpl_host.cli.args import AuthOptions, UsageError, parse

from .helpers import (
    CLI,
    TIMEOUT,
    TerminalReader,
    authorization_server,
    browser_env,
    refusing_http_server,
    run,
    run_in_process,
    run_json,
)

URL = "https://mcp.example.test/mcp"
ISSUER = "https://auth.example.test"
ACCESS = "cAnAry-access-t0ken-91"
REFRESH = "cAnAry-refresh-t0ken-82"
SECRET = "cAnAry-client-s3cret-73"


# -- the command line ----------------------------------------------------------------


def test_auth_options() -> None:
    options = parse(
        ["auth", "login", "--timeout", "5", "--no-browser", "--port", "8123", "--force", URL]
    )
    assert options == AuthOptions(
        action="login", url=URL, timeout=5.0, open_browser=False, port=8123, force=True
    )
    assert parse(["auth", "status"]) == AuthOptions(action="status")
    assert parse(["auth", "logout", "--json", "--config", "c.json", "--server", "s"]) == (
        AuthOptions(action="logout", json=True, config="c.json", server="s")
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["auth"], "required: ACTION"),
        (["auth", "login"], "no target given"),
        (["auth", "login", "tcp://127.0.0.1:9"], "must be http:// or https://"),
        (["auth", "status", "wss://h/mcp"], "must be http:// or https://"),
        (["auth", "login", "--config", "c.json"], "--config and --server NAME go together"),
        (["auth", "logout", "--server", "s"], "--config and --server NAME go together"),
        (["auth", "login", URL, "--config", "c.json", "--server", "s"], "give one target"),
        (["auth", "status", "--", "server"], "no -- CMD"),
        (["auth", "login", "--port", "70000", URL], "not a port number"),
        (["auth", "login", "--timeout", "0", URL], "positive number"),
        (["auth", "status", "--force"], "unrecognized arguments: --force"),
        (["auth", "logout", URL, "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_auth_usage(args: list[str], says: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse(args)
    assert says in refused.value.message
    assert refused.value.usage.startswith("usage: mcpl-host auth")


def test_help_documents_the_auth_commands_and_the_exit_codes() -> None:
    top = " ".join(run("--help").stdout.split())  # argparse wraps lines
    assert "auth" in top
    assert "4 authorization required" in top
    assert "5 the authorization flow failed" in top
    login = run("auth", "login", "--help").stdout
    for text in ("--no-browser", "--port PORT", "--force", "--timeout SECONDS", "--config FILE"):
        assert text in login


# -- status and logout over a token file ---------------------------------------------


def _fill(path: Path, entries: list[tuple[str, str, str, float | None]]) -> None:
    """Tokens (with canary values) for each (issuer, client, resource, expires_at), and
    a registration with a secret for each issuer."""

    async def fill() -> None:
        store = FileTokenStore(path)
        for issuer, client_id, resource, expires_at in entries:
            await store.set_client(issuer, ClientInfo(client_id, client_secret=SECRET))
            tokens = TokenSet(ACCESS, expires_at=expires_at, refresh_token=REFRESH, scope="mcp")
            await store.set_tokens(issuer, client_id, resource, tokens)

    trio.run(fill)


@pytest.fixture
def token_file() -> Path:
    path = Path(os.environ["MCPL_HOST_AUTH_FILE"])
    now = time.time()
    _fill(
        path,
        [
            (ISSUER, "client-a", URL, now + 3600),
            (ISSUER, "client-a", "https://other.example.test/mcp", now - 60),
            ("https://idp.example.test", "client-b", "https://mcp.example.test", None),
        ],
    )
    return path


def _leaks(text: str) -> bool:
    return any(canary in text for canary in (ACCESS, REFRESH, SECRET))


def test_status_lists_every_entry_and_never_a_token(
    token_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run_in_process(capsys, "auth", "status", "--json", "-vv")
    assert status == 0, err
    report = json.loads(out)
    assert report["ok"] is True
    assert report["file"] == str(token_file)
    # By issuer, then resource, then client.
    assert [(e["client_id"], e["resource"], e["expired"]) for e in report["entries"]] == [
        ("client-a", URL, False),
        ("client-a", "https://other.example.test/mcp", True),
        ("client-b", "https://mcp.example.test", False),
    ]
    first = report["entries"][0]
    assert first["issuer"] == ISSUER
    assert first["scope"] == "mcp"
    assert first["refresh_token"] is True
    assert first["token_type"] == "Bearer"
    assert isinstance(first["expires_at"], float)
    assert report["entries"][2]["expires_at"] is None
    assert not _leaks(out + err)


def test_status_for_a_server_lists_its_entries_and_those_of_a_tree_it_is_in(
    token_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run_in_process(capsys, "auth", "status", "--json", URL)
    assert status == 0
    report = json.loads(out)
    assert report["target"] == URL
    assert {e["resource"] for e in report["entries"]} == {URL, "https://mcp.example.test"}
    # The readable form: the same facts, and still no token.
    status, out, err = run_in_process(capsys, "auth", "status", URL)
    assert status == 0
    assert "client-a" in out
    assert "left)" in out  # the expiry, relative
    assert "refreshable  yes" in out
    assert not _leaks(out + err)


def test_status_of_a_config_server(token_file: Path, tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    servers = {"web": {"url": URL, "auth": {"type": "oauth", "client_id": "client-a"}}}
    config.write_text(json.dumps({"mcpServers": servers}))
    report, done = run_json("auth", "status", "--json", "--config", str(config), "--server", "web")
    assert done.returncode == 0, done.stderr
    assert report["target"] == f"{config}:mcpServers.web"
    assert len(report["entries"]) == 2
    assert not _leaks(done.stdout + done.stderr)


def test_logout_of_one_server_then_of_everything(token_file: Path) -> None:
    report, done = run_json("auth", "logout", "--json", URL)
    assert done.returncode == 0, done.stderr
    assert report["removed"] == 2  # its own resource and the tree's
    left = FileTokenStore(token_file).entries()
    assert [e.resource for e in left] == ["https://other.example.test/mcp"]
    done = run("auth", "logout")
    assert done.returncode == 0
    assert "forgot 1 stored login" in done.stdout
    assert FileTokenStore(token_file).entries() == []
    assert json.loads(token_file.read_text())["clients"] == {}  # registrations too


def test_status_of_an_empty_or_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_in_process(capsys, "auth", "status")
    assert status == 0
    assert "no stored logins" in out


def test_a_token_file_from_a_newer_version_is_a_config_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = Path(os.environ["MCPL_HOST_AUTH_FILE"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"version": 99}')
    status, out, _ = run_in_process(capsys, "auth", "status", "--json")
    assert status == 2
    assert json.loads(out)["error"]["kind"] == "config-error"


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"command": "x"}, "auth is for http:// and https:// servers"),
        ({"url": URL, "auth": "none"}, "its auth is none, not oauth"),
        ({"url": URL, "auth": {"type": "bearer", "token_env": "T"}}, "its auth is bearer"),
        (
            {"url": URL, "auth": {"type": "oauth", "client_id": "a", "client_secret_env": "NOPE"}},
            "environment variable NOPE is not set",
        ),
    ],
)
def test_login_to_a_config_server_that_cannot_log_in(
    tmp_path: Path, entry: dict[str, Any], says: str
) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"s": entry}}))
    args = ("auth", "login", "--json", "--config", str(config), "--server", "s")
    report, done = run_json(*args, env={"T": SECRET})
    assert done.returncode == 2
    assert says in report["error"]["message"]
    assert not _leaks(done.stdout + done.stderr)


def test_a_401_where_no_login_can_help_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "servers.json"
    with refusing_http_server() as server:
        config.write_text(json.dumps({"mcpServers": {"s": {"url": server.url, "auth": "none"}}}))
        for args, says in (
            (("--bearer", SECRET, server.url), "the server refused the Authorization given"),
            (("--config", str(config), "--server", "s"), "its config says auth: none"),
        ):
            status, out, err = run_in_process(capsys, "connect", "--json", *args)
            assert status == 4, out + err
            error = json.loads(out)["error"]
            assert error["kind"] == "auth-required"
            assert says in error["message"]
            assert "login" not in error  # a login would not be used
            assert not _leaks(out + err)
    assert not Path(os.environ["MCPL_HOST_AUTH_FILE"]).exists()  # no flow ran


def test_a_login_port_already_taken_is_a_config_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        report, done = run_json("auth", "login", "--json", "--port", str(port), URL)
    assert done.returncode == 2
    assert report["error"]["kind"] == "config-error"
    assert f"cannot listen for the redirect on 127.0.0.1:{port}" in report["error"]["message"]


# -- against a real authorization server ---------------------------------------------


def _token_in(path: Path) -> str:
    tokens = json.loads(path.read_text())["tokens"]
    assert len(tokens) == 1
    access: str = tokens[0]["access_token"]
    return access


@pytest.mark.timeout(120)  # a dozen commands, each a new Python process
def test_login_then_connect_with_the_stored_tokens_then_logout(tmp_path: Path) -> None:
    token_file = Path(os.environ["MCPL_HOST_AUTH_FILE"])
    browser = browser_env(tmp_path)
    with authorization_server() as url:
        # No login yet, no person: the command says how to log in, exit 4.
        report, done = run_json("connect", "--json", url)
        assert done.returncode == 4, done.stderr
        error = report["error"]
        assert error["kind"] == "auth-required"
        assert error["status"] == 401
        assert error["login"] == f"mcpl-host auth login {url}"
        assert f"`mcpl-host auth login {url}`" in error["message"]
        assert error["challenge"]["resource_metadata"].endswith(
            "/.well-known/oauth-protected-resource/mcp"
        )
        done = run("call", "--tool", "whoami", url)
        assert done.returncode == 4
        assert f"mcpl-host auth login {url}" in done.stdout

        # The login: discovery, a registration, the browser, the tokens kept.
        report, done = run_json("auth", "login", "--json", "--trace", url, env=browser)
        assert done.returncode == 0, done.stderr
        assert report["ok"] is True
        assert report["outcome"] == "authorized"
        assert report["issuer"] == url.removesuffix("/mcp")
        assert report["resource"] == url
        assert report["scope"] == "mcp"
        assert report["file"] == str(token_file)
        assert "to authorize" in done.stderr  # the URL, printed for when no browser opens
        assert "== HTTP POST" in done.stderr  # the trace of the flow
        access = _token_in(token_file)
        assert access not in done.stdout + done.stderr

        # A connect now uses the stored tokens without asking anyone.
        report, done = run_json("connect", "--json", "--trace", "-vv", url)
        assert done.returncode == 0, done.stdout + done.stderr
        assert {tool["name"] for tool in report["tools"]} >= {"whoami"}
        assert access not in done.stdout + done.stderr
        done = run("call", "--tool", "whoami", url)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "mcp" in done.stdout

        # A second login finds the tokens good: no browser (there is none to find).
        report, done = run_json("auth", "login", "--json", url, env={"BROWSER": "false %s"})
        assert done.returncode == 0, done.stderr
        assert report["outcome"] == "already-authorized"
        # --force logs in again, on the port registered the first time: no new client.
        client = report["client_id"]
        report, done = run_json("auth", "login", "--json", "--force", url, env=browser)
        assert done.returncode == 0, done.stderr
        assert report["outcome"] == "authorized"
        assert report["client_id"] == client
        assert len(json.loads(token_file.read_text())["tokens"]) == 1

        status, done = run_json("auth", "status", "--json", url)
        assert [e["client_id"] for e in status["entries"]] == [client]

        report, done = run_json("auth", "logout", "--json", url)
        assert report["removed"] == 1
        report, done = run_json("connect", "--json", url)
        assert done.returncode == 4


def test_a_login_nobody_completes_ends_in_time(tmp_path: Path) -> None:
    with authorization_server() as url:
        started = time.monotonic()
        report, done = run_json("auth", "login", "--json", "--no-browser", "--timeout", "1", url)
    assert done.returncode == 4
    assert report["error"]["kind"] == "auth-required"
    assert "no authorization redirect arrived within 1 s" in report["error"]["message"]
    assert "/authorize?" in done.stderr  # the URL to open by hand
    assert time.monotonic() - started < TIMEOUT


def test_a_wrong_issuer_is_auth_failed_with_the_step_and_the_rule() -> None:
    with authorization_server("--wrong-issuer") as url:
        report, done = run_json("connect", "--json", url)
        assert done.returncode == 5, done.stderr
        error = report["error"]
        assert error["kind"] == "auth-failed"
        assert error["step"] == "authorization-server-metadata"
        assert error["rule"] == "RFC 8414 section 3.3"
        done = run("auth", "login", url)
        assert done.returncode == 5
        assert "RFC 8414 section 3.3" in done.stdout


def test_a_client_secret_from_the_config_never_shows(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    with authorization_server() as url:
        entry = {
            "url": url,
            "auth": {"type": "oauth", "client_id": "not-registered", "client_secret": SECRET},
        }
        config.write_text(json.dumps({"mcpServers": {"web": entry}}))
        on = ("--config", str(config), "--server", "web")
        runs = [
            # The authorization server knows no such client: it shows an error page, not
            # a redirect, and the wait for one ends at --timeout.
            run(
                "auth",
                "login",
                "--json",
                "--trace",
                "-vv",
                "--timeout",
                "2",
                *on,
                env=browser_env(tmp_path),
            ),
            run("connect", "--json", "--trace", "-vv", *on),
        ]
    for done in runs:
        assert done.returncode in (4, 5), done.stdout + done.stderr
        assert SECRET not in done.stdout + done.stderr


def _run_on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """The command with stdin and stderr on a pseudo-terminal (stdout a pipe, as with
    ``| jq``): (exit status, stdout, what the terminal showed)."""
    leader, follower = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    environment.update(env)
    process = subprocess.Popen(
        [*CLI, *args],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=environment,
        text=True,
    )
    os.close(follower)
    reader = TerminalReader(leader)
    try:
        out, _ = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join()
        os.close(leader)
    return process.returncode, out, reader.text()


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_on_a_terminal_connect_logs_in_and_connects_again(tmp_path: Path) -> None:
    with authorization_server() as url:
        status, out, shown = _run_on_a_terminal(["connect", "--json", url], browser_env(tmp_path))
        assert status == 0, out + shown
        assert json.loads(out)["ok"] is True
        assert "needs authorization: logging in" in shown
        assert "to authorize" in shown
        # The next run finds the tokens, terminal or not.
        report, done = run_json("call", "--json", "--tool", "whoami", url)
        assert done.returncode == 0, done.stdout + done.stderr
        assert report["ok"] is True
