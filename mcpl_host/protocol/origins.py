"""The origin of a URL (RFC 6454): one rule for every check that two URLs are the same
server's (an authorization server's metadata, a legacy SSE server's endpoint)."""

from __future__ import annotations

from typing import Final
from urllib.parse import SplitResult, urlsplit

__all__ = ["netloc", "origin"]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def netloc(parts: SplitResult) -> str:
    """Host and port, lower case, without the scheme's default port (RFC 3986 section
    6.2.3: ``https://h:443`` and ``https://h`` are one origin)."""
    netloc = parts.netloc.lower()
    try:
        port = parts.port
    except ValueError:
        return netloc
    if port is not None and port == _DEFAULT_PORTS.get(parts.scheme.lower()):
        return netloc.rpartition(":")[0]
    return netloc


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, scheme and host lower case, no default port.
    Raises ``ValueError`` for text ``urlsplit`` refuses."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{netloc(parts)}"
