"""MCP authorization for HTTP servers: OAuth 2.1 with the MCP discovery rules
(docs/auth.md)."""

from __future__ import annotations

from .flow import DEFAULT_REDIRECT_URI, AuthSession, OAuth
from .grants import (
    AuthorizationCode,
    Authorize,
    ClientCredentials,
    EnterpriseManaged,
    Grant,
    GrantContext,
    JwtBearer,
)
from .records import ClientInfo, TokenSet
from .store import MemoryTokenStore, TokenStore

__all__ = [
    "DEFAULT_REDIRECT_URI",
    "AuthSession",
    "AuthorizationCode",
    "Authorize",
    "ClientCredentials",
    "ClientInfo",
    "EnterpriseManaged",
    "Grant",
    "GrantContext",
    "JwtBearer",
    "MemoryTokenStore",
    "OAuth",
    "TokenSet",
    "TokenStore",
]
