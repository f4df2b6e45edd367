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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
import msgspec
import trio

from .._log import get_logger
from ..protocol.errors import AuthorizationError, AuthorizationRequired, ConfigurationError
from ..protocol.redact import Redactor, log_value
from .challenge import bearer_params, shown
from .endpoints import read_tokens, register
from .fetch import Answer, Exchanges
from .grants import AuthorizationCode, Authorize, Grant, GrantContext
from .jose import DpopKey
from .metadata import (
    AuthServerMetadata,
    ProtectedResource,
    auth_server_urls,
    canonical_resource,
    legacy_endpoints,
    origin,
    protected_resource_urls,
    resource_matches,
    web_url,
)
from .records import ClientInfo, TokenSet
from .store import MemoryTokenStore, TokenStore

__all__ = ["DEFAULT_REDIRECT_URI", "AuthSession", "OAuth", "Tries"]

_log = get_logger("mcpl_host.auth")

# How a face (asyncio, threads) turns a hook written for it into a trio coroutine function.
Adapt = Callable[[Callable[..., Any]], Callable[..., Any]]

DEFAULT_REDIRECT_URI: Final = "http://127.0.0.1/callback"
_PRM_DECODER: Final = msgspec.json.Decoder(ProtectedResource)
_ASM_DECODER: Final = msgspec.json.Decoder(AuthServerMetadata)


@dataclass(slots=True)
class Tries:
    """What one request has tried so far: each remedy at most so often, so no server
    can keep the host authorizing forever."""

    flows: int = 0
    refreshes: int = 0
    step_ups: int = 0
    nonces: int = 0
    # False: a refresh (or a DPoP nonce) at most, never the flow or a step-up: for the
    # requests no caller waits on (the GET stream, the closing DELETE), which a server
    # could otherwise make ask the person again at every reopening.
    may_authorize: bool = True


@dataclass(slots=True)
class _Server:
    """What is known of one MCP server (by its canonical URL)."""

    url: str
    lock: trio.Lock = field(default_factory=trio.Lock)
    issuer: str | None = None
    metadata: AuthServerMetadata | None = None
    resource: str | None = None
    client: ClientInfo | None = None
    tokens: TokenSet | None = None
    scope: str | None = None
    scopes_supported: list[str] | None = None  # the protected resource's
    dpop: DpopKey | None = None
    nonces: dict[str, str] = field(default_factory=dict)


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
        self._servers: dict[str, _Server] = {}

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

    def adapted(self, adapt: Adapt) -> OAuth:
        """A copy whose hooks (the person's ``authorize``, a grant's assertion or ID
        token source, a store of the embedder's) are made trio coroutine functions by
        ``adapt``: what the asyncio and synchronous faces do with hooks written for them.
        The copy starts with nothing learnt."""
        copy = object.__new__(OAuth)
        copy.__dict__.update(self.__dict__)
        copy._servers = {}
        copy.grant = _adapted_grant(self.grant, adapt)
        if not isinstance(self.store, MemoryTokenStore) and not getattr(
            self.store, "trio_native", False
        ):
            copy.store = _AdaptedStore(self.store, adapt)
        return copy

    def secrets(self) -> list[str]:
        """The configured secrets, for a redactor built before any flow runs."""
        found = [self.client_secret] if self.client_secret else []
        client = getattr(self.grant, "client", None)
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
            server = self._servers[key] = _Server(url=server_url)
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
        async with (
            httpx.AsyncClient(follow_redirects=False)
            if client is None
            else _kept(client) as http_client
        ):
            session = self.session(
                server_url,
                client=http_client,
                redactor=redactor if redactor is not None else Redactor(),
                timeout=timeout,
                on_http=on_http,
            )
            return await session.authorize({}, step_up=False, refused=None)


def _adapted_grant(grant: Grant, adapt: Adapt) -> Grant:
    """A copy of ``grant`` with the callables it was given adapted."""
    hooks = {"authorize", "assertion", "id_token"}
    found = {k: v for k, v in vars(grant).items() if k in hooks and v is not None}
    if not found:
        return grant
    copy = object.__new__(type(grant))
    copy.__dict__.update(vars(grant))
    copy.__dict__.update({k: adapt(v) for k, v in found.items()})
    return copy


class _AdaptedStore:
    """An embedder's token store, each method through the face's adapter."""

    def __init__(
        self, store: TokenStore, adapt: Callable[[Callable[..., Any]], Callable[..., Any]]
    ) -> None:
        self.get_client = adapt(store.get_client)
        self.set_client = adapt(store.set_client)
        self.get_tokens = adapt(store.get_tokens)
        self.set_tokens = adapt(store.set_tokens)


class _kept:
    """``async with`` over a client the caller owns: not closed on the way out."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def __aenter__(self) -> httpx.AsyncClient:
        return self.client

    async def __aexit__(self, *_exc: object) -> None:
        return None


class AuthSession:
    """One transport's view of an :class:`OAuth` for one server."""

    def __init__(self, oauth: OAuth, server: _Server, http: Exchanges) -> None:
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
                    await self._refresh()
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

    async def rejected(
        self, url: str, response: httpx.Response, sent: dict[str, str], tries: Tries
    ) -> bool:
        """The server answered 401 or 403 to a request sent with ``sent`` (its auth
        headers): True to send it again (new headers are ready), False when it is not
        the flow's to handle (a 403 that asks for no scope).

        Raises:
            AuthorizationRequired: authorization cannot help (the token just obtained was
                refused, the step-ups or DPoP nonces ran out, or a person is needed and
                none is there).
            AuthorizationError: a step of the flow failed.
        """
        status = response.status_code
        params = bearer_params(response.headers.get_list("www-authenticate"))
        challenge = shown(params, self._http.redactor)
        self.observe(url, response)
        server = self._server
        if params.get("error") == "use_dpop_nonce" and server.dpop is not None:
            tries.nonces += 1
            if tries.nonces > 2:
                raise AuthorizationRequired(
                    "the server refused each DPoP proof, asking for a new nonce every time",
                    status=status,
                    challenge=challenge,
                )
            return True
        if status == 403 and params.get("error") != "insufficient_scope":
            return False
        used = sent.get("Authorization", "").partition(" ")[2] or None
        async with server.lock:
            current = server.tokens.access_token if server.tokens else None
            if current is not None and current != used:
                return True  # another request replaced the token meanwhile
            if status == 403:
                if tries.step_ups >= self._oauth.max_step_ups or not tries.may_authorize:
                    raise AuthorizationRequired(
                        f"the server still refuses for scope after {tries.step_ups} step-ups",
                        status=403,
                        challenge=challenge,
                    )
                tries.step_ups += 1
                await self.authorize(params, step_up=True, refused=used)
                return True
            refreshable = server.tokens is not None and server.tokens.refresh_token
            if used is not None and refreshable and tries.refreshes == 0:
                tries.refreshes += 1
                if await self._refresh():
                    return True
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
            return True

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
            if stored is not None and stored.access_token != refused:
                self._learn_tokens(stored)
                server.tokens = stored
                if not stored.expiring() or (stored.refresh_token and await self._refresh()):
                    return server.tokens
        if oauth.dpop and server.dpop is None:
            server.dpop = DpopKey()
        tokens = await oauth.grant.obtain(self._context(params, scope, client))
        server.scope = scope
        server.tokens = tokens
        await self._keep(tokens)
        self._log.info("authorized", issuer=self._shown(server.issuer), scope=scope)
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
            challenge=shown(params, self._http.redactor),
            nonces=server.nonces,
        )

    async def _discover(self, resource_metadata: str | None) -> None:
        """Protected-resource metadata, then the authorization server's. A changed
        authorization server drops the client known for the old one."""
        server = self._server
        prm = await self._protected_resource(resource_metadata)
        if prm is None:
            # MCP 2025-03-26: no protected-resource metadata; the server's origin is the
            # authorization server, with default endpoints when it has no metadata.
            issuer = origin(server.url)
            metadata = await self._auth_server(issuer, legacy=True) or legacy_endpoints(server.url)
            resource = None
        else:
            if not prm.authorization_servers:
                raise AuthorizationError(
                    "the protected-resource metadata names no authorization server",
                    step="protected-resource-metadata",
                    rule="RFC 9728 section 2",
                )
            if prm.resource is not None and not resource_matches(prm.resource, server.url):
                raise AuthorizationError(
                    f"the protected-resource metadata is for {self._shown(prm.resource)!r}, "
                    f"not this server ({self._shown(canonical_resource(server.url))!r})",
                    step="protected-resource-metadata",
                    rule="RFC 9728 section 3.3",
                )
            issuer = prm.authorization_servers[0]
            if not web_url(issuer):
                raise AuthorizationError(
                    f"the protected-resource metadata names {self._shown(issuer)!r} as its "
                    "authorization server, which is not an http(s) URL",
                    step="protected-resource-metadata",
                    rule="RFC 9728 section 2",
                )
            found = await self._auth_server(issuer, legacy=False)
            if found is None:
                raise AuthorizationError(
                    f"no authorization server metadata for {self._shown(issuer)!r}",
                    step="authorization-server-metadata",
                    rule="RFC 8414 section 3",
                )
            metadata = found
            resource = prm.resource or canonical_resource(server.url)
        if server.issuer is not None and server.issuer != issuer:
            self._log.info("authorization server changed", issuer=self._shown(issuer))
            server.client = None
            server.tokens = None
            server.scope = None
        server.issuer = metadata.issuer or issuer
        server.metadata = metadata
        server.resource = resource
        server.scopes_supported = prm.scopes_supported if prm is not None else None

    async def _protected_resource(self, from_challenge: str | None) -> ProtectedResource | None:
        # A challenge's URL the flow cannot fetch is as good as none: the well-known ones.
        given = from_challenge if web_url(from_challenge) else None
        for url in protected_resource_urls(self._server.url, given):
            answer = await self._http.send(
                "GET", url, step="protected-resource-metadata", headers=_JSON
            )
            if answer.status != 200:
                continue
            try:
                return _PRM_DECODER.decode(answer.body)
            except (msgspec.DecodeError, RecursionError):
                raise AuthorizationError(
                    f"the protected-resource metadata at {self._shown(url)} is malformed",
                    step="protected-resource-metadata",
                    rule="RFC 9728 section 3.2",
                ) from None
        return None

    async def _auth_server(self, issuer: str, *, legacy: bool) -> AuthServerMetadata | None:
        urls = auth_server_urls(issuer)
        for url in urls[:1] if legacy else urls:
            answer = await self._http.send(
                "GET", url, step="authorization-server-metadata", headers=_JSON
            )
            if answer.status != 200:
                continue
            try:
                found = _ASM_DECODER.decode(answer.body)
            except (msgspec.DecodeError, RecursionError):
                raise AuthorizationError(
                    f"the authorization server metadata at {self._shown(url)} is malformed",
                    step="authorization-server-metadata",
                    rule="RFC 8414 section 3.2",
                ) from None
            # RFC 8414 section 3.3: the issuer it names is the one its URL was built
            # from, compared as strings (a root issuer with or without its slash).
            if not _same_issuer(found.issuer, issuer):
                raise AuthorizationError(
                    f"the authorization server metadata names issuer "
                    f"{self._shown(found.issuer or '')!r}, not {self._shown(issuer)!r}",
                    step="authorization-server-metadata",
                    rule="RFC 8414 section 3.3",
                )
            for name in _ENDPOINTS:
                endpoint = getattr(found, name)
                if endpoint is not None and not web_url(endpoint):
                    raise AuthorizationError(
                        f"the authorization server metadata's {name} is not an http(s) URL",
                        step="authorization-server-metadata",
                        rule="RFC 8414 section 2",
                    )
            return found
        return None

    async def _client(self) -> ClientInfo | None:
        """The client in the spec's order: pre-registered, kept for this issuer, a
        Client ID Metadata Document, then dynamic registration. None for a grant that
        brings its own."""
        server = self._server
        oauth = self._oauth
        assert server.metadata is not None
        assert server.issuer is not None
        if not oauth.grant.interactive:
            return None
        if oauth.client_id is not None:
            server.client = ClientInfo(
                client_id=oauth.client_id,
                client_secret=oauth.client_secret,
                token_endpoint_auth_method=oauth.token_endpoint_auth_method
                or ("client_secret_basic" if oauth.client_secret else "none"),
                redirect_uris=(oauth.redirect_uri,),
                source="preregistered",
            )
            return server.client
        if server.client is not None:
            return server.client
        kept = await oauth.store.get_client(server.issuer)
        if kept is not None and not kept.expired() and oauth.redirect_uri in kept.redirect_uris:
            if kept.client_secret:
                self._http.redactor.learn(kept.client_secret)
            server.client = kept
            return kept
        meta = server.metadata
        if oauth.client_metadata_url is not None and meta.client_id_metadata_document_supported:
            server.client = ClientInfo(
                client_id=oauth.client_metadata_url,
                redirect_uris=(oauth.redirect_uri,),
                source="cimd",
            )
        elif meta.registration_endpoint:
            server.client = await register(
                self._http,
                meta.registration_endpoint,
                self._registration(meta),
                learn=self._http.redactor.learn,
            )
        else:
            raise AuthorizationError(
                "the authorization server offers no way to register: configure a client id",
                step="registration",
                rule="MCP authorization, client registration",
            )
        await oauth.store.set_client(server.issuer, server.client)
        return server.client

    def _registration(self, meta: AuthServerMetadata) -> dict[str, Any]:
        """RFC 7591 client metadata for a native application on a loopback redirect."""
        supported = meta.token_endpoint_auth_methods_supported
        method = "none"
        if supported is not None and "none" not in supported:
            method = next(
                (m for m in ("client_secret_basic", "client_secret_post") if m in supported),
                "client_secret_basic",
            )
        grants = ["authorization_code"]
        if meta.grant_types_supported is None or "refresh_token" in meta.grant_types_supported:
            grants.append("refresh_token")
        return {
            "client_name": self._oauth.client_name,
            "redirect_uris": [self._oauth.redirect_uri],
            "grant_types": grants,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native",
        }

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
        """Refresh the tokens in use (the lock held); False when the server refused,
        the tokens then dropped so that the flow runs."""
        server = self._server
        tokens = server.tokens
        if tokens is None or not tokens.refresh_token or server.metadata is None:
            return False
        if not server.metadata.token_endpoint or server.issuer is None:
            return False
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        # With the DPoP key the tokens are bound to, and its nonce (RFC 9449 section 5).
        ctx = self._context({}, None, server.client)
        answer: Answer = await ctx.token_answer(form, step="refresh")
        try:
            fresh = read_tokens(answer, "refresh", tokens, redactor=self._http.redactor)
        except AuthorizationError as exc:
            self._log.info("refresh refused", error=exc.error)
            server.tokens = None
            await self._keep(None)
            return False
        self._learn_tokens(fresh)
        server.tokens = fresh
        await self._keep(fresh)
        return True

    async def _keep(self, tokens: TokenSet | None) -> None:
        server = self._server
        client = server.client
        if server.issuer is None:
            return
        client_id = client.client_id if client is not None else ""
        await self._oauth.store.set_tokens(server.issuer, client_id, self._key(), tokens)

    def _key(self) -> str:
        return self._server.resource or canonical_resource(self._server.url)

    def _learn_tokens(self, tokens: TokenSet) -> None:
        self._http.redactor.learn(tokens.access_token)
        if tokens.refresh_token:
            self._http.redactor.learn(tokens.refresh_token)

    def _shown(self, text: str) -> str:
        return log_value(self._http.redactor.redact(text), 160)


_JSON: Final = {"Accept": "application/json"}
# The metadata's URLs the flow fetches or opens in a browser.
_ENDPOINTS: Final = (
    "authorization_endpoint",
    "token_endpoint",
    "registration_endpoint",
    "revocation_endpoint",
)


def _same_issuer(found: str | None, expected: str) -> bool:
    """RFC 8414 section 3.3: simple string comparison, except that a root issuer is
    the same with or without its trailing slash."""
    if found is None:
        return False
    if found == expected:
        return True
    short, long = sorted((found, expected), key=len)
    return long == f"{short}/" and urlsplit(short).path == ""


def _union(first: str | None, second: str | None) -> str | None:
    """Both scopes, in order, each once."""
    words = [*(first or "").split(), *(second or "").split()]
    return " ".join(dict.fromkeys(words)) or None
