"""No credential of the flow reaches a log line, the wire watch or an error: the client
secret, the authorization code, the issued access and refresh tokens carry a canary, and
a whole run (flow, refresh, refusals, servers echoing them back) is searched for it."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import Connection
from mcpl_host.auth import ClientInfo, OAuth, TokenSet
from mcpl_host.protocol.errors import AuthorizationError, AuthorizationRequired, McplHostError

from .scripted_as import PROTOCOL_VERSION, Reply, ScriptedAuth, Seen

CANARY = "CANARY7f3a"
SECRET = f"{CANARY}-client-secret-91b2"
REDIRECT = "http://127.0.0.1:1/callback"


def _texts_of(error: BaseException) -> list[str]:
    """Everything an exception shows: str, repr, args, its typed fields, and the same
    for what it was raised from."""
    texts = [str(error), repr(error), *map(str, error.args)]
    if isinstance(error, AuthorizationRequired):
        texts += [f"{k}={v}" for k, v in error.challenge.items()]
    if isinstance(error, AuthorizationError):
        texts += [str(error.error), str(error.rule), error.step]
    for linked in (error.__cause__, error.__context__):
        if linked is not None:
            texts += _texts_of(linked)
    return texts


class Run:
    """One server, and everything the host showed while the phases ran against it."""

    def __init__(self, server: ScriptedAuth) -> None:
        self.server = server
        self.wire: list[str] = []
        self.errors: list[McplHostError] = []
        server.code_prefix = f"{CANARY}-code"
        server.access_prefix = f"{CANARY}-access"
        server.refresh_prefix = f"{CANARY}-refresh"

    def oauth(self) -> OAuth:
        return OAuth(
            client_id="client-public-id",
            client_secret=SECRET,
            authorize=self.server.browser,
            redirect_uri=REDIRECT,
        )

    def connection(self, auth: OAuth) -> Connection:
        return Connection(
            self.server.target(auth),
            versions=[PROTOCOL_VERSION],
            on_wire=lambda direction, line: self.wire.append(f"{direction} {line.decode()}"),
        )


async def _flow_refresh_and_echoed_challenge(run: Run, auth: OAuth) -> None:
    """The whole flow, a request, a refresh after the access token is revoked; then the
    resource server echoes every refused token in its challenge."""
    server = run.server
    async with run.connection(auth) as conn:
        await conn.request("tools/list", {})
        server.valid_tokens.clear()
        await conn.request("tools/list", {})
        grants = [t.form["grant_type"] for t in server.requests("POST /token")]
        assert grants == ["authorization_code", "refresh_token"]

        def echo(seen: Seen) -> Reply:
            used = seen.headers.get("authorization", "none")
            challenge = f'Bearer error="invalid_token", error_description="{used} is bad"'
            return Reply(401, {"error": used}, {"WWW-Authenticate": challenge})

        server.guard = echo
        with pytest.raises(AuthorizationRequired) as refused:
            await conn.request("tools/list", {})
        run.errors.append(refused.value)
        assert "error_description" in refused.value.challenge
        server.guard = None


async def _token_endpoint_echoes_code_and_basic_credentials(run: Run) -> None:
    def echoing_refusal(seen: Seen) -> Reply:
        described = f"code {seen.form.get('code')} is not for {seen.headers['authorization']}"
        return Reply(400, {"error": "invalid_grant", "error_description": described})

    run.server.routes["POST /token"] = echoing_refusal
    with pytest.raises(AuthorizationError) as echoed:
        async with run.connection(run.oauth()):
            pass
    run.errors.append(echoed.value)
    assert echoed.value.error == "invalid_grant"
    assert "code *** is not for Basic ***" in echoed.value.message


async def _token_endpoint_echoes_a_registered_secret(run: Run) -> None:
    server = run.server
    metadata = server.metadata()
    metadata["token_endpoint_auth_methods_supported"] = ["client_secret_post"]
    server.routes["GET /.well-known/oauth-authorization-server"] = lambda _s: Reply(body=metadata)
    default_register = server.register

    def register(seen: Seen) -> Reply:
        reply = default_register(seen)
        reply.body["client_secret"] = f"{CANARY}-dcr-secret-{len(server.clients)}"
        return reply

    def echo_post(seen: Seen) -> Reply:
        described = f"secret {seen.form.get('client_secret')} code {seen.form.get('code')}"
        return Reply(401, {"error": "invalid_client", "error_description": described})

    server.routes["POST /register"] = register
    server.routes["POST /token"] = echo_post
    with pytest.raises(AuthorizationError) as registered:
        async with run.connection(OAuth(authorize=server.browser, redirect_uri=REDIRECT)):
            pass
    run.errors.append(registered.value)
    assert registered.value.error == "invalid_client"
    assert "secret *** code ***" in registered.value.message


async def test_no_credential_of_the_flow_shows_anywhere() -> None:
    with ScriptedAuth() as server, trio.fail_after(15), capture_logs() as logs:
        run = Run(server)
        auth = run.oauth()
        await _flow_refresh_and_echoed_challenge(run, auth)
        tokens = list(server.token_answers)
        await _token_endpoint_echoes_code_and_basic_credentials(run)
        await _token_endpoint_echoes_a_registered_secret(run)

    # The canaries were really issued and sent (so their absence below means something).
    assert all(t["access_token"].startswith(CANARY) for t in tokens)
    assert all(t["refresh_token"].startswith(CANARY) for t in tokens)
    assert server.requests("POST /token")[-1].form["client_secret"].startswith(CANARY)
    assert any(e.get("log_level") == "debug" for e in logs)  # debug events were captured

    shown: list[str] = [repr(entry) for entry in logs]
    shown += run.wire
    for error in run.errors:
        shown += _texts_of(error)
    shown.append(repr(auth))
    leaks = [text for text in shown if CANARY in text]
    assert leaks == []


async def test_stored_token_sets_and_clients_hide_their_secrets_in_repr() -> None:
    tokens = TokenSet(access_token=f"{CANARY}-a", refresh_token=f"{CANARY}-r", scope="s")
    client = ClientInfo(client_id="cid", client_secret=f"{CANARY}-s")
    texts: list[Any] = [repr(tokens), str(tokens), repr(client), str(client)]
    assert not [t for t in texts if CANARY in t]


async def test_a_second_connection_masks_the_tokens_it_reuses() -> None:
    # The OAuth keeps the tokens across connections; each connection has a redactor of
    # its own, which must know them before the first request carries one.
    with ScriptedAuth() as server, trio.fail_after(10):
        run = Run(server)
        auth = OAuth(authorize=server.browser, redirect_uri=REDIRECT, max_step_ups=0)
        async with run.connection(auth):
            pass
        (issued,) = server.token_answers

        def echo(seen: Seen) -> Reply:
            used = seen.headers.get("authorization", "none")
            challenge = f'Bearer error="insufficient_scope", error_description="{used}"'
            return Reply(403, {}, {"WWW-Authenticate": challenge})

        server.guard = echo
        with capture_logs() as logs, pytest.raises(AuthorizationRequired) as caught:
            async with run.connection(auth):
                pass
    assert server.token_answers == [issued]  # the second connection used the same token
    assert caught.value.challenge["error_description"] == "Bearer ***"
    assert not [t for t in [*_texts_of(caught.value), repr(logs), *run.wire] if CANARY in t]
