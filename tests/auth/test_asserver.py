"""tests/auth/asserver.py driven with plain httpx, no mcpl_host code: the server the OAuth
client tests stand on does what the MCP authorization spec asks of a server."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
import trio

from .conftest import AuthServer, StartAuthServer, auto_approve

REDIRECT_URI = "http://127.0.0.1:1/callback"  # never contacted: auto_approve only reads it
PROTOCOL_VERSION = "2025-11-25"
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


@dataclass
class Client:
    client_id: str
    client_secret: str | None
    scope: str  # as registered


async def register(http: httpx.AsyncClient, server: AuthServer, **metadata: Any) -> Client:
    response = await http.post(
        f"{server.issuer}/register",
        json={"redirect_uris": [REDIRECT_URI], "client_name": "asserver test", **metadata},
    )
    assert response.status_code == 201, response.text
    body = response.json()
    return Client(body["client_id"], body.get("client_secret"), body["scope"])


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


async def authorize(
    server: AuthServer,
    client: Client,
    challenge: str,
    *,
    scope: str | None = None,
    resource: str | None = "default",
) -> dict[str, str]:
    """The query of the redirect /authorize answers with."""
    query = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-" + secrets.token_hex(4),
    }
    if scope is not None:
        query["scope"] = scope
    if resource is not None:
        query["resource"] = server.mcp_url if resource == "default" else resource
    location = await auto_approve(f"{server.issuer}/authorize?{urlencode(query)}")
    assert location.startswith(REDIRECT_URI + "?")
    answer = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert answer["state"] == query["state"]
    return answer


async def token_request(
    http: httpx.AsyncClient, server: AuthServer, client: Client, **form: str
) -> httpx.Response:
    form = {"client_id": client.client_id, **form}
    if client.client_secret is not None:
        form["client_secret"] = client.client_secret
    return await http.post(f"{server.issuer}/token", data=form)


async def log_in(
    http: httpx.AsyncClient, server: AuthServer, client: Client, *, scope: str | None = None
) -> dict[str, Any]:
    """DCR'd client -> /authorize -> /token with PKCE and the resource: the token response."""
    verifier, challenge = pkce_pair()
    answer = await authorize(server, client, challenge, scope=scope)
    response = await token_request(
        http,
        server,
        client,
        grant_type="authorization_code",
        code=answer["code"],
        redirect_uri=REDIRECT_URI,
        code_verifier=verifier,
        resource=server.mcp_url,
    )
    assert response.status_code == 200, response.text
    tokens: dict[str, Any] = response.json()
    return tokens


def _sse_or_json(response: httpx.Response) -> Any:
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return response.json()


class McpSession:
    """Just enough Streamable HTTP to initialize and call tools with a bearer token."""

    def __init__(self, http: httpx.AsyncClient, server: AuthServer, token: str) -> None:
        self.http, self.url, self.token = http, server.mcp_url, token
        self.session_id: str | None = None
        self.next_id = 1

    async def post(self, message: dict[str, Any]) -> httpx.Response:
        headers = {**MCP_HEADERS, "authorization": f"Bearer {self.token}"}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
            headers["mcp-protocol-version"] = PROTOCOL_VERSION
        return await self.http.post(self.url, json=message, headers=headers)

    async def request(self, method: str, params: dict[str, Any]) -> httpx.Response:
        self.next_id += 1
        return await self.post(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        )

    async def initialize(self) -> httpx.Response:
        response = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "asserver-test", "version": "0"},
            },
        )
        if response.status_code == 200:
            self.session_id = response.headers["mcp-session-id"]
            note = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            assert note.status_code == 202, note.text
        return response

    async def call_tool(self, name: str) -> httpx.Response:
        return await self.request("tools/call", {"name": name, "arguments": {}})


def tool_result(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    result: dict[str, Any] = _sse_or_json(response)["result"]
    return result


def challenge_params(header: str) -> dict[str, str]:
    """The auth-params of a one-challenge ``Bearer k="v", ...`` header (test values only)."""
    scheme, _, rest = header.partition(" ")
    assert scheme == "Bearer"
    params = {}
    for part in rest.split('", '):
        key, _, value = part.partition("=")
        params[key.strip()] = value.strip().strip('"')
    return params


async def test_discovery_a_401_names_the_resource_metadata_which_names_the_issuer(
    asserver: AuthServer,
) -> None:
    with trio.fail_after(10):
        async with httpx.AsyncClient() as http:
            for headers in ({}, {"authorization": "Bearer not-a-token"}):
                response = await http.post(
                    asserver.mcp_url, json={}, headers={**MCP_HEADERS, **headers}
                )
                assert response.status_code == 401
                params = challenge_params(response.headers["www-authenticate"])
                assert params["resource_metadata"] == asserver.resource_metadata_url

            prm = (await http.get(asserver.resource_metadata_url)).json()
            assert prm["resource"] == asserver.mcp_url
            assert prm["authorization_servers"] == [asserver.issuer]
            assert prm["scopes_supported"] == ["mcp"]

            meta = (await http.get(asserver.as_metadata_url)).json()
            assert meta["issuer"] == asserver.issuer  # exact string: no trailing slash
            assert meta["authorization_endpoint"] == f"{asserver.issuer}/authorize"
            assert meta["token_endpoint"] == f"{asserver.issuer}/token"
            assert meta["registration_endpoint"] == f"{asserver.issuer}/register"
            assert meta["revocation_endpoint"] == f"{asserver.issuer}/revoke"
            assert meta["code_challenge_methods_supported"] == ["S256"]
            assert meta["authorization_response_iss_parameter_supported"] is True
            assert "none" in meta["token_endpoint_auth_methods_supported"]
            assert set(meta["grant_types_supported"]) >= {"authorization_code", "refresh_token"}


async def test_registration_authorization_token_and_an_mcp_session(asserver: AuthServer) -> None:
    with trio.fail_after(15):
        async with httpx.AsyncClient() as http:
            client = await register(http, asserver, token_endpoint_auth_method="none")
            assert client.client_secret is None
            verifier, challenge = pkce_pair()
            answer = await authorize(asserver, client, challenge)
            assert answer["iss"] == asserver.issuer  # RFC 9207
            code = answer["code"]

            def exchange(code_verifier: str, **extra: str) -> Any:
                form = {
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": REDIRECT_URI,
                    "code_verifier": code_verifier,
                    "resource": asserver.mcp_url,
                    **extra,
                }
                return token_request(http, asserver, client, **form)

            # PKCE (the SDK's check): a wrong verifier is refused, the code survives it.
            wrong = await exchange(pkce_pair()[0])
            assert (wrong.status_code, wrong.json()["error"]) == (400, "invalid_grant")
            # RFC 8707: the resource must be the one authorized.
            other = await exchange(verifier, resource=f"{asserver.issuer}/other")
            assert (other.status_code, other.json()["error"]) == (400, "invalid_target")
            response = await exchange(verifier)
            assert response.status_code == 200, response.text
            tokens = response.json()
            assert tokens["token_type"] == "Bearer"
            assert tokens["scope"] == "mcp"
            assert tokens["refresh_token"]
            # Codes are single use.
            again = await exchange(verifier)
            assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")

            session = McpSession(http, asserver, tokens["access_token"])
            initialized = await session.initialize()
            assert initialized.status_code == 200, initialized.text
            assert _sse_or_json(initialized)["result"]["serverInfo"]["name"] == "mcpl-test-asserver"
            whoami = tool_result(await session.call_tool("whoami"))["structuredContent"]
            assert whoami == {
                "client_id": client.client_id,
                "scopes": ["mcp"],
                "resource": asserver.mcp_url,
                "subject": "test-user",
            }
            # Without --step-up the scope check is the tool's own: a tool error, HTTP 200.
            admin = tool_result(await session.call_tool("admin"))
            assert admin["isError"] is True

    log = "\n".join(asserver.log_lines())
    assert (
        "POST /register -> 201 fields=redirect_uris,client_name,token_endpoint_auth_method" in log
    )
    assert "GET /authorize -> 302 fields=response_type,client_id,redirect_uri," in log
    assert "POST /token -> 200 fields=" in log
    for secret in (code, verifier, tokens["access_token"], tokens["refresh_token"]):
        assert secret not in log


async def test_authorize_refuses_a_missing_or_foreign_resource(asserver: AuthServer) -> None:
    with trio.fail_after(10):
        async with httpx.AsyncClient() as http:
            client = await register(http, asserver)
            assert client.client_secret is not None  # client_secret_post by default
            for resource in (None, "http://127.0.0.1:1/mcp"):
                answer = await authorize(asserver, client, pkce_pair()[1], resource=resource)
                assert answer["error"] == "invalid_target"
                assert "code" not in answer


async def test_refresh_rotates_and_revocation_ends_every_token(asserver: AuthServer) -> None:
    with trio.fail_after(15):
        async with httpx.AsyncClient() as http:
            client = await register(http, asserver)  # a confidential client this time
            first = await log_in(http, asserver, client)

            def refresh(token: str, **extra: str) -> Any:
                form = {"grant_type": "refresh_token", "refresh_token": token, **extra}
                return token_request(http, asserver, client, **form)

            missing = await refresh(first["refresh_token"])
            assert (missing.status_code, missing.json()["error"]) == (400, "invalid_target")
            response = await refresh(first["refresh_token"], resource=asserver.mcp_url)
            assert response.status_code == 200, response.text
            second = response.json()
            assert second["access_token"] != first["access_token"]
            assert second["refresh_token"] != first["refresh_token"]
            reused = await refresh(first["refresh_token"], resource=asserver.mcp_url)
            assert (reused.status_code, reused.json()["error"]) == (400, "invalid_grant")

            session = McpSession(http, asserver, second["access_token"])
            assert (await session.initialize()).status_code == 200
            assert tool_result(await session.call_tool("whoami"))["isError"] is False

            assert await asserver.revoke_all() >= 2
            after = await session.call_tool("whoami")
            assert after.status_code == 401
            assert "resource_metadata=" in after.headers["www-authenticate"]
            dead = await refresh(second["refresh_token"], resource=asserver.mcp_url)
            assert (dead.status_code, dead.json()["error"]) == (400, "invalid_grant")

            # RFC 7009 at /revoke (the SDK's handler): one token, and its pair with it.
            third = await log_in(http, asserver, client)
            revoked = await http.post(
                f"{asserver.issuer}/revoke",
                data={
                    "token": third["access_token"],
                    "client_id": client.client_id,
                    "client_secret": client.client_secret or "",
                },
            )
            assert revoked.status_code == 200
            session.token = third["access_token"]
            assert (await session.call_tool("whoami")).status_code == 401
            gone = await refresh(third["refresh_token"], resource=asserver.mcp_url)
            assert gone.status_code == 400


async def test_access_tokens_expire_after_token_lifetime(
    asserver_factory: StartAuthServer,
) -> None:
    server = await asserver_factory("--token-lifetime", "1")
    with trio.fail_after(15):
        async with httpx.AsyncClient() as http:
            client = await register(http, server)
            issued_after = trio.current_time()
            tokens = await log_in(http, server, client)
            assert tokens["expires_in"] == 1
            session = McpSession(http, server, tokens["access_token"])
            initialized = await session.initialize()
            if initialized.status_code == 401 and trio.current_time() - issued_after >= 1:
                pytest.skip("this machine took longer than the token's 1 s lifetime to use it")
            assert initialized.status_code == 200
            await trio.sleep(1.1)
            expired = await session.call_tool("whoami")
            assert expired.status_code == 401
            response = await token_request(
                http,
                server,
                client,
                grant_type="refresh_token",
                refresh_token=tokens["refresh_token"],
                resource=server.mcp_url,
            )
            session.token = response.json()["access_token"]
            assert tool_result(await session.call_tool("whoami"))["isError"] is False


async def test_step_up_answers_403_insufficient_scope_for_admin(
    asserver_factory: StartAuthServer,
) -> None:
    server = await asserver_factory("--step-up")
    with trio.fail_after(15):
        async with httpx.AsyncClient() as http:
            # Registered for `mcp` only; the server widens every registration to all its
            # scopes, so step-up needs no new registration.
            client = await register(http, server, token_endpoint_auth_method="none", scope="mcp")
            assert client.scope == "mcp admin"
            tokens = await log_in(http, server, client)
            assert tokens["scope"] == "mcp"
            session = McpSession(http, server, tokens["access_token"])
            assert (await session.initialize()).status_code == 200
            assert tool_result(await session.call_tool("whoami"))["isError"] is False

            refused = await session.call_tool("admin")
            assert refused.status_code == 403
            params = challenge_params(refused.headers["www-authenticate"])
            assert params["error"] == "insufficient_scope"
            assert params["scope"] == "mcp admin"
            assert params["resource_metadata"] == server.resource_metadata_url

            stepped = await log_in(http, server, client, scope=params["scope"])
            assert stepped["scope"] == "mcp admin"
            session.token = stepped["access_token"]  # the same session, a wider token
            result = tool_result(await session.call_tool("admin"))
            assert result["isError"] is False
            assert result["content"][0]["text"] == "admin ok"


async def test_wrong_issuer_metadata_names_another_issuer(
    asserver_factory: StartAuthServer,
) -> None:
    server = await asserver_factory("--wrong-issuer")
    with trio.fail_after(10):
        async with httpx.AsyncClient() as http:
            prm = (await http.get(server.resource_metadata_url)).json()
            assert prm["authorization_servers"] == [server.issuer]
            meta = (await http.get(server.as_metadata_url)).json()
            # RFC 8414 §3.3: the issuer must be the URL the metadata was fetched for.
            assert meta["issuer"] != server.issuer
            assert meta["issuer"] == f"{server.issuer}/not-this-issuer"
            # Everything else still works, so only the issuer check can stop a client.
            assert meta["token_endpoint"] == f"{server.issuer}/token"
            client = await register(http, server)
            answer = await authorize(server, client, pkce_pair()[1])
            assert answer["iss"] == meta["issuer"]


async def test_a_server_that_cannot_start_fails_the_fixture_with_its_stderr(
    asserver_factory: StartAuthServer,
) -> None:
    with trio.fail_after(15), pytest.raises(RuntimeError) as failure:
        await asserver_factory("--no-such-flag")
    assert "exited before it was READY" in str(failure.value)
    assert "unrecognized arguments: --no-such-flag" in str(failure.value)
