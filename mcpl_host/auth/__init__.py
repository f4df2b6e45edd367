"""MCP authorization for HTTP servers: OAuth 2.1 with the MCP discovery rules
(docs/auth.md)."""

from __future__ import annotations

from .file_store import FileTokenStore, StoredEntry, default_auth_file, user_store
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
from .loopback import LoopbackRedirect
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
    "FileTokenStore",
    "Grant",
    "GrantContext",
    "JwtBearer",
    "LoopbackRedirect",
    "MemoryTokenStore",
    "OAuth",
    "StoredEntry",
    "TokenSet",
    "TokenStore",
    "default_auth_file",
    "user_store",
]
