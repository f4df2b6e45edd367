"""MCP authorization for HTTP servers: OAuth 2.1 with the MCP discovery rules
(docs/auth.md)."""

from __future__ import annotations

from .file_store import FileTokenStore, StoredEntry, default_auth_file
from .loopback import LoopbackRedirect
from .records import ClientInfo, TokenSet
from .store import MemoryTokenStore, TokenStore

__all__ = [
    "ClientInfo",
    "FileTokenStore",
    "LoopbackRedirect",
    "MemoryTokenStore",
    "StoredEntry",
    "TokenSet",
    "TokenStore",
    "default_auth_file",
]
