"""The OAuth the command gives an HTTP server, and the token store behind it.

Every HTTP server gets an :class:`~mcpl_host.auth.OAuth` over the user's token file
unless it authorizes some other way (a ``--bearer`` or ``Authorization`` header, a
config ``auth`` of ``bearer`` or ``none``). ``connect`` and ``call`` use it without a
person (stored or refreshable tokens only); ``auth login`` runs it with a browser.

A login listens for its redirect on a loopback port chosen then (the port of an
earlier login's registration where it can, so the registration is used again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..auth import (
    DEFAULT_REDIRECT_URI,
    ClientInfo,
    FileTokenStore,
    OAuth,
    StoredEntry,
    TokenSet,
    TokenStore,
)
from ..auth.clients import loopback
from ..auth.grants import Authorize
from ..auth.metadata import resource_matches
from ..config import AuthSpec
from ..protocol.errors import ConfigurationError
from ..transports.http_target import has_authorization

__all__ = [
    "CALLBACK_PATH",
    "Recording",
    "entries_for",
    "oauth_for",
    "registered_port",
    "uses_oauth",
]

CALLBACK_PATH: Final = "/callback"


def uses_oauth(spec: AuthSpec | None, headers: Mapping[str, str]) -> bool:
    """Whether an HTTP server authorizes with OAuth: its config says ``oauth`` or says
    nothing, and no ``Authorization`` header is given. Raises nothing."""
    if spec is not None and spec.kind != "oauth":
        return False
    return not has_authorization(headers)


def oauth_for(
    spec: AuthSpec | None,
    store: TokenStore,
    *,
    redirect_uri: str = DEFAULT_REDIRECT_URI,
    authorize: Authorize | None = None,
) -> OAuth:
    """The OAuth for a server configured with ``spec`` (None: the defaults).

    Raises ConfigurationError as :class:`~mcpl_host.auth.OAuth` does (a config file's
    values were checked when it was read).
    """
    options = spec.oauth_options() if spec is not None else {}
    return OAuth(store=store, redirect_uri=redirect_uri, authorize=authorize, **options)


class Recording:
    """A :class:`~mcpl_host.auth.TokenStore` that notes which (issuer, client, resource)
    a login ended with, and whether its tokens were found, refreshed or obtained.
    ``ignore_stored`` hides stored tokens (``auth login --force``): a new grant runs,
    and the old tokens are replaced only once it succeeds."""

    def __init__(self, store: TokenStore, *, ignore_stored: bool = False) -> None:
        self.store = store
        self.ignore_stored = ignore_stored
        self.key: tuple[str, str, str] | None = None
        self.found = False  # stored tokens were read
        self.stored = False  # tokens were written (a grant or a refresh)

    async def get_client(self, issuer: str) -> ClientInfo | None:
        return await self.store.get_client(issuer)

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        await self.store.set_client(issuer, client)

    async def get_tokens(self, issuer: str, client_id: str, resource: str) -> TokenSet | None:
        if self.ignore_stored:
            return None
        found = await self.store.get_tokens(issuer, client_id, resource)
        if found is not None:
            self.key, self.found = (issuer, client_id, resource), True
        return found

    async def set_tokens(
        self, issuer: str, client_id: str, resource: str, tokens: TokenSet | None
    ) -> None:
        await self.store.set_tokens(issuer, client_id, resource, tokens)
        if tokens is not None:
            self.key, self.stored = (issuer, client_id, resource), True

    @property
    def outcome(self) -> str:
        """``authorized`` (a grant ran), ``refreshed`` or ``already-authorized``."""
        if not self.stored:
            return "already-authorized"
        return "refreshed" if self.found else "authorized"


def entries_for(store: FileTokenStore, url: str | None) -> list[StoredEntry]:
    """The stored entries for the server at ``url`` (its resource, or one protecting a
    tree it is in), every entry for None.

    Raises ConfigurationError for a file written by a newer mcpl_host.
    """
    entries = store.entries()
    if url is None:
        return entries
    return [entry for entry in entries if resource_matches(entry.resource, url)]


async def registered_port(store: FileTokenStore, url: str) -> int | None:
    """The loopback port of the redirect URI registered with the authorization server of
    the server at ``url`` by an earlier login, if any: listening there again lets the
    login reuse that registration instead of registering anew (most servers compare
    redirect URIs exactly). Raises nothing."""
    try:
        issuers = dict.fromkeys(entry.issuer for entry in entries_for(store, url))
        for issuer in issuers:
            client = await store.get_client(issuer)
            for uri in client.redirect_uris if client is not None else ():
                found = loopback(uri)
                if found is not None and found[0] == "127.0.0.1" and found[1] == CALLBACK_PATH:
                    return found[2]
    except (ConfigurationError, OSError):
        return None  # the login says what is wrong with the file, if anything
    return None
