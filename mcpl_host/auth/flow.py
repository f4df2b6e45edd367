"""The OAuth provider an HTTP target takes (``HttpTarget(url, auth=OAuth(...))``).

:class:`OAuth` holds the configuration (how the host is known to authorization servers,
how it gets tokens, where it keeps them) and, per MCP server, what discovery found and
the tokens in use. The transport asks an :class:`AuthSession` for the headers of each
request and hands it each 401 or 403; the session decides: refresh, run the flow, step
up the scope, or give up with a typed error. One flow runs at a time per server; a
request that failed with a token another request has since replaced is only sent again.

The order of every step is the MCP authorization spec's (docs/auth.md): discovery by
RFC 9728 then RFC 8414 / OpenID Connect (2025-03-26's fallbacks without them), the
client by pre-registration, then a Client ID Metadata Document, then RFC 7591
registration, credentials kept by issuer, the grant, then Bearer (or DPoP) on every
request.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import trio

from .._log import get_logger
from ..protocol.errors import (
    AuthorizationError,
    AuthorizationRequired,
    ConfigurationError,
    McplHostError,
)
from ..protocol.redact import Redactor, log_value
from .challenge import bearer_params, shown
from .clients import cimd_client, preregistered, registration_metadata, serves_redirect
from .discovery import discover
from .endpoints import read_tokens, register
from .fetch import Answer, Exchanges
from .grants import AuthorizationCode, Authorize, Grant, GrantContext
from .jose import DpopKey
from .metadata import (
    canonical_resource,
    origin,
)
from .records import ClientInfo, TokenSet
from .state import ServerState, Tries
from .store import MemoryTokenStore, TokenStore

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_REDIRECT_URI", "AuthSession", "OAuth"]

_log = get_logger("mcpl_host.auth")

# Sending a request again because its token was replaced meanwhile: at most so often
# (tokens of a second's life, refreshed by each request, could otherwise swap forever).
_MAX_REPLACED: Final = 3
# How long a failed flow answers the requests that were refused with the same token.
_FAILURE_MEMORY: Final = 10.0

DEFAULT_REDIRECT_URI: Final = "http://127.0.0.1/callback"


class OAuth:
    """MCP authorization for HTTP servers.

    - ``store``: where registrations and tokens are kept (:class:`MemoryTokenStore`
      by default; :class:`~mcpl_host.auth.FileTokenStore` survives restarts).
    - ``client_id`` / ``client_secret`` / ``token_endpoint_auth_method``: a
      pre-registered client (used before anything else).
    - ``client_metadata_url``: the HTTPS URL of the host's Client ID Metadata Document,
      used as the client id where the server supports it.
    - ``client_name``, ``redirect_uri``: what dynamic registration asks for.
    - ``scopes``: the scope to ask for (default: the 401's, else the server's
      ``scopes_supported``, else none).
    - ``authorize``: the person's side (``async (authorization_url) -> redirect_url``);
      None makes the flow non-interactive: :class:`AuthorizationRequired` instead.
    - ``grant``: another way to get tokens (:class:`ClientCredentials`,
      :class:`JwtBearer`, :class:`EnterpriseManaged`); default the authorization code.
    - ``dpop``: bind tokens to a key of this process with DPoP proofs (RFC 9449).
    - ``max_step_ups``: scope step-ups for one request after a 403 (2).

    Raises:
        ConfigurationError: a ``client_metadata_url`` that is not an HTTPS URL with a
            path, a bad ``token_endpoint_auth_method`` or ``max_step_ups``.
    """

    def __init__(
        self,
        *,
        store: TokenStore | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcpl-host",
        redirect_uri: str = DEFAULT_REDIRECT_URI,
        scopes: str | None = None,
        authorize: Authorize | None = None,
        grant: Grant | None = None,
        dpop: bool = False,
        max_step_ups: int = 2,
    ) -> None:
        if client_metadata_url is not None:
            parts = urlsplit(client_metadata_url)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise ConfigurationError(
                    "client_metadata_url must be an https:// URL with a path (the client id)"
                )
        if token_endpoint_auth_method not in (
            None,
            "client_secret_basic",
            "client_secret_post",
            "none",
        ):
            raise ConfigurationError(
                "token_endpoint_auth_method must be client_secret_basic, client_secret_post or none"
            )
        if not isinstance(max_step_ups, int) or not 0 <= max_step_ups <= 10:
            raise ConfigurationError("max_step_ups must be an integer from 0 to 10")
        # Every option as given: replace() makes a copy with some changed.
        self._options: dict[str, Any] = {
            "store": store,
            "client_id": client_id,
            "client_secret": client_secret,
            "token_endpoint_auth_method": token_endpoint_auth_method,
            "client_metadata_url": client_metadata_url,
            "client_name": client_name,
            "redirect_uri": redirect_uri,
            "scopes": scopes,
            "authorize": authorize,
            "grant": grant,
            "dpop": dpop,
            "max_step_ups": max_step_ups,
        }
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.client_id = client_id
        self.client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.redirect_uri = redirect_uri
        self.scopes = scopes
        self.grant: Grant = grant if grant is not None else AuthorizationCode(authorize)
        self.dpop = dpop
        self.max_step_ups = max_step_ups
        self._servers: dict[str, ServerState] = {}

    def __repr__(self) -> str:
        return f"OAuth(client_id={self.client_id!r}, grant={type(self.grant).__name__})"

    def replace(self, **changes: Any) -> OAuth:
        """A new OAuth with these options changed (the store and hooks shared, nothing
        learnt carried over).

        Raises:
            ConfigurationError: as the constructor does.
            TypeError: an option OAuth does not have.
        """
        return OAuth(**{**self._options, **changes})

    def secrets(self) -> list[str]:
        """The configured secrets, for a redactor built before any flow runs."""
        found = [self.client_secret] if self.client_secret else []
        for name in ("client", "idp_client"):  # a machine grant's own clients
            client = getattr(self.grant, name, None)
            if isinstance(client, ClientInfo) and client.client_secret:
                found.append(client.client_secret)
        return found

    def session(
        self,
        server_url: str,
        *,
        client: httpx.AsyncClient,
        redactor: Redactor,
        timeout: float = 30.0,
        on_http: Callable[[str], None] | None = None,
    ) -> AuthSession:
        """The transport's handle for ``server_url`` on ``client``; secrets obtained
        are learnt by ``redactor``, HTTP exchanges of the flow reported to ``on_http``."""
        key = canonical_resource(server_url)
        server = self._servers.get(key)
        if server is None:
            server = self._servers[key] = ServerState(url=server_url)
        # With the secret of a client another connection registered (its tokens are
        # learnt as they are sent: AuthSession.headers).
        held = server.client.client_secret if server.client is not None else None
        for secret in [*self.secrets(), held]:
            if secret:
                redactor.learn(secret)
        http = Exchanges(client, timeout=timeout, redactor=redactor, on_http=on_http)
        return AuthSession(self, server, http)

    async def login(
        self,
        server_url: str,
        *,
        client: httpx.AsyncClient | None = None,
        redactor: Redactor | None = None,
        timeout: float = 30.0,
        on_http: Callable[[str], None] | None = None,
    ) -> TokenSet:
        """Authorize for ``server_url`` now, without an MCP request first: discovery
        from the well-known URLs (a 401 is not needed), then the grant. What
        ``mcpl-host auth login`` runs.

        Raises:
            AuthorizationRequired: the grant needs a person and there is no hook.
            AuthorizationError: a step failed.
        """
        import httpx  # noqa: PLC0415 - heavy: loaded by a flow that runs, not by an import

        # A client of the caller's is the caller's to close.
        async with (
            httpx.AsyncClient(follow_redirects=False)
            if client is None
            else contextlib.nullcontext(client) as http_client
        ):
            session = self.session(
                server_url,
                client=http_client,
                redactor=redactor if redactor is not None else Redactor(),
                timeout=timeout,
                on_http=on_http,
            )
            return await session.authorize({}, step_up=False, refused=None)


class AuthSession:
    """One transport's view of an :class:`OAuth` for one server."""

    def __init__(self, oauth: OAuth, server: ServerState, http: Exchanges) -> None:
        self._oauth = oauth
        self._server = server
        self._http = http
        self._log = _log.bind(target=http.redactor.log_value(origin(server.url), 80))
        self._sent: TokenSet | None = None  # the tokens this session's redactor knows

    # -- the transport's side ---------------------------------------------------------

    async def headers(self, method: str, url: str) -> dict[str, str]:
        """The headers that authorize one request: ``Authorization`` (and ``DPoP``), a
        token refreshed first when it is about to expire; none before the first 401."""
        server = self._server
        tokens = server.tokens
        if tokens is not None and tokens.expiring() and tokens.refresh_token:
            async with server.lock:
                if server.tokens is tokens:
                    try:
                        await self._refresh()
                    except AuthorizationError:
                        # The authorization server did not answer: the token may still
                        # be good (it is refreshed before its end); the server decides.
                        if tokens.expired():
                            raise
            tokens = server.tokens
        if tokens is None:
            return {}
        if tokens is not self._sent:
            # Obtained by another connection of this OAuth (with a redactor of its own),
            # or by this one: known to this redactor before they go out.
            self._learn_tokens(tokens)
            self._sent = tokens
        if tokens.token_type == "DPoP" and server.dpop is not None:
            proof = server.dpop.proof(
                method,
                url,
                nonce=server.nonces.get(urlsplit(url).netloc),
                access_token=tokens.access_token,
            )
            # Not learnt by the redactor: a proof is made per request and goes only in a
            # header, which no log line or trace shows.
            return {"Authorization": f"DPoP {tokens.access_token}", "DPoP": proof}
        return {"Authorization": f"Bearer {tokens.access_token}"}

    def observe(self, url: str, response: httpx.Response) -> None:
        """A resource server's ``DPoP-Nonce`` is used on the next proof to it."""
        nonce = response.headers.get("dpop-nonce")
        if nonce and self._server.dpop is not None:
            self._server.nonces[urlsplit(url).netloc] = nonce

    async def rejected(self, response: httpx.Response, sent: dict[str, str], tries: Tries) -> None:
        """The server answered 401, or 403 ``insufficient_scope``
        (:func:`~.challenge.wants_authorization`), to a request sent with ``sent`` (its
        auth headers): returns once the request may be sent again with new headers.

        Raises:
            AuthorizationRequired: authorization cannot help (the token just obtained was
                refused, the step-ups or DPoP nonces ran out, or a person is needed and
                none is there).
            AuthorizationError: a step of the flow failed.
        """
        status = response.status_code
        params = bearer_params(response.headers.get_list("www-authenticate"))
        challenge = shown(params, self._http.redactor)
        server = self._server
        if params.get("error") == "use_dpop_nonce" and server.dpop is not None:
            tries.nonces += 1
            if tries.nonces > 2:
                raise AuthorizationRequired(
                    "the server refused each DPoP proof, asking for a new nonce every time",
                    status=status,
                    challenge=challenge,
                )
            return
        used = sent.get("Authorization", "").partition(" ")[2] or None
        async with server.lock:
            current = server.tokens.access_token if server.tokens else None
            if current is not None and current != used and tries.replaced < _MAX_REPLACED:
                tries.replaced += 1
                return  # another request replaced the token meanwhile
            failed = server.failed
            if failed is not None and failed[0] == used and trio.current_time() < failed[1]:
                raise failed[2]
            try:
                await self._remedy(status, params, challenge, used, tries)
            except McplHostError as exc:
                server.failed = (used, trio.current_time() + _FAILURE_MEMORY, exc)
                raise
            server.failed = None

    async def _remedy(
        self,
        status: int,
        params: dict[str, str],
        challenge: dict[str, str],
        used: str | None,
        tries: Tries,
    ) -> None:
        """A step-up, a refresh, or the flow, for a refused request (the lock held)."""
        server = self._server
        if status == 403:
            if tries.step_ups >= self._oauth.max_step_ups or not tries.may_authorize:
                raise AuthorizationRequired(
                    f"the server still refuses for scope after {tries.step_ups} step-ups",
                    status=403,
                    challenge=challenge,
                )
            tries.step_ups += 1
            await self.authorize(params, step_up=True, refused=used)
            return
        refreshable = server.tokens is not None and server.tokens.refresh_token
        if used is not None and refreshable and tries.refreshes == 0:
            tries.refreshes += 1
            if await self._refresh():
                return
        if tries.flows >= 1 or not tries.may_authorize:
            raise AuthorizationRequired(
                "the server refused the token it was just given"
                if tries.may_authorize
                else "the server refused the token, and only a POST runs the flow",
                status=status,
                challenge=challenge,
            )
        tries.flows += 1
        await self.authorize(params, step_up=False, refused=used)

    # -- the flow ---------------------------------------------------------------------

    async def authorize(
        self, params: dict[str, str], *, step_up: bool, refused: str | None
    ) -> TokenSet:
        """Discover, identify the client, and get tokens (stored ones first, unless they
        were just refused or the scope must grow)."""
        server = self._server
        oauth = self._oauth
        await self._discover(params.get("resource_metadata"))
        assert server.metadata is not None
        assert server.issuer is not None
        client = await self._client()
        scope = self._scope(params, step_up)
        if not step_up and client is not None:
            stored = await oauth.store.get_tokens(server.issuer, client.client_id, self._key())
            # A DPoP-bound token is no use without its key, which died with its process.
            usable = stored is not None and (stored.token_type != "DPoP" or server.dpop)
            if stored is not None and usable and stored.access_token != refused:
                self._learn_tokens(stored)
                server.tokens = stored
                if not stored.expiring() or (stored.refresh_token and await self._refresh()):
                    return server.tokens
        unattended = oauth.grant.unattended(shown(params, self._http.redactor))
        if unattended is not None:
            unattended.status = 403 if step_up else 401
            raise unattended  # before registering a client nobody would use
        if client is None and oauth.grant.interactive:
            client = await self._register()
        if oauth.dpop and server.dpop is None:
            server.dpop = DpopKey()
        tokens = await oauth.grant.obtain(self._context(params, scope, client))
        server.scope = scope
        server.tokens = tokens
        await self._keep(tokens)
        self._log.info(
            "authorized", issuer=self._shown(server.issuer), scope=self._shown(scope or "")
        )
        return tokens

    def _context(
        self, params: dict[str, str], scope: str | None, client: ClientInfo | None
    ) -> GrantContext:
        server = self._server
        assert server.metadata is not None
        assert server.issuer is not None
        return GrantContext(
            http=self._http,
            metadata=server.metadata,
            issuer=server.issuer,
            resource=server.resource,
            scope=scope,
            client=client,
            redirect_uri=self._oauth.redirect_uri,
            learn=self._http.redactor.learn,
            dpop=server.dpop,
            legacy=server.resource is None,
            challenge=shown(params, self._http.redactor),
            nonces=server.nonces,
        )

    async def _discover(self, resource_metadata: str | None) -> None:
        """Discovery (discovery.py); a changed authorization server drops the client
        and tokens known for the old one."""
        server = self._server
        found = await discover(self._http, server.url, resource_metadata)
        if server.issuer is not None and server.issuer != found.issuer:
            self._log.info("authorization server changed", issuer=self._shown(found.issuer))
            server.client = None
            server.tokens = None
            server.scope = None
        server.issuer = found.issuer
        server.metadata = found.metadata
        server.resource = found.resource
        server.scopes_supported = found.scopes_supported

    async def _client(self) -> ClientInfo | None:
        """The client known without asking the server for one: pre-registered, kept
        (in memory or the store) for this issuer, or a Client ID Metadata Document.
        None for a grant that brings its own, or when only registration is left."""
        server = self._server
        oauth = self._oauth
        assert server.issuer is not None
        assert server.metadata is not None
        if not oauth.grant.interactive:
            return None
        if oauth.client_id is not None:
            server.client = preregistered(
                oauth.client_id,
                oauth.client_secret,
                oauth.token_endpoint_auth_method,
                oauth.redirect_uri,
            )
        elif server.client is None:
            kept = await oauth.store.get_client(server.issuer)
            if (
                kept is not None
                and not kept.expired()
                and serves_redirect(kept, oauth.redirect_uri)
            ):
                if kept.client_secret:
                    self._http.redactor.learn(kept.client_secret)
                server.client = kept
            elif (
                oauth.client_metadata_url and server.metadata.client_id_metadata_document_supported
            ):
                server.client = cimd_client(oauth.client_metadata_url, oauth.redirect_uri)
                await oauth.store.set_client(server.issuer, server.client)
        return server.client

    async def _register(self) -> ClientInfo:
        """RFC 7591 registration, kept for the issuer.

        Raises:
            AuthorizationError: the server has no registration endpoint, or refused.
        """
        server = self._server
        oauth = self._oauth
        assert server.issuer is not None
        assert server.metadata is not None
        endpoint = server.metadata.registration_endpoint
        if not endpoint:
            raise AuthorizationError(
                "the authorization server offers no way to register: configure a client id",
                step="registration",
                rule="MCP authorization, client registration",
            )
        metadata = registration_metadata(server.metadata, oauth.client_name, oauth.redirect_uri)
        server.client = await register(
            self._http, endpoint, metadata, learn=self._http.redactor.learn
        )
        await oauth.store.set_client(server.issuer, server.client)
        return server.client

    def _scope(self, params: dict[str, str], step_up: bool) -> str | None:
        """The spec's order: configured, the challenge's, the protected resource's
        ``scopes_supported`` (kept from discovery), else none; a step-up asks for what
        was granted and what is now asked, together. ``offline_access`` is added where
        the authorization server lists it (for a refresh token)."""
        server = self._server
        oauth = self._oauth
        supported = " ".join(server.scopes_supported) if server.scopes_supported else None
        asked = oauth.scopes or params.get("scope") or supported
        if step_up:
            granted = server.tokens.scope if server.tokens else None
            # The 403's scope is what is missing, whatever scope was configured.
            asked = _union(_union(server.scope, granted), _union(asked, params.get("scope")))
        meta = server.metadata
        if (
            asked
            and oauth.grant.interactive
            and meta is not None
            and meta.scopes_supported
            and "offline_access" in meta.scopes_supported
            and "offline_access" not in asked.split()
        ):
            asked = f"{asked} offline_access"
        return asked or None

    async def _refresh(self) -> bool:
        """Refresh the tokens in use (the lock held). False when the server refused the
        refresh token: the tokens are then forgotten (in the store too, unless another
        process has replaced them meanwhile) so that the flow runs.

        Shielded, within the flow's timeout: a caller giving up after the server rotated
        the refresh token, but before the new one was kept, would lose the only one.

        Raises:
            AuthorizationError: the server did not answer, or failed (5xx, 429): the
                tokens are kept for a later try.
        """
        server = self._server
        tokens = server.tokens
        if tokens is None or not tokens.refresh_token or server.metadata is None:
            return False
        if not server.metadata.token_endpoint or server.issuer is None:
            return False
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        # With the DPoP key the tokens are bound to, and its nonce (RFC 9449 section 5);
        # a machine's grant authenticates as the client it names.
        client = server.client or self._grant_client()
        ctx = self._context({}, None, client)
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + self._http.timeout * 2
            answer: Answer = await ctx.token_answer(form, step="refresh")
            if answer.status not in (200, 400, 401):
                raise AuthorizationError(
                    f"the refresh failed: HTTP {answer.status}", step="refresh"
                )
            try:
                fresh = read_tokens(answer, "refresh", tokens, redactor=self._http.redactor)
            except AuthorizationError as exc:
                self._log.info("refresh refused", error=exc.error)
                server.tokens = None
                await self._forget(tokens)
                return False
            self._learn_tokens(fresh)
            server.tokens = fresh
            await self._keep(fresh)
        return True

    def _grant_client(self) -> ClientInfo | None:
        """The client a machine's grant names (None for the authorization code)."""
        client = getattr(self._oauth.grant, "client", None)
        return client if isinstance(client, ClientInfo) else None

    async def _forget(self, refused: TokenSet) -> None:
        """Forget refused tokens in the store, unless it now holds others (another
        process refreshed first: its tokens are the good ones)."""
        server = self._server
        client = server.client or self._grant_client()
        if server.issuer is None:
            return
        client_id = client.client_id if client is not None else ""
        try:
            kept = await self._oauth.store.get_tokens(server.issuer, client_id, self._key())
        except OSError as exc:
            self._log.warning("token store unreadable", error=type(exc).__name__)
            return
        if kept is None or kept.access_token == refused.access_token:
            await self._keep(None)

    async def _keep(self, tokens: TokenSet | None) -> None:
        """Store ``tokens`` (None: forget them). A store that fails is logged, not
        raised: the tokens in memory still serve this process."""
        server = self._server
        client = server.client or self._grant_client()
        if server.issuer is None:
            return
        client_id = client.client_id if client is not None else ""
        try:
            await self._oauth.store.set_tokens(server.issuer, client_id, self._key(), tokens)
        except OSError as exc:
            self._log.warning("token store not written", error=type(exc).__name__)

    def _key(self) -> str:
        return self._server.resource or canonical_resource(self._server.url)

    def _learn_tokens(self, tokens: TokenSet) -> None:
        self._http.redactor.learn(tokens.access_token)
        if tokens.refresh_token:
            self._http.redactor.learn(tokens.refresh_token)

    def _shown(self, text: str) -> str:
        return log_value(self._http.redactor.redact(text), 160)


def _union(first: str | None, second: str | None) -> str | None:
    """Both scopes, in order, each once."""
    words = [*(first or "").split(), *(second or "").split()]
    return " ".join(dict.fromkeys(words)) or None
