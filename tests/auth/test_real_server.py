"""mcpl_host's OAuth against a real authorization server (tests/auth/asserver.py: the
official Python SDK's server-side auth, as a subprocess on loopback): login, refresh
before expiry and on a 401, step-up, revocation mid-session, a wrong issuer, and tokens
that survive a restart in the file store."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import trio

from mcpl_host import Connection, HttpTarget
from mcpl_host.auth import FileTokenStore, MemoryTokenStore, OAuth
from mcpl_host.protocol.errors import AuthorizationError, AuthorizationRequired

from .conftest import AuthServer, StartAuthServer, auto_approve


def _requests(server: AuthServer, what: str) -> int:
    """How many requests of ``what`` ("GET /authorize", "POST /register", or "POST /token
    refresh": a token request with a refresh_token field) the server logged."""
    head, _, refresh = what.partition(" refresh")
    found = 0
    for line in server.log_lines():
        text = line.removeprefix("asserver: ")
        fields = text.partition(" fields=")[2].split(",")
        if text.startswith(head + " ") and (not refresh or "refresh_token" in fields):
            found += 1
    return found


async def _whoami(conn: Connection) -> str:
    result = await conn.call_tool("whoami", {})
    assert not result.is_error, result
    return " ".join(getattr(block, "text", "") for block in result.content)


async def test_login_registers_authorizes_and_every_request_carries_the_token(
    asserver: AuthServer,
) -> None:
    store = MemoryTokenStore()
    auth = OAuth(store=store, authorize=auto_approve)
    with trio.fail_after(20):
        async with Connection(HttpTarget(asserver.mcp_url, auth=auth)) as conn:
            names = {tool.name for tool in await conn.list_tools()}
            assert {"whoami", "admin"} <= names
            assert "mcp" in await _whoami(conn)
    assert _requests(asserver, "POST /register") == 1
    assert _requests(asserver, "GET /authorize") == 1
    client = await store.get_client(asserver.issuer)
    assert client is not None
    assert client.source == "dcr"
    tokens = await store.get_tokens(asserver.issuer, client.client_id, asserver.mcp_url)
    assert tokens is not None
    assert tokens.refresh_token


async def test_a_short_lived_token_is_refreshed_before_it_expires(
    asserver_factory: StartAuthServer,
) -> None:
    server = await asserver_factory("--token-lifetime", "1")
    auth = OAuth(authorize=auto_approve)
    with trio.fail_after(25):
        async with Connection(HttpTarget(server.mcp_url, auth=auth)) as conn:
            await _whoami(conn)
            await trio.sleep(1.5)  # the first token has expired at the server
            await _whoami(conn)
            await conn.list_tools()
    assert _requests(server, "GET /authorize") == 1  # no second login
    assert _requests(server, "POST /token refresh") >= 1


async def test_a_401_on_a_token_the_host_thought_valid_refreshes_it(
    asserver_factory: StartAuthServer,
) -> None:
    server = await asserver_factory("--token-lifetime", "1")
    auth = OAuth(authorize=auto_approve)
    with trio.fail_after(25):
        async with Connection(HttpTarget(server.mcp_url, auth=auth)) as conn:
            await _whoami(conn)
            # The host forgets when its token expires (as after a clock jump): the server's
            # 401 is what tells it; the refresh token answers it, no person needed.
            for known in auth._servers.values():
                assert known.tokens is not None
                known.tokens = dataclasses.replace(known.tokens, expires_at=None, refresh_at=None)
            await trio.sleep(1.5)
            refreshes = _requests(server, "POST /token refresh")
            await _whoami(conn)
    assert _requests(server, "POST /token refresh") == refreshes + 1
    assert _requests(server, "GET /authorize") == 1


async def test_step_up_on_403_insufficient_scope_asks_for_both_scopes(
    asserver_factory: StartAuthServer,
) -> None:
    server = await asserver_factory("--step-up")
    auth = OAuth(authorize=auto_approve)
    with trio.fail_after(25):
        async with Connection(HttpTarget(server.mcp_url, auth=auth)) as conn:
            assert "admin" not in await _whoami(conn)
            result = await conn.call_tool("admin", {})
            assert not result.is_error, result
            scopes = await _whoami(conn)
    assert "mcp" in scopes
    assert "admin" in scopes
    assert _requests(server, "GET /authorize") == 2


async def test_revocation_mid_session_logs_in_again_or_says_authorization_is_required(
    asserver: AuthServer,
) -> None:
    auth = OAuth(authorize=auto_approve)
    with trio.fail_after(25):
        async with Connection(HttpTarget(asserver.mcp_url, auth=auth)) as conn:
            await _whoami(conn)
            assert await asserver.revoke_all() >= 1
            # The access token is refused, its refresh token too: the flow runs again.
            await _whoami(conn)
    assert _requests(asserver, "GET /authorize") == 2

    unattended = OAuth()  # no person to ask
    with trio.fail_after(25):
        store = MemoryTokenStore()
        attended = OAuth(store=store, authorize=auto_approve)
        async with Connection(HttpTarget(asserver.mcp_url, auth=attended)) as conn:
            await _whoami(conn)
        await asserver.revoke_all()
        with pytest.raises(AuthorizationRequired) as caught:
            async with Connection(HttpTarget(asserver.mcp_url, auth=unattended)):
                pass
    assert caught.value.status == 401
    assert "resource_metadata" in caught.value.challenge


async def test_a_wrong_issuer_in_the_metadata_is_refused_before_any_registration(
    asserver_factory: StartAuthServer,
) -> None:
    server = await asserver_factory("--wrong-issuer")
    auth = OAuth(authorize=auto_approve)
    with trio.fail_after(20), pytest.raises(AuthorizationError) as caught:
        async with Connection(HttpTarget(server.mcp_url, auth=auth)):
            pass
    assert caught.value.step == "authorization-server-metadata"
    assert caught.value.rule == "RFC 8414 section 3.3"
    assert _requests(server, "POST /register") == 0
    assert _requests(server, "GET /authorize") == 0


async def test_tokens_survive_a_restart_in_the_file_store(
    asserver: AuthServer, tmp_path: Path
) -> None:
    path = tmp_path / "auth.json"
    with trio.fail_after(25):
        first = OAuth(store=FileTokenStore(path), authorize=auto_approve)
        async with Connection(HttpTarget(asserver.mcp_url, auth=first)) as conn:
            await _whoami(conn)
        # A new process: nothing in memory, no person to ask; the stored tokens serve.
        again = OAuth(store=FileTokenStore(path))
        async with Connection(HttpTarget(asserver.mcp_url, auth=again)) as conn:
            assert "mcp" in await _whoami(conn)
    assert _requests(asserver, "GET /authorize") == 1
    assert _requests(asserver, "POST /register") == 1
    assert path.stat().st_mode & 0o777 == 0o600
    text = path.read_text()
    assert asserver.issuer in text
