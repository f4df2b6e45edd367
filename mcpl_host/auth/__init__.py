"""MCP authorization for HTTP servers: OAuth 2.1 with the MCP discovery rules
(docs/auth.md)."""

from __future__ import annotations

from .records import ClientInfo, TokenSet
from .store import MemoryTokenStore, TokenStore

__all__ = ["ClientInfo", "MemoryTokenStore", "TokenSet", "TokenStore"]
