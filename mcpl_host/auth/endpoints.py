"""Requests to an authorization server's endpoints: dynamic client registration
(RFC 7591), the token endpoint with each client authentication method (RFC 6749
section 2.3.1, RFC 7523 for ``private_key_jwt``), and what their answers must hold."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import quote

from ..protocol.errors import AuthorizationError
from ..protocol.redact import Redactor, log_value
from .fetch import Answer, Exchanges
from .records import ClientInfo, TokenSet

__all__ = [
    "AUTH_METHODS",
    "MAX_CREDENTIAL",
    "MAX_SCOPE",
    "client_authentication",
    "oauth_error",
    "read_tokens",
    "register",
    "token_request",
]

AUTH_METHODS: Final = ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
_SECRET_METHODS: Final = ("client_secret_basic", "client_secret_post")
_FORM: Final = {"Accept": "application/json"}
# A credential (a token, a secret, an ID-JAG) is a header value and a redactor entry:
# a server does not get to make either megabytes long.
MAX_CREDENTIAL: Final = 8192
MAX_SCOPE: Final = 2048
# An access token's life is capped: a server's "expires_in" of years would keep a token
# the server may long have forgotten.
_MAX_LIFETIME: Final = 30 * 24 * 3600.0

_TRANSIENT_CODES: Final = frozenset({"server_error", "temporarily_unavailable"})

# ``private_key_jwt``: signs the client assertion for a token endpoint (the audience).
Assertion = Callable[[str], str]


def oauth_error(answer: Answer, step: str, what: str, redactor: Redactor) -> AuthorizationError:
    """An authorization server's refusal as a typed error: its OAuth ``error`` code and
    description (the host's secrets masked, escaped and cut: a server may echo the code
    or the client secret it refused), or the HTTP status."""
    body = answer.json()
    code = body.get("error") if isinstance(body, dict) else None
    described = body.get("error_description") if isinstance(body, dict) else None
    code = redactor.log_value(code, 64) if isinstance(code, str) else None
    text = f"{what} refused: HTTP {answer.status}"
    if code:
        text += f", {code}"
    if isinstance(described, str) and described:
        text += f" ({redactor.log_value(described, 200)})"
    error = AuthorizationError(text, step=step, error=code)
    # A server that failed (RFC 6749 section 5.2 has no such codes, but section 4.1.2.1's
    # server_error and temporarily_unavailable are sent here too) or asked to slow down
    # may answer later: a reconnect tries again. A refusal stays permanent.
    if answer.status >= 500 or answer.status == 429 or code in _TRANSIENT_CODES:
        error.permanent = False
    return error


def client_authentication(
    client: ClientInfo, form: dict[str, str], *, audience: str, assertion: Assertion | None
) -> dict[str, str]:
    """Authenticate ``client`` on a token request: fills ``form`` and returns the headers
    to add (``client_secret_basic``'s Authorization).

    Raises:
        AuthorizationError: the method needs a secret or a key the host does not have.
    """
    method = client.token_endpoint_auth_method
    if method in _SECRET_METHODS and not client.client_secret:
        raise AuthorizationError(
            f"the client is registered for {method} but has no client secret",
            step="token",
            rule="RFC 6749 section 2.3.1",
        )
    if method == "client_secret_basic":
        assert client.client_secret is not None
        # RFC 6749 section 2.3.1: both parts form-urlencoded before base64.
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    form["client_id"] = client.client_id
    if method == "client_secret_post":
        assert client.client_secret is not None
        form["client_secret"] = client.client_secret
    elif method == "private_key_jwt":
        if assertion is None:
            raise AuthorizationError(
                "the client is registered for private_key_jwt but has no signing key",
                step="token",
                rule="RFC 7523 section 2.2",
            )
        form["client_assertion_type"] = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        form["client_assertion"] = assertion(audience)
    elif method != "none":
        raise AuthorizationError(
            f"the client's token endpoint authentication {log_value(method, 64)!r} is not one "
            "the host can use",
            step="token",
        )
    return {}


def read_tokens(
    answer: Answer, step: str, previous: TokenSet | None = None, *, redactor: Redactor
) -> TokenSet:
    """A token endpoint's successful answer (RFC 6749 section 5.1).

    A refresh answer may leave out ``refresh_token`` (not rotated) and ``scope``
    (unchanged): the previous ones carry over.

    Raises:
        AuthorizationError: an error answer, or one without a usable access token.
    """
    if answer.status != 200:
        raise oauth_error(answer, step, "the token request", redactor)
    body = answer.json()
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise AuthorizationError(
            "the token endpoint's answer has no access_token", step=step, rule="RFC 6749 5.1"
        )
    if len(token) > MAX_CREDENTIAL:
        raise AuthorizationError(
            f"the token endpoint's access_token is over {MAX_CREDENTIAL} characters",
            step=step,
        )
    if not token.isascii() or not token.isprintable() or " " in token:
        # It goes in the Authorization header of every request: a token that cannot (a
        # CR, a NUL, a non-ASCII letter) would fail each of them as a broken transport.
        raise AuthorizationError(
            "the token endpoint's access_token holds characters a header cannot carry",
            step=step,
            rule="RFC 6750 section 2.1",
        )
    assert isinstance(body, dict)
    kind = body.get("token_type")
    if not isinstance(kind, str) or kind.lower() not in ("bearer", "dpop"):
        raise AuthorizationError(
            "the token endpoint's answer has no usable token_type (Bearer or DPoP)",
            step=step,
            rule="RFC 6749 section 5.1",
        )
    lifetime = body.get("expires_in")
    expires_at = refresh_at = None
    if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool) and lifetime > 0:
        now = time.time()
        seconds = min(float(lifetime), _MAX_LIFETIME)
        expires_at = now + seconds
        refresh_at = TokenSet.refresh_time(now, seconds)
    refresh = body.get("refresh_token")
    if isinstance(refresh, str) and len(refresh) > MAX_CREDENTIAL:
        refresh = None  # kept by nobody rather than held and sent back at any size
    scope = body.get("scope")
    if isinstance(scope, str) and len(scope) > MAX_SCOPE:
        scope = None
    return TokenSet(
        access_token=token,
        token_type="DPoP" if kind.lower() == "dpop" else "Bearer",
        expires_at=expires_at,
        refresh_token=refresh
        if isinstance(refresh, str) and refresh
        else (previous.refresh_token if previous else None),
        scope=scope if isinstance(scope, str) else (previous.scope if previous else None),
        refresh_at=refresh_at,
    )


async def token_request(
    http: Exchanges,
    endpoint: str,
    form: dict[str, str],
    client: ClientInfo | None,
    *,
    step: str,
    assertion: Assertion | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """POST ``form`` to the token endpoint, the client authenticated by its method."""
    sent = dict(_FORM)
    sent.update(headers or {})
    if client is not None:
        if client.client_secret:
            # Learnt again at each use: a secret registered once must not age out of the
            # redactor behind the codes, tokens and proofs learnt since.
            http.redactor.learn(client.client_secret)
        added = client_authentication(client, form, audience=endpoint, assertion=assertion)
        for value in added.values():
            # client_secret_basic's credentials: the secret too, base64-encoded (a server
            # may echo the header it refused).
            http.redactor.learn(value.partition(" ")[2])
        sent.update(added)
    return await http.send("POST", endpoint, step=step, headers=sent, form=form)


async def register(
    http: Exchanges,
    endpoint: str,
    metadata: dict[str, Any],
    *,
    learn: Callable[[str], None],
) -> ClientInfo:
    """RFC 7591 dynamic registration. The client secret it gives is learnt by the
    redactor before anything else sees it.

    Raises:
        AuthorizationError: refused, or an answer the host cannot use (no client id, a
            secret-based method without a secret).
    """
    answer = await http.send("POST", endpoint, step="registration", json=metadata)
    if answer.status not in (200, 201):
        raise oauth_error(answer, "registration", "client registration", http.redactor)
    body = answer.json()
    client_id = body.get("client_id") if isinstance(body, dict) else None
    if not isinstance(client_id, str) or not client_id:
        raise AuthorizationError(
            "the registration answer has no client_id", step="registration", rule="RFC 7591 3.2.1"
        )
    assert isinstance(body, dict)
    secret = body.get("client_secret")
    secret = secret if isinstance(secret, str) and secret else None
    if secret is not None and len(secret) > MAX_CREDENTIAL:
        raise AuthorizationError(
            f"the registration's client_secret is over {MAX_CREDENTIAL} characters",
            step="registration",
        )
    if secret:
        learn(secret)
    method = body.get("token_endpoint_auth_method")
    if not isinstance(method, str):
        # RFC 7591 section 2: absent means what was asked for.
        method = str(metadata.get("token_endpoint_auth_method", "client_secret_basic"))
    if method in _SECRET_METHODS and secret is None:
        method = "none" if metadata.get("token_endpoint_auth_method") == "none" else method
    if method not in AUTH_METHODS or (method in _SECRET_METHODS and secret is None):
        raise AuthorizationError(
            f"the server registered the client for {log_value(method, 64)!r}, which the host "
            "cannot use without a secret or key",
            step="registration",
            rule="RFC 7591 section 3.2.1",
        )
    expires = body.get("client_secret_expires_at")
    redirects = body.get("redirect_uris")
    return ClientInfo(
        client_id=client_id,
        client_secret=secret,
        token_endpoint_auth_method=method,
        redirect_uris=tuple(u for u in redirects if isinstance(u, str))
        if isinstance(redirects, list)
        else tuple(metadata.get("redirect_uris", ())),
        source="dcr",
        client_secret_expires_at=float(expires)
        if isinstance(expires, (int, float)) and not isinstance(expires, bool)
        else None,
    )
