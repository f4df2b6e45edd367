"""Discovery: which authorization server protects an MCP server, and its metadata.

RFC 9728 protected-resource metadata (the 401's ``resource_metadata``, then the
path-based well-known URL, then the root one), checked to be this server's; then the
first authorization server's RFC 8414 / OpenID Connect metadata, checked to name the
issuer it was fetched for. Without protected-resource metadata, MCP 2025-03-26's
fallbacks: the server's origin is the authorization server, its metadata at the root,
else the default endpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

import msgspec

from ..protocol.errors import AuthorizationError
from .fetch import Exchanges
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

__all__ = ["Discovered", "discover", "same_issuer"]

_PRM: Final = msgspec.json.Decoder(ProtectedResource)
_ASM: Final = msgspec.json.Decoder(AuthServerMetadata)
_JSON: Final = {"Accept": "application/json"}
# The metadata's URLs the flow fetches or opens in a browser.
_ENDPOINTS: Final = (
    "authorization_endpoint",
    "token_endpoint",
    "registration_endpoint",
    "revocation_endpoint",
)


@dataclass(frozen=True, slots=True)
class Discovered:
    """What discovery found: the issuer (as its metadata names it), the metadata, the
    ``resource`` to ask tokens for (None on the 2025-03-26 path), and the protected
    resource's ``scopes_supported``."""

    issuer: str
    metadata: AuthServerMetadata
    resource: str | None
    scopes_supported: list[str] | None


def same_issuer(found: str | None, expected: str) -> bool:
    """RFC 8414 section 3.3: simple string comparison, except that a root issuer is
    the same with or without its trailing slash."""
    if found is None:
        return False
    if found == expected:
        return True
    short, long = sorted((found, expected), key=len)
    return long == f"{short}/" and urlsplit(short).path == ""


async def discover(http: Exchanges, server_url: str, from_challenge: str | None) -> Discovered:
    """Discover the authorization server of the MCP server at ``server_url``.

    Raises:
        AuthorizationError: a document is malformed, the protected resource is another
            server's, the metadata names another issuer or a URL that is not http(s),
            or no metadata is found where it must be.
    """
    prm = await _protected_resource(http, server_url, from_challenge)
    if prm is None:
        issuer = origin(server_url)
        metadata = await _auth_server(http, issuer, legacy=True) or legacy_endpoints(server_url)
        return Discovered(metadata.issuer or issuer, metadata, None, None)
    if not prm.authorization_servers:
        raise AuthorizationError(
            "the protected-resource metadata names no authorization server",
            step="protected-resource-metadata",
            rule="RFC 9728 section 2",
        )
    if prm.resource is None:
        raise AuthorizationError(
            "the protected-resource metadata names no resource",
            step="protected-resource-metadata",
            rule="RFC 9728 section 2",
        )
    if not resource_matches(prm.resource, server_url):
        raise AuthorizationError(
            f"the protected-resource metadata is for {_shown(http, prm.resource)!r}, "
            f"not this server ({_shown(http, canonical_resource(server_url))!r})",
            step="protected-resource-metadata",
            rule="RFC 9728 section 3.3",
        )
    issuer = prm.authorization_servers[0]
    if not web_url(issuer):
        raise AuthorizationError(
            f"the protected-resource metadata names {_shown(http, issuer)!r} as its "
            "authorization server, which is not an http(s) URL",
            step="protected-resource-metadata",
            rule="RFC 9728 section 2",
        )
    found = await _auth_server(http, issuer, legacy=False)
    if found is None:
        raise AuthorizationError(
            f"no authorization server metadata for {_shown(http, issuer)!r}",
            step="authorization-server-metadata",
            rule="RFC 8414 section 3",
        )
    return Discovered(found.issuer or issuer, found, prm.resource, prm.scopes_supported)


async def _protected_resource(
    http: Exchanges, server_url: str, from_challenge: str | None
) -> ProtectedResource | None:
    # A challenge's URL the flow cannot fetch is as good as none: the well-known ones.
    given = from_challenge if web_url(from_challenge) else None
    for url in protected_resource_urls(server_url, given):
        answer = await http.send("GET", url, step="protected-resource-metadata", headers=_JSON)
        if answer.status != 200:
            continue
        try:
            return _PRM.decode(answer.body)
        except (msgspec.DecodeError, RecursionError):
            raise AuthorizationError(
                f"the protected-resource metadata at {_shown(http, url)} is malformed",
                step="protected-resource-metadata",
                rule="RFC 9728 section 3.2",
            ) from None
    return None


async def _auth_server(http: Exchanges, issuer: str, *, legacy: bool) -> AuthServerMetadata | None:
    urls = auth_server_urls(issuer)
    for url in urls[:1] if legacy else urls:
        answer = await http.send("GET", url, step="authorization-server-metadata", headers=_JSON)
        if answer.status != 200:
            continue
        try:
            found = _ASM.decode(answer.body)
        except (msgspec.DecodeError, RecursionError):
            raise AuthorizationError(
                f"the authorization server metadata at {_shown(http, url)} is malformed",
                step="authorization-server-metadata",
                rule="RFC 8414 section 3.2",
            ) from None
        if not same_issuer(found.issuer, issuer):
            raise AuthorizationError(
                f"the authorization server metadata names issuer "
                f"{_shown(http, found.issuer or '')!r}, not {_shown(http, issuer)!r}",
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


def _shown(http: Exchanges, text: str) -> str:
    return http.redactor.log_value(text, 160)
