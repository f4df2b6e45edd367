"""Who the host is to an authorization server, in the spec's order: a pre-registered
client, one kept for this issuer, a Client ID Metadata Document URL where the server
supports it, then RFC 7591 dynamic registration as a native application.

Registrations are kept by issuer. A kept one serves a redirect URI it names, or one that
differs only in the port of a loopback address: RFC 8252 section 7.3 has the
authorization server allow any port there, since a native client listens on whatever
port is free (``mcpl-host auth login`` does; a ``connect`` sends no redirect at all).
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlsplit

from .metadata import AuthServerMetadata
from .records import ClientInfo

__all__ = ["cimd_client", "loopback", "preregistered", "registration_metadata", "serves_redirect"]

_LOOPBACK: Final = ("127.0.0.1", "::1", "localhost")


def preregistered(
    client_id: str, client_secret: str | None, method: str | None, redirect_uri: str
) -> ClientInfo:
    """A configured client: ``client_secret_basic`` with a secret, else ``none``,
    unless the method is given."""
    return ClientInfo(
        client_id=client_id,
        client_secret=client_secret,
        token_endpoint_auth_method=method or ("client_secret_basic" if client_secret else "none"),
        redirect_uris=(redirect_uri,),
        source="preregistered",
    )


def cimd_client(url: str, redirect_uri: str) -> ClientInfo:
    """The Client ID Metadata Document's URL is the client id; a public client."""
    return ClientInfo(client_id=url, redirect_uris=(redirect_uri,), source="cimd")


def serves_redirect(client: ClientInfo, redirect_uri: str) -> bool:
    """Whether a kept registration may be used with ``redirect_uri``: it names it, or a
    loopback URI with the same host and path on another port (RFC 8252 section 7.3)."""
    if redirect_uri in client.redirect_uris:
        return True
    mine = loopback(redirect_uri)
    if mine is None:
        return False
    return any((found := loopback(uri)) and found[:2] == mine[:2] for uri in client.redirect_uris)


def loopback(uri: str) -> tuple[str, str, int | None] | None:
    """(host, path, port) of an ``http://`` loopback redirect URI, else None."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if parts.scheme != "http" or host not in _LOOPBACK or parts.query:
        return None
    return host, parts.path, port


def registration_metadata(
    meta: AuthServerMetadata, client_name: str, redirect_uri: str
) -> dict[str, Any]:
    """RFC 7591 client metadata for a native application on a loopback redirect: a
    public client (``none``) where the server allows it, a secret otherwise; the
    refresh grant where the server lists it (or lists no grants)."""
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
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": grants,
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native",
    }
