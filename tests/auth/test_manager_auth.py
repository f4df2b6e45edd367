"""The manager's ``auth`` and config entries' ``auth`` against the real authorization
server: one OAuth for every HTTP server without its own, ``"auth": "none"`` keeps a
server out of it, and an entry's pre-registered client is used."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from mcpl_host import ConnectionManager
from mcpl_host.auth import MemoryTokenStore, OAuth
from mcpl_host.protocol.errors import AuthorizationRequired

from .conftest import AuthServer, auto_approve


async def test_one_oauth_for_the_servers_without_their_own_none_opts_out(
    asserver: AuthServer, tmp_path: Path
) -> None:
    config = tmp_path / "servers.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "plain": {"url": asserver.mcp_url},
                    "refused": {"url": asserver.mcp_url, "auth": "none"},
                }
            }
        )
    )
    store = MemoryTokenStore()
    auth = OAuth(store=store, authorize=auto_approve)
    with trio.fail_after(30):
        async with ConnectionManager(config, auth=auth, reconnect=None) as manager:
            await manager.wait_ready()
            listing = await manager.list_tools()
            assert "plain__whoami" in listing.names()
            assert not any(name.startswith("refused__") for name in listing.names())
            status = manager.status()
    assert isinstance(status["refused"].error, AuthorizationRequired)
    assert status["refused"].error.status == 401
    assert status["plain"].error is None


async def test_an_entrys_client_credentials_go_with_the_managers_auth(
    asserver: AuthServer, tmp_path: Path
) -> None:
    # A client registered beforehand (as an administrator would), named in the entry.
    store = MemoryTokenStore()
    first = OAuth(store=store, authorize=auto_approve, redirect_uri="http://127.0.0.1/callback")
    await first.login(asserver.mcp_url)
    registered = await store.get_client(asserver.issuer)
    assert registered is not None
    config = tmp_path / "servers.json"
    entry = {
        "url": asserver.mcp_url,
        "auth": {"type": "oauth", "client_id": registered.client_id, "scopes": "mcp"},
    }
    config.write_text(json.dumps({"mcpServers": {"s": entry}}))
    fresh = MemoryTokenStore()  # nothing kept: only the entry names the client
    with trio.fail_after(30):
        async with ConnectionManager(
            config, auth=OAuth(store=fresh, authorize=auto_approve), reconnect=None
        ) as manager:
            await manager.wait_ready()
            result = await manager.call_tool("s__whoami", {})
    assert registered.client_id in str(result)
    assert await fresh.get_client(asserver.issuer) is None  # no registration ran
