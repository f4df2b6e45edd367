"""The HTTP transport's side of authorization (mcpl_host/transports/http_core.py
``HttpCore.open``, the driver's ``_fail_requests``): a 401 without auth is a typed error
carrying the challenge, never a JSON-RPC answer made up for the connection; a request
that fails authorization after connect fails alone; a server that keeps asking for a
DPoP nonce cannot keep the host resending."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import trio

from mcpl_host import Connection, HttpTarget
from mcpl_host.auth import OAuth
from mcpl_host.protocol.errors import AuthorizationError, AuthorizationRequired, InitializeError

from .scripted_as import PROTOCOL_VERSION, Reply, ScriptedAuth, Seen

VERSIONS = [PROTOCOL_VERSION]
REDIRECT = "http://127.0.0.1:1/callback"


async def test_a_401_without_auth_fails_connect_with_the_challenge_and_no_made_up_answer() -> None:
    wire: list[tuple[str, bytes]] = []
    with ScriptedAuth() as server, trio.fail_after(10):
        challenge = (
            f'Bearer realm="mcp", scope="files:read", resource_metadata="{server.prm_url}", '
            'error_description="sign\tin"'
        )
        server.guard = lambda _seen: Reply(401, {}, {"WWW-Authenticate": challenge})
        with pytest.raises(AuthorizationRequired) as caught:
            async with Connection(
                HttpTarget(server.mcp_url, timeout=5),
                versions=VERSIONS,
                on_wire=lambda direction, line: wire.append((direction, line)),
            ):
                pass
        lines = server.lines()
    error = caught.value
    assert error.status == 401
    assert error.challenge == {
        "realm": "mcp",
        "scope": "files:read",
        "resource_metadata": server.prm_url,
        "error_description": "sign\\u0009in",
    }
    assert error.server is not None
    assert lines == ["POST /mcp"]  # no discovery without auth configured
    directions = [direction for direction, _line in wire]
    assert "in" not in directions  # no JSON-RPC error was made up and delivered
    assert directions.count("out") == 1  # initialize
    http = [line.decode() for direction, line in wire if direction == "http"]
    assert http == [f"HTTP POST {server.mcp_url} -> 401"]


async def test_an_initialize_refused_with_http_500_is_judged_by_the_handshake_not_traced() -> None:
    # The transport's -32603 for the refusal goes to the handshake's own rule (initialize
    # fails with the InitializeError it always did), never through the reader as a line.
    wire: list[tuple[str, bytes]] = []
    with ScriptedAuth() as server, trio.fail_after(10):
        server.guard = lambda _seen: Reply(500, {}, {})
        with pytest.raises(InitializeError) as caught:
            async with Connection(
                HttpTarget(server.mcp_url, timeout=5),
                versions=["2025-11-25"],
                on_wire=lambda direction, line: wire.append((direction, line)),
            ):
                pass
    assert caught.value.code == -32603
    assert "HTTP 500" in caught.value.server_message
    assert [direction for direction, _line in wire] == ["out", "http"]


async def test_a_403_without_insufficient_scope_is_the_servers_answer_not_the_flows() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        refusal = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "forbidden"}}

        def guard(seen: Seen) -> Reply | None:
            return Reply(403, {**refusal, "id": seen.json["id"]})

        server.guard = guard
        oauth = OAuth(authorize=server.browser, redirect_uri=REDIRECT)
        with pytest.raises(Exception) as caught:  # noqa: PT011 - the kind is the point
            async with Connection(server.target(oauth), versions=VERSIONS):
                pass
        lines = server.lines()
    assert not isinstance(caught.value, (AuthorizationRequired, AuthorizationError))
    assert "forbidden" in str(caught.value)
    assert lines == ["POST /mcp"]  # no discovery, no grant


async def test_a_request_refused_after_connect_fails_alone_and_the_connection_lives() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        oauth = OAuth(authorize=None, redirect_uri=REDIRECT)
        # Connect with a token from an earlier login: none of the flow is needed.
        login = OAuth(authorize=server.browser, redirect_uri=REDIRECT, store=oauth.store)
        await login.login(server.mcp_url)
        async with Connection(server.target(oauth), versions=VERSIONS) as conn:
            assert await conn.request("tools/list", {}) == {"tools": []}
            server.revoke_all()
            with pytest.raises(AuthorizationRequired):
                await conn.request("tools/list", {})
            # A later request may find the server authorized again.
            server.valid_tokens.add(server.token_answers[0]["access_token"])
            server.guard = lambda _seen: None
            assert await conn.request("tools/list", {}) == {"tools": []}


async def test_a_server_that_keeps_asking_for_a_dpop_nonce_is_not_answered_forever() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        server.token_type = "DPoP"
        nonces = iter(range(1_000_000))

        def guard(seen: Seen) -> Reply | None:
            if "dpop" not in seen.headers:
                return server.token_check(seen)
            challenge = 'DPoP error="use_dpop_nonce", algs="ES256"'
            headers = {"WWW-Authenticate": challenge, "DPoP-Nonce": f"n-{next(nonces)}"}
            return Reply(401, {}, headers)

        server.guard = guard
        oauth = OAuth(authorize=server.browser, redirect_uri=REDIRECT, dpop=True)
        with pytest.raises(AuthorizationRequired) as caught:
            async with Connection(server.target(oauth), versions=VERSIONS):
                pass
        posts = server.requests("POST /mcp")
    assert caught.value.challenge.get("error") == "use_dpop_nonce"
    with_proof = [p for p in posts if "dpop" in p.headers]
    # The first proof, then one per fresh nonce (twice), then the host stops.
    assert 2 <= len(with_proof) <= 4
    # Each retry carried the newest nonce the server gave, in a proof for this request.
    claims = [_jwt_claims(p.headers["dpop"]) for p in with_proof]
    assert [c.get("nonce") for c in claims] == [None] + [f"n-{i}" for i in range(len(claims) - 1)]
    assert all(c["htm"] == "POST" and c["htu"] == server.mcp_url for c in claims)


def _jwt_claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


async def test_every_waiting_request_fails_with_the_typed_error() -> None:
    # Two requests in flight when the server starts refusing: each settles with the
    # transport's typed error, neither waits for its timeout.
    with ScriptedAuth() as server, trio.fail_after(10):
        oauth = OAuth(authorize=None, redirect_uri=REDIRECT)
        login = OAuth(authorize=server.browser, redirect_uri=REDIRECT, store=oauth.store)
        await login.login(server.mcp_url)
        async with Connection(server.target(oauth), versions=VERSIONS, request_timeout=30) as conn:
            server.revoke_all()
            errors: list[Any] = []

            async def one() -> None:
                try:
                    await conn.request("tools/list", {})
                except AuthorizationRequired as exc:
                    errors.append(exc)

            started = trio.current_time()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(one)
                nursery.start_soon(one)
            assert len(errors) == 2
            assert trio.current_time() - started < 5


async def test_a_dpop_client_refreshes_with_a_proof() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        server.token_type = "DPoP"
        server.token_lifetime = 1  # refreshed from 0.9 s on
        oauth = OAuth(authorize=server.browser, redirect_uri=REDIRECT, dpop=True)
        async with Connection(server.target(oauth), versions=VERSIONS) as conn:
            await trio.sleep(0.95)
            assert await conn.request("tools/list", {}) == {"tools": []}
        tokens = server.requests("POST /token")
        authorizations = server.requests("GET /authorize")
    assert len(authorizations) == 1  # refreshed, never authorized again
    refreshes = [t for t in tokens if t.form["grant_type"] == "refresh_token"]
    assert refreshes
    for refresh in refreshes:
        claims = _jwt_claims(refresh.headers["dpop"])
        assert claims["htm"] == "POST"
        assert claims["htu"] == f"{server.base}/token"
        assert "ath" not in claims  # no access token goes with a token request


async def test_the_get_stream_and_delete_never_run_the_flow_for_a_person() -> None:
    # A server that refuses the GET stream (and the closing DELETE) with 401 whatever the
    # token: the host refreshes, but never asks the person again for them; the GET
    # stream's reopening would otherwise open the browser every backoff period.
    with ScriptedAuth() as server, trio.fail_after(10):

        def guard(seen: Seen) -> Reply | None:
            if seen.method in ("GET", "DELETE"):
                challenge = f'Bearer resource_metadata="{server.prm_url}"'
                return Reply(401, {}, {"WWW-Authenticate": challenge})
            return server.token_check(seen)

        server.guard = guard
        oauth = OAuth(authorize=server.browser, redirect_uri=REDIRECT)
        async with Connection(server.target(oauth), versions=VERSIONS) as conn:
            assert await conn.request("tools/list", {}) == {"tools": []}
            await trio.sleep(0.2)
            assert server.requests("GET /mcp")  # the GET stream was tried
        authorizations = server.requests("GET /authorize")
        deletes = server.requests("DELETE /mcp")
    assert len(authorizations) == 1  # the POST's, never the GET's nor the DELETE's
    assert deletes


async def test_a_notification_refused_with_401_never_asks_the_person() -> None:
    # Nobody waits on a notification's POST: a refusal of it may refresh, never run the
    # flow (a server could otherwise open the person's browser for each one).
    with ScriptedAuth() as server, trio.fail_after(10):
        asked: list[str] = []

        async def browser(url: str) -> str:
            asked.append(url)
            return await server.browser(url)

        def guard(seen: Seen) -> Reply | None:
            body = seen.json
            if isinstance(body, dict) and body.get("method") == "notifications/ping-test":
                challenge = f'Bearer resource_metadata="{server.prm_url}"'
                return Reply(401, {}, {"WWW-Authenticate": challenge})
            return server.token_check(seen)

        server.guard = guard
        oauth = OAuth(authorize=browser, redirect_uri=REDIRECT)
        async with Connection(server.target(oauth), versions=VERSIONS) as conn:
            await conn.notify("notifications/ping-test", {})
            await trio.sleep(0.3)  # the POST is answered after notify returns
            assert await conn.request("tools/list", {}) == {"tools": []}
    assert len(asked) == 1  # the connect's login only
