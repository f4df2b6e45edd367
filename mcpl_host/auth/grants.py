"""How the host gets tokens once it knows the authorization server: the authorization
code flow with PKCE (the default, for a person), and the grants of the authorization
extensions for machines: client credentials, and the JWT bearer grant (RFC 7523) fed by
a workload identity or by an enterprise identity provider's ID-JAG (RFC 8693)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, Protocol
from urllib.parse import parse_qs, urlencode, urlsplit

from ..protocol.errors import AuthorizationError, AuthorizationRequired, McplHostError
from .endpoints import MAX_CREDENTIAL, Assertion, oauth_error, read_tokens, token_request
from .fetch import Answer, Exchanges
from .jose import ClientAssertion, DpopKey
from .metadata import AuthServerMetadata
from .pkce import challenge_of, new_state, new_verifier
from .records import ClientInfo, TokenSet

__all__ = [
    "AuthorizationCode",
    "Authorize",
    "ClientCredentials",
    "EnterpriseManaged",
    "Grant",
    "GrantContext",
    "JwtBearer",
]

# The person's side of the authorization code flow: given the authorization URL, bring
# back the URL the authorization server redirected to (with code, state, iss).
Authorize = Callable[[str], Awaitable[str]]

_JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
_ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
_ID_TOKEN: Final = "urn:ietf:params:oauth:token-type:id_token"


@dataclass(slots=True)
class GrantContext:
    """What a grant needs: the server's metadata, the client, the resource (RFC 8707)
    and the scope to ask for; ``learn`` gives a new secret to the redactor."""

    http: Exchanges
    metadata: AuthServerMetadata
    issuer: str
    resource: str | None
    scope: str | None
    client: ClientInfo | None
    redirect_uri: str
    learn: Callable[[str], None]
    dpop: DpopKey | None = None
    # Found by MCP 2025-03-26's fallbacks (no protected-resource metadata).
    legacy: bool = False
    challenge: dict[str, str] = field(default_factory=dict)
    # DPoP nonces the authorization server gave, by its origin.
    nonces: dict[str, str] = field(default_factory=dict)

    @property
    def token_endpoint(self) -> str:
        endpoint = self.metadata.token_endpoint
        if not endpoint:
            raise AuthorizationError(
                "the authorization server's metadata has no token_endpoint",
                step="authorization-server-metadata",
                rule="RFC 8414 section 2",
            )
        return endpoint

    async def token(
        self,
        form: dict[str, str],
        *,
        step: str,
        client: ClientInfo | None = None,
        assertion: Assertion | None = None,
        previous: TokenSet | None = None,
    ) -> TokenSet:
        """One token request (:meth:`token_answer`), answered with tokens.

        Raises:
            AuthorizationError: refused, unreachable, or an answer without a token.
        """
        answer = await self.token_answer(form, step=step, client=client, assertion=assertion)
        tokens = read_tokens(answer, step, previous, redactor=self.http.redactor)
        self.learn(tokens.access_token)
        if tokens.refresh_token:
            self.learn(tokens.refresh_token)
        return tokens

    async def token_answer(
        self,
        form: dict[str, str],
        *,
        step: str,
        client: ClientInfo | None = None,
        assertion: Assertion | None = None,
    ) -> Answer:
        """One token request (``resource`` added) and its answer, whatever it says; a
        DPoP proof goes with it when the session binds tokens (the refresh of a bound
        token included, RFC 9449 section 5), sent again once with the server's nonce
        when it asks for one (section 8).

        Raises:
            AuthorizationError: no answer, or the server could not be reached.
        """
        if self.resource is not None:
            form.setdefault("resource", self.resource)
        endpoint = self.token_endpoint
        origin = urlsplit(endpoint).netloc
        answer: Answer | None = None
        for _attempt in range(2):
            headers = {}
            if self.dpop is not None:
                proof = self.dpop.proof("POST", endpoint, nonce=self.nonces.get(origin))
                self.learn(proof)
                headers["DPoP"] = proof
            answer = await token_request(
                self.http,
                endpoint,
                dict(form),
                client if client is not None else self.client,
                step=step,
                assertion=assertion,
                headers=headers,
            )
            nonce = answer.headers.get("dpop-nonce")
            if nonce:
                self.nonces[origin] = nonce
            body = answer.json()
            if (
                self.dpop is not None
                and answer.status == 400
                and isinstance(body, dict)
                and body.get("error") == "use_dpop_nonce"
                and nonce
            ):
                continue
            break
        assert answer is not None
        return answer


class Grant(Protocol):
    """A way to get tokens. ``interactive`` grants need a person (the redirect hook)."""

    interactive: bool

    def unattended(self, challenge: dict[str, str]) -> AuthorizationRequired | None:
        """The error to raise when the grant would need a person and has none to ask
        (before anything is registered for it); None when it can go on."""

    async def obtain(self, ctx: GrantContext) -> TokenSet: ...


class AuthorizationCode:
    """The authorization code flow with PKCE S256 (OAuth 2.1, MCP authorization), the
    ``resource`` on both requests and the RFC 9207 ``iss`` check on the answer."""

    interactive = True

    def __init__(self, authorize: Authorize | None) -> None:
        self.authorize = authorize

    def unattended(self, challenge: dict[str, str]) -> AuthorizationRequired | None:
        if self.authorize is not None:
            return None
        return AuthorizationRequired(
            "the server needs authorization by a person: run `mcpl-host auth login` "
            "for it, or give OAuth an authorize hook",
            challenge=challenge,
        )

    async def obtain(self, ctx: GrantContext) -> TokenSet:
        meta = ctx.metadata
        methods = meta.code_challenge_methods_supported
        # MCP 2025-06-18 on: metadata that does not list S256 (or lists no methods) means
        # no PKCE, and the flow must not go on. 2025-03-26's servers without protected-
        # resource metadata predate the rule.
        if (methods is not None or not ctx.legacy) and "S256" not in (methods or ()):
            raise AuthorizationError(
                "the authorization server does not advertise PKCE with S256",
                step="authorization",
                rule="MCP authorization, authorization code protection",
            )
        if not meta.authorization_endpoint:
            raise AuthorizationError(
                "the authorization server's metadata has no authorization_endpoint",
                step="authorization-server-metadata",
                rule="RFC 8414 section 2",
            )
        client = ctx.client
        assert client is not None
        verifier = new_verifier()
        ctx.learn(verifier)
        state = new_state()
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": ctx.redirect_uri,
            "state": state,
            "code_challenge": challenge_of(verifier),
            "code_challenge_method": "S256",
        }
        if ctx.scope:
            query["scope"] = ctx.scope
        if ctx.resource is not None:
            query["resource"] = ctx.resource
        endpoint = meta.authorization_endpoint
        url = endpoint + ("&" if urlsplit(endpoint).query else "?") + urlencode(query)
        unattended = self.unattended(ctx.challenge)
        if unattended is not None:
            raise unattended
        assert self.authorize is not None
        try:
            redirected = await self.authorize(url)
            returned = urlsplit(redirected).query
        except McplHostError:
            raise  # the hook's own word (LoopbackRedirect: no redirect in time)
        except Exception as exc:  # the embedder's hook: whatever it raises ends the flow
            raise AuthorizationError(
                f"the authorize hook failed ({type(exc).__name__})", step="authorization"
            ) from exc
        params = {k: v[0] for k, v in parse_qs(returned).items()}
        if "code" in params:
            ctx.learn(params["code"])
        self._check(params, state, ctx)
        form = {
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": ctx.redirect_uri,
            "code_verifier": verifier,
        }
        return await ctx.token(form, step="token")

    @staticmethod
    def _check(params: dict[str, str], state: str, ctx: GrantContext) -> None:
        """The authorization response: an error, the state (CSRF), then ``iss``
        compared as a string with the issuer (RFC 9207 section 2.4)."""
        shown = ctx.http.redactor.log_value
        if "error" in params:
            error = shown(params["error"], 64)
            raise AuthorizationError(
                f"the authorization server refused: {error}", step="authorization", error=error
            )
        if params.get("state") != state:
            raise AuthorizationError(
                "the authorization response's state is not the one sent",
                step="authorization",
                rule="RFC 6749 section 10.12",
            )
        iss = params.get("iss")
        if iss is not None and iss != ctx.issuer:
            raise AuthorizationError(
                f"the authorization response came from issuer {shown(iss, 120)!r}, "
                f"not {shown(ctx.issuer, 120)!r}",
                step="authorization",
                rule="RFC 9207 section 2.4",
            )
        if iss is None and ctx.metadata.authorization_response_iss_parameter_supported:
            raise AuthorizationError(
                "the authorization response has no iss, which its server advertises",
                step="authorization",
                rule="RFC 9207 section 2.4",
            )
        if not params.get("code"):
            raise AuthorizationError(
                "the authorization response has no code",
                step="authorization",
                rule="RFC 6749 4.1.2",
            )


class ClientCredentials:
    """The client credentials grant (OAuth 2.1 section 4.2; MCP extension SEP-1046): a
    machine's own identity, by secret (``client_secret_basic`` or ``_post``) or by
    signed assertion (``private_key_jwt`` with ``private_key_pem``)."""

    interactive = False

    def unattended(self, challenge: dict[str, str]) -> AuthorizationRequired | None:  # noqa: ARG002
        return None  # a machine's grant needs nobody

    def __init__(
        self,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key_pem: str | None = None,
        algorithm: str = "ES256",
        token_endpoint_auth_method: str | None = None,
    ) -> None:
        self.signer = (  # signs here; not a hook of the embedder's
            ClientAssertion(client_id, private_key_pem, algorithm) if private_key_pem else None
        )
        method = token_endpoint_auth_method or (
            "private_key_jwt" if private_key_pem else "client_secret_basic"
        )
        self.client = ClientInfo(
            client_id=client_id,
            client_secret=client_secret,
            token_endpoint_auth_method=method,
            source="preregistered",
        )

    async def obtain(self, ctx: GrantContext) -> TokenSet:
        form = {"grant_type": "client_credentials"}
        if ctx.scope:
            form["scope"] = ctx.scope
        return await ctx.token(
            form, step="token", client=self.client, assertion=self._assertion(ctx)
        )

    def _assertion(self, ctx: GrantContext) -> Assertion | None:
        if self.signer is None:
            return None
        make = self.signer

        def signed(audience: str) -> str:
            # RFC 7523 section 3: the authorization server is the audience; its issuer
            # identifier names it.
            made = make(ctx.issuer or audience)
            ctx.learn(made)
            return made

        return signed


def _machine_client(client_id: str, client_secret: str | None, method: str | None) -> ClientInfo:
    """A machine grant's own client: a secret by Basic unless said otherwise."""
    return ClientInfo(
        client_id=client_id,
        client_secret=client_secret,
        token_endpoint_auth_method=method or ("client_secret_basic" if client_secret else "none"),
        source="preregistered",
    )


class JwtBearer:
    """The JWT bearer grant (RFC 7523 section 2.1) with an assertion from elsewhere: a
    workload identity token (``assertion()`` is called for each token request, so a
    short-lived one is always fresh)."""

    interactive = False

    def unattended(self, challenge: dict[str, str]) -> AuthorizationRequired | None:  # noqa: ARG002
        return None  # a machine's grant needs nobody

    def __init__(
        self,
        assertion: Callable[[], Awaitable[str]],
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
    ) -> None:
        self.assertion = assertion
        self.client = (
            _machine_client(client_id, client_secret, token_endpoint_auth_method)
            if client_id
            else None
        )

    async def obtain(self, ctx: GrantContext) -> TokenSet:
        assertion = await self.assertion()
        if len(assertion) > MAX_CREDENTIAL:
            raise AuthorizationError(
                f"the assertion is over {MAX_CREDENTIAL} characters", step="token"
            )
        ctx.learn(assertion)
        form = {"grant_type": _JWT_BEARER, "assertion": assertion}
        if ctx.scope:
            form["scope"] = ctx.scope
        return await ctx.token(form, step="token", client=self.client)


class EnterpriseManaged:
    """Enterprise-managed authorization (MCP extension SEP-990): the user's ID token at
    the enterprise identity provider is exchanged (RFC 8693) for an identity assertion
    JWT grant (ID-JAG) naming the MCP authorization server and the resource, which the
    JWT bearer grant (RFC 7523) turns into an access token there."""

    interactive = False

    def unattended(self, challenge: dict[str, str]) -> AuthorizationRequired | None:  # noqa: ARG002
        return None  # a machine's grant needs nobody

    def __init__(
        self,
        *,
        idp_token_endpoint: str,
        id_token: Callable[[], Awaitable[str]],
        idp_client_id: str,
        client_id: str,
        idp_client_secret: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
    ) -> None:
        self.idp_token_endpoint = idp_token_endpoint
        self.id_token = id_token
        self.idp_client = ClientInfo(
            client_id=idp_client_id,
            client_secret=idp_client_secret,
            token_endpoint_auth_method="client_secret_post" if idp_client_secret else "none",
            source="preregistered",
        )
        self.client = _machine_client(client_id, client_secret, token_endpoint_auth_method)

    async def obtain(self, ctx: GrantContext) -> TokenSet:
        # The ID-JAG is made for this flow's authorization server and resource: several
        # servers may be authorizing with this grant at once.
        async def id_jag() -> str:
            return await self._id_jag(ctx)

        bearer = JwtBearer(id_jag)
        bearer.client = self.client
        return await bearer.obtain(ctx)

    async def _id_jag(self, ctx: GrantContext) -> str:
        id_token = await self.id_token()
        ctx.learn(id_token)
        form = {
            "grant_type": _TOKEN_EXCHANGE,
            "requested_token_type": _ID_JAG,
            "subject_token": id_token,
            "subject_token_type": _ID_TOKEN,
            "audience": ctx.issuer,
        }
        if ctx.resource is not None:
            form["resource"] = ctx.resource
        if ctx.scope:
            form["scope"] = ctx.scope
        answer = await token_request(
            ctx.http, self.idp_token_endpoint, form, self.idp_client, step="token-exchange"
        )
        if answer.status != 200:
            raise oauth_error(
                answer,
                "token-exchange",
                "the identity provider's token exchange",
                ctx.http.redactor,
            )
        body = answer.json()
        jag = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(jag, str) or not jag or len(jag) > MAX_CREDENTIAL:
            raise AuthorizationError(
                "the identity provider's answer has no access_token (the ID-JAG)",
                step="token-exchange",
                rule="RFC 8693 section 2.2.1",
            )
        ctx.learn(jag)
        return jag
