"""Edges of the flow found by review: a refresh the server fails (not refuses) keeps the
tokens; the flow's requests ask for no compression; a static Authorization header and an
auth on one target are refused; a machine grant's signer is not a hook a face adapts."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
import trio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcpl_host import HttpTarget
from mcpl_host._portal import adapt_oauth
from mcpl_host.auth import ClientCredentials, MemoryTokenStore, OAuth
from mcpl_host.protocol.errors import ConfigurationError

from .scripted_as import Reply, ScriptedAuth
from .test_flow_scripted import connection, oauth_for


async def test_a_refresh_the_server_fails_keeps_the_tokens_and_sends_a_valid_one() -> None:
    with ScriptedAuth() as server, trio.fail_after(15):
        store = MemoryTokenStore()
        oauth = oauth_for(server, store=store)
        async with connection(server, oauth) as conn:
            first = server.token_answers[-1]["access_token"]
            healthy = server.routes["POST /token"]
            server.routes["POST /token"] = lambda _seen: Reply(503, {"error": "busy"})
            # Due for a refresh, a minute from its end (no clock to race).
            for known in oauth._servers.values():
                assert known.tokens is not None
                now = time.time()
                known.tokens = dataclasses.replace(
                    known.tokens, refresh_at=now - 1, expires_at=now + 60
                )
            assert await conn.request("tools/list", {}) == {"tools": []}
            used = server.requests("POST /mcp")[-1].headers["authorization"]
            kept = list(store._tokens.values())
            server.routes["POST /token"] = healthy
    assert used == f"Bearer {first}"  # the failed refresh did not drop it
    assert [t.access_token for t in kept] == [first]


async def test_the_flows_requests_ask_for_no_compression() -> None:
    # Answers are bounded in bytes as sent: a gzip body would be neither readable
    # (read raw) nor bounded by what it inflates to.
    with ScriptedAuth() as server, trio.fail_after(10):
        async with connection(server, oauth_for(server)):
            pass
        flow = [s for s in server.seen if s.path not in {"/mcp", "/authorize"}]
    assert flow
    assert all(s.headers.get("accept-encoding") == "identity" for s in flow)


def test_a_static_authorization_header_and_an_auth_are_refused_together() -> None:
    with pytest.raises(ConfigurationError, match="sets Authorization itself"):
        HttpTarget("https://h.example/mcp", headers={"authorization": "Bearer x"}, auth=OAuth())


def test_a_face_adapts_hooks_but_not_a_client_credentials_signer() -> None:
    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )
    grant = ClientCredentials("machine", private_key_pem=pem)
    adapted: list[Any] = []

    def adapt(hook: Any) -> Any:
        adapted.append(hook)
        return hook

    copy = adapt_oauth(OAuth(grant=grant), adapt)
    assert adapted == []
    assert copy.grant.signer is grant.signer  # type: ignore[attr-defined]
