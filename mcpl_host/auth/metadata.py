"""The documents of discovery, and where to look for them: RFC 9728 protected-resource
metadata, RFC 8414 / OpenID Connect authorization-server metadata, and the MCP rules
that tie them to the server (the canonical resource URI, the issuer check).

Pure: URLs and bytes in, decisions out; fetching is :mod:`.discovery`'s.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ..protocol.origins import netloc, origin

__all__ = [
    "AuthServerMetadata",
    "ProtectedResource",
    "auth_server_urls",
    "canonical_resource",
    "legacy_endpoints",
    "origin",
    "protected_resource_urls",
    "resource_matches",
    "web_url",
]

_PRM: Final = "/.well-known/oauth-protected-resource"
_OAUTH: Final = "/.well-known/oauth-authorization-server"
_OIDC: Final = "/.well-known/openid-configuration"


class ProtectedResource(msgspec.Struct, frozen=True):
    """RFC 9728 section 2 (the members the host acts on)."""

    resource: str | None = None
    authorization_servers: list[str] = []
    scopes_supported: list[str] | None = None
    bearer_methods_supported: list[str] | None = None
    dpop_bound_access_tokens_required: bool = False


class AuthServerMetadata(msgspec.Struct, frozen=True):
    """RFC 8414 section 2 (and the OpenID Connect discovery names it shares)."""

    issuer: str | None = None
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    response_types_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    revocation_endpoint: str | None = None
    client_id_metadata_document_supported: bool = False
    authorization_response_iss_parameter_supported: bool = False
    dpop_signing_alg_values_supported: list[str] | None = None


def web_url(url: object) -> bool:
    """An absolute ``http(s)`` URL with a host and a valid port, printable ASCII without
    spaces: the only kind the flow fetches, or hands to the person's browser (a hostile
    server's ``javascript:`` or ``file:`` endpoint must never reach the authorize hook).
    Raises nothing."""
    if not isinstance(url, str) or not url.isascii() or not url.isprintable() or " " in url:
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def canonical_resource(url: str) -> str:
    """The MCP server's canonical URI (RFC 8707, MCP "Canonical Server URI"): scheme and
    host lower case, no default port, no fragment, no query, no trailing slash on a
    path."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") if parts.path != "/" else ""
    return urlunsplit((parts.scheme.lower(), netloc(parts), path, "", ""))


def resource_matches(advertised: str, server_url: str) -> bool:
    """Whether a protected-resource ``resource`` may stand for the server at
    ``server_url`` (RFC 9728 section 3.3): the same origin, and a path that is the
    server's own or one of its parents (a server may protect a whole tree)."""
    if not web_url(advertised):
        return False
    want = canonical_resource(server_url)
    have = canonical_resource(advertised)
    if origin(have) != origin(want):
        return False
    have_path = urlsplit(have).path
    want_path = urlsplit(want).path
    return not have_path or want_path == have_path or want_path.startswith(have_path + "/")


def protected_resource_urls(server_url: str, from_challenge: str | None) -> list[str]:
    """Where to look for the protected-resource metadata, in the spec's order: the
    ``resource_metadata`` of the 401, then the path-based well-known URL, then the root."""
    found = [from_challenge] if from_challenge else []
    parts = urlsplit(server_url)
    base = origin(server_url)
    path = parts.path.rstrip("/")
    if path:
        found.append(f"{base}{_PRM}{path}")
    found.append(f"{base}{_PRM}")
    return list(dict.fromkeys(found))


def auth_server_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata is, in the spec's order (MCP 2025-11-25, "Authorization
    Server Metadata Discovery"): RFC 8414 and OpenID Connect, with the issuer's path
    inserted after the well-known prefix, then (OIDC) appended to it."""
    parts = urlsplit(issuer)
    base = origin(issuer)
    path = parts.path.rstrip("/")
    if path:
        return [f"{base}{_OAUTH}{path}", f"{base}{_OIDC}{path}", f"{base}{path}{_OIDC}"]
    return [f"{base}{_OAUTH}", f"{base}{_OIDC}"]


def legacy_endpoints(server_url: str) -> AuthServerMetadata:
    """MCP 2025-03-26's defaults for a server without metadata: the endpoints at the
    root of the server's origin."""
    base = origin(server_url)
    return AuthServerMetadata(
        issuer=base,
        authorization_endpoint=f"{base}/authorize",
        token_endpoint=f"{base}/token",
        registration_endpoint=f"{base}/register",
    )
