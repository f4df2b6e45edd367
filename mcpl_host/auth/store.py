"""Where the flow keeps client registrations (by issuer) and tokens (by issuer, client
and resource). :class:`TokenStore` is the interface an embedder may implement;
:class:`MemoryTokenStore` keeps them for the life of the process."""

from __future__ import annotations

from typing import Protocol

from .records import ClientInfo, TokenSet

__all__ = ["MemoryTokenStore", "TokenStore"]


class TokenStore(Protocol):
    """Storage for the flow. Every method is async (a store may do I/O); a method
    raises only when the store itself is broken."""

    async def get_client(self, issuer: str) -> ClientInfo | None: ...

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        """Keep ``client`` for ``issuer``; None forgets it (and its tokens stay keyed by
        their own client id, so they are never used with another client)."""

    async def get_tokens(self, issuer: str, client_id: str, resource: str) -> TokenSet | None: ...

    async def set_tokens(
        self, issuer: str, client_id: str, resource: str, tokens: TokenSet | None
    ) -> None:
        """Keep ``tokens``; None forgets them."""


class MemoryTokenStore:
    """Registrations and tokens for the life of the process (the default)."""

    def __init__(self) -> None:
        self._clients: dict[str, ClientInfo] = {}
        self._tokens: dict[tuple[str, str, str], TokenSet] = {}

    async def get_client(self, issuer: str) -> ClientInfo | None:
        return self._clients.get(issuer)

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        if client is None:
            self._clients.pop(issuer, None)
        else:
            self._clients[issuer] = client

    async def get_tokens(self, issuer: str, client_id: str, resource: str) -> TokenSet | None:
        return self._tokens.get((issuer, client_id, resource))

    async def set_tokens(
        self, issuer: str, client_id: str, resource: str, tokens: TokenSet | None
    ) -> None:
        if tokens is None:
            self._tokens.pop((issuer, client_id, resource), None)
        else:
            self._tokens[(issuer, client_id, resource)] = tokens
