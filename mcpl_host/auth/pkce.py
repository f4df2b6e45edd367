"""PKCE (RFC 7636) with S256, the only method MCP allows, and the ``state`` value."""

from __future__ import annotations

import base64
import hashlib
import secrets

__all__ = ["challenge_of", "new_state", "new_verifier"]


def new_verifier() -> str:
    """A code verifier: 86 characters of the unreserved alphabet (43-128 allowed)."""
    return secrets.token_urlsafe(64)


def challenge_of(verifier: str) -> str:
    """BASE64URL(SHA256(verifier)) without padding (RFC 7636 section 4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_state() -> str:
    return secrets.token_urlsafe(24)
