"""A real OAuth 2.1 authorization server and the MCP server it protects, for the auth tests.

    python tests/auth/asserver.py --port 0 [--token-lifetime SECONDS] [--step-up] [--wrong-issuer]

One process, one uvicorn server on 127.0.0.1, one Starlette app. The official MCP Python
SDK (``mcp==2.3.0``) serves both roles from one app when ``MCPServer`` gets an
``auth_server_provider``: the authorization server (issuer ``http://127.0.0.1:PORT``) and
the protected resource (``http://127.0.0.1:PORT/mcp``). Running the AS and the RS on two
ports would need an introspection hop the SDK leaves to the example code; one app keeps
the token store in one place and still exercises every discovery step, because the client
finds the AS through the resource's RFC 9728 metadata either way.

The SDK does (``mcp.server.auth``): RFC 9728 metadata at
``/.well-known/oauth-protected-resource/mcp``; RFC 8414 metadata; ``/register`` (RFC 7591
validation, client ids and secrets); ``/authorize`` (request validation, redirect_uri and
scope checks against the registration, error redirects); ``/token`` (client
authentication, PKCE S256, redirect_uri binding, code expiry, refresh-token scope
narrowing); ``/revoke`` (RFC 7009); the bearer check on ``/mcp`` with a 401 that names the
metadata, and the token's resource (RFC 8707 audience) against ``/mcp``.

This file adds: the provider (in-memory store, auto-approval, token issuance and rotation,
``iss`` in the authorization response, /authorize refusing a missing or foreign
``resource`` with ``invalid_target``, every registration widened to every scope so that
step-up never needs a new registration) and a few small layers the SDK has no hook for:

* ``/token`` requires the ``resource`` form field and holds it to the one recorded at
  /authorize, for codes and refresh tokens alike (the SDK parses it but never hands it to
  the provider);
* the AS metadata is the SDK's ``build_metadata`` plus
  ``authorization_response_iss_parameter_supported`` and the ``none`` client auth method
  (and, with ``--wrong-issuer``, an ``issuer`` that is not the URL it is served for);
* ``--step-up``: a ``tools/call`` of ``admin`` without scope ``admin`` answers HTTP 403
  ``insufficient_scope`` with the scopes it needs (the SDK's scope check is one list for
  the whole endpoint). Without the flag the tool itself refuses: HTTP 200, a result with
  ``isError``. Tokens get scope ``mcp`` unless /authorize asks for more;
* ``POST /test/revoke-all`` revokes every access and refresh token at once;
* every /authorize, /token, /register and /revoke request is logged to stderr: method,
  path, status and the NAMES of its fields (never a value: codes, verifiers and secrets
  stay out of logs).

Stdout gets one line, ``READY <mcp-url>``, once the socket accepts; nothing after it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import secrets
import socket
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import uvicorn
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, build_resource_metadata_url, cors_middleware
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import AnyHttpUrl
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_SCOPES = ["mcp"]  # granted when /authorize names no scope
ALL_SCOPES = ["mcp", "admin"]
ADMIN_SCOPE = "admin"
SUBJECT = "test-user"  # the one resource owner, who approves everything
CODE_LIFETIME = 300.0
LOGGED_PATHS = {"/authorize", "/token", "/register", "/revoke"}

log = logging.getLogger("asserver")


def same_resource(a: str | None, b: str) -> bool:
    """RFC 8707 resources compared as URLs (scheme and host case, a trailing slash aside),
    the way the SDK's bearer check compares a token's resource with the server's."""
    if a is None:
        return False
    try:
        return str(AnyHttpUrl(a)).removesuffix("/") == str(AnyHttpUrl(b)).removesuffix("/")
    except ValueError:
        return False


class AutoApproveProvider(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """An in-memory authorization server whose one user approves every request at once.

    Tokens are opaque random strings; each records its client, scopes and RFC 8707
    resource (its audience), and the SDK's bearer check refuses one issued for another
    resource. An access token and the refresh token issued with it are one pair: revoking
    either revokes both. Refreshing rotates: the old refresh token dies, the old access
    token lives out its lifetime.
    """

    def __init__(self, *, issuer: str, resource: str, token_lifetime: float) -> None:
        self.issuer = issuer  # the one the AS advertises (wrong with --wrong-issuer)
        self.resource = resource
        self.token_lifetime = token_lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        # AccessToken.expires_at is whole seconds, which would make a 1 s lifetime last
        # up to 2 s; the exact deadline lives here.
        self.deadlines: dict[str, float] = {}
        self.pair: dict[str, str] = {}  # access -> refresh and refresh -> access

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None  # the SDK's RegistrationHandler mints it
        # Every client may ask for every scope, whatever it registered with (RFC 7591 lets
        # the server replace requested metadata; the 201 answer shows the replacement).
        # The SDK's /authorize refuses a scope the registration lacks, which would turn
        # step-up into re-registration for a client that registered with `mcp`; the MCP
        # step-up flow only re-authorizes.
        client_info.scope = " ".join(ALL_SCOPES)
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        if not same_resource(params.resource, self.resource):
            raise AuthorizeError(
                "invalid_target", f"resource must be {self.resource} (got {params.resource!r})"
            )
        code = secrets.token_urlsafe(32)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or DEFAULT_SCOPES,
            expires_at=time.time() + CODE_LIFETIME,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=SUBJECT,
        )
        # RFC 9207: the issuer rides along with the code, for mix-up defence.
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=self.issuer
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]  # single use
        return self._issue(client, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]
        self.pair.pop(refresh_token.token, None)
        return self._issue(client, scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        if time.time() >= self.deadlines.get(token, 0.0):
            return None
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        for value in (token.token, self.pair.get(token.token)):
            if value is not None:
                self.access.pop(value, None)
                self.refresh.pop(value, None)
                self.pair.pop(value, None)

    def revoke_all(self) -> int:
        count = len(self.access) + len(self.refresh)
        self.access.clear()
        self.refresh.clear()
        self.pair.clear()
        self.deadlines.clear()
        return count

    def recorded_resource(self, form: dict[str, str]) -> str | None:
        """The resource /authorize recorded for the grant a /token form presents (None: no
        such grant, the SDK's handler answers that)."""
        grant: AuthorizationCode | RefreshToken | None = None
        if form.get("grant_type") == "authorization_code":
            grant = self.codes.get(form.get("code", ""))
        elif form.get("grant_type") == "refresh_token":
            grant = self.refresh.get(form.get("refresh_token", ""))
        return None if grant is None else grant.resource

    def _issue(
        self, client: OAuthClientInformationFull, scopes: list[str], resource: str | None
    ) -> OAuthToken:
        client_id = client.client_id
        assert client_id is not None
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = time.time()
        deadline = now + self.token_lifetime
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=math.ceil(deadline),
            resource=resource,
            subject=SUBJECT,
        )
        self.deadlines[access] = deadline
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=SUBJECT
        )
        self.pair[access], self.pair[refresh] = refresh, access
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=max(1, math.ceil(self.token_lifetime)),
            scope=" ".join(scopes),
            refresh_token=refresh,
        )


# ---------------------------------------------------------------- ASGI layers on top of the SDK


async def _buffer_body(receive: Receive) -> tuple[bytes, Receive]:
    """Read the whole request body; return it and a receive that hands it out again."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            return b"".join(chunks), receive
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, replay


async def _send_json(send: Send, status: int, payload: Any, headers: dict[str, str]) -> None:
    body = json.dumps(payload).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _field_names(scope: Scope, body: bytes) -> list[str]:
    if scope["method"] == "GET":
        query = scope.get("query_string", b"").decode("latin-1")
        return [name for name, _ in parse_qsl(query, keep_blank_values=True)]
    try:
        document = json.loads(body)
    except ValueError:
        return [name for name, _ in parse_qsl(body.decode("latin-1"), keep_blank_values=True)]
    return list(document) if isinstance(document, dict) else ["<not an object>"]


class AuthorizationServerFront:
    """Outermost: logs the AS endpoints' requests (field names only) and holds /token to
    the resource recorded at /authorize."""

    def __init__(self, app: ASGIApp, provider: AutoApproveProvider) -> None:
        self.app = app
        self.provider = provider

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in LOGGED_PATHS:
            await self.app(scope, receive, send)
            return
        body, receive = await _buffer_body(receive)
        names = _field_names(scope, body)
        status = 0

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            refusal = self._token_refusal(scope, body)
            if refusal is not None:
                await _send_json(
                    send_noting_status,
                    400,
                    {"error": "invalid_target", "error_description": refusal},
                    {"Cache-Control": "no-store"},
                )
            else:
                await self.app(scope, receive, send_noting_status)
        finally:
            log.info(
                "%s %s -> %s fields=%s", scope["method"], scope["path"], status, ",".join(names)
            )

    def _token_refusal(self, scope: Scope, body: bytes) -> str | None:
        if scope["path"] != "/token" or scope["method"] != "POST":
            return None
        form = dict(parse_qsl(body.decode("latin-1"), keep_blank_values=True))
        recorded = self.provider.recorded_resource(form)
        if recorded is None:
            return None
        if "resource" not in form:
            return "resource is required in token requests (MCP authorization, RFC 8707)"
        if not same_resource(form["resource"], recorded):
            return f"resource {form['resource']!r} is not the one authorized ({recorded})"
        return None


class StepUp:
    """Innermost (after the SDK's bearer authentication): a tools/call of ``admin`` with a
    valid token that lacks scope ``admin`` answers 403 insufficient_scope, naming the
    scopes the call needs, as the MCP authorization spec's step-up flow has it."""

    def __init__(self, app: ASGIApp, mcp_path: str, resource_metadata_url: str) -> None:
        self.app = app
        self.mcp_path = mcp_path
        self.resource_metadata_url = resource_metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if (
            scope["type"] != "http"
            or scope["path"] != self.mcp_path
            or scope["method"] != "POST"
            or not isinstance(user, AuthenticatedUser)  # the SDK answers 401
            or ADMIN_SCOPE in user.scopes
        ):
            await self.app(scope, receive, send)
            return
        body, receive = await _buffer_body(receive)
        if not _calls_admin(body):
            await self.app(scope, receive, send)
            return
        needed = " ".join([*user.scopes, ADMIN_SCOPE])
        description = f"tool admin needs scope {ADMIN_SCOPE}"
        challenge = (
            f'Bearer error="insufficient_scope", scope="{needed}", '
            f'resource_metadata="{self.resource_metadata_url}", '
            f'error_description="{description}"'
        )
        await _send_json(
            send,
            403,
            {"error": "insufficient_scope", "error_description": description},
            {"WWW-Authenticate": challenge},
        )


def _calls_admin(body: bytes) -> bool:
    try:
        document = json.loads(body)
    except ValueError:
        return False
    messages = document if isinstance(document, list) else [document]
    return any(
        isinstance(m, dict)
        and m.get("method") == "tools/call"
        and isinstance(m.get("params"), dict)
        and m["params"].get("name") == "admin"
        for m in messages
    )


# ---------------------------------------------------------------- the app


def build_app(
    *, port: int, token_lifetime: float, step_up: bool, wrong_issuer: bool
) -> tuple[ASGIApp, str]:
    """The whole app, and the URL of its MCP endpoint."""
    origin = f"http://127.0.0.1:{port}"
    issuer = origin
    mcp_url = f"{origin}/mcp"
    advertised_issuer = f"{origin}/not-this-issuer" if wrong_issuer else issuer
    provider = AutoApproveProvider(
        issuer=advertised_issuer, resource=mcp_url, token_lifetime=token_lifetime
    )
    # /register refuses scopes outside valid_scopes, then register_client widens every
    # registration to all of them; /authorize grants DEFAULT_SCOPES when it names none.
    registration = ClientRegistrationOptions(
        enabled=True, valid_scopes=ALL_SCOPES, default_scopes=ALL_SCOPES
    )
    revocation = RevocationOptions(enabled=True)
    # Strings, not AnyHttpUrl objects: AuthSettings keeps a path-less URL path-less only
    # when it parses it itself (an AnyHttpUrl made here gains a trailing slash, and RFC
    # 8414 compares issuers as exact strings).
    settings = AuthSettings.model_validate(
        {
            "issuer_url": issuer,
            "resource_server_url": mcp_url,
            # Every token must carry `mcp`; it is also what the resource metadata lists,
            # so a client asks for `mcp` first and meets `admin` only through step-up.
            "required_scopes": DEFAULT_SCOPES,
            "validate_token_resource": True,
            "client_registration_options": registration,
            "revocation_options": revocation,
        }
    )
    server = MCPServer(name="mcpl-test-asserver", auth_server_provider=provider, auth=settings)

    @server.tool()
    def whoami() -> dict[str, Any]:
        """The access token's client id, scopes and resource."""
        token = get_access_token()
        assert token is not None  # the bearer check let the request in
        return {
            "client_id": token.client_id,
            "scopes": token.scopes,
            "resource": token.resource,
            "subject": token.subject,
        }

    @server.tool()
    def admin() -> str:
        """Needs scope `admin`."""
        token = get_access_token()
        if token is None or ADMIN_SCOPE not in token.scopes:
            raise ValueError(f"insufficient scope: this tool needs scope {ADMIN_SCOPE}")
        return "admin ok"

    app = server.streamable_http_app(host="127.0.0.1")
    # The SDK's AS metadata, corrected where it undersells this AS: the RFC 9207 flag
    # (build_metadata leaves it unset, though /authorize here sends `iss`) and the `none`
    # client auth method (the SDK registers public clients and lets them use /token and
    # /revoke, but does not list the method); and the wrong issuer on request. Routes
    # match in order, so this one, first, shadows the SDK's.
    sdk_metadata = build_metadata(settings.issuer_url, None, registration, revocation)
    metadata = OAuthMetadata.model_validate(
        {
            **sdk_metadata.model_dump(mode="json", exclude_none=True),
            "issuer": advertised_issuer,
            "authorization_response_iss_parameter_supported": True,
            "token_endpoint_auth_methods_supported": [
                *(sdk_metadata.token_endpoint_auth_methods_supported or []),
                "none",
            ],
            "revocation_endpoint_auth_methods_supported": [
                *(sdk_metadata.revocation_endpoint_auth_methods_supported or []),
                "none",
            ],
        }
    )
    app.router.routes.insert(
        0,
        Route(
            "/.well-known/oauth-authorization-server",
            endpoint=cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        ),
    )

    async def revoke_all(request: Request) -> Response:
        return JSONResponse({"revoked": provider.revoke_all()})

    # Outside the bearer check, like the metadata: a test calls it with no token.
    app.router.routes.append(Route("/test/revoke-all", revoke_all, methods=["POST"]))
    if step_up:
        # Last in the list is innermost: after the SDK's AuthenticationMiddleware.
        resource_metadata_url = str(build_resource_metadata_url(AnyHttpUrl(mcp_url)))
        app.user_middleware.append(
            Middleware(StepUp, mcp_path="/mcp", resource_metadata_url=resource_metadata_url)
        )
    return AuthorizationServerFront(app, provider), mcp_url


async def serve(args: argparse.Namespace) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]
    app, mcp_url = build_app(
        port=port,
        token_lifetime=args.token_lifetime,
        step_up=args.step_up,
        wrong_issuer=args.wrong_issuer,
    )
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            return 1
        await asyncio.sleep(0.01)
    print(f"READY {mcp_url}", flush=True)
    sys.stdout = sys.stderr  # stdout carries the READY line and nothing else
    await task
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument(
        "--token-lifetime",
        type=float,
        default=3600.0,
        help="access token lifetime in seconds (fractions work; expires_in rounds up)",
    )
    parser.add_argument(
        "--step-up", action="store_true", help="tool admin without scope admin: HTTP 403"
    )
    parser.add_argument(
        "--wrong-issuer", action="store_true", help="AS metadata names another issuer"
    )
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    log.setLevel(logging.INFO)
    return asyncio.run(serve(args))


if __name__ == "__main__":
    sys.exit(main())
