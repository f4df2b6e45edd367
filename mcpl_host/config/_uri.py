"""A URI in the one spelling a filter judges: RFC 3986's syntax-based normalisation
(section 6.2.2). A caller (often a model) may write an excluded URI another way —
``FILE:///etc/passwd``, ``file:///pub/../etc/passwd``, ``file:///%65tc/passwd`` — and a
glob on the text would let it through."""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit, urlunsplit

__all__ = ["normalised_uri"]

_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE: Final = re.compile(r"%([0-9A-Fa-f]{2})")
# A path separator in another spelling: a server that decodes it would see a path the
# filter never saw.
_HIDDEN_SEPARATOR: Final = re.compile(r"%(2f|5c)|\\", re.IGNORECASE)


def normalised_uri(uri: str) -> str | None:
    """``uri`` with its scheme and host lower-cased, unreserved characters decoded,
    other escapes upper-cased and dot segments removed; None when it cannot be judged
    (not a URI, or a path separator written as an escape or a backslash)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if not parts.scheme or _HIDDEN_SEPARATOR.search(uri):
        return None
    userinfo, at, host = parts.netloc.rpartition("@")
    netloc = f"{_decoded(userinfo)}{at}{_decoded(host).lower()}"
    path = _without_dot_segments(_decoded(parts.path))
    return urlunsplit(
        (parts.scheme.lower(), netloc, path, _decoded(parts.query), _decoded(parts.fragment))
    )


def _decoded(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        char = chr(int(match[1], 16))
        return char if char in _UNRESERVED else match[0].upper()

    return _ESCAPE.sub(one, text)


def _without_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    out: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(out) > 1 or (out and out[0]):  # never the root of an absolute path
                out.pop()
        elif segment != ".":
            out.append(segment)
    if path.endswith(("/.", "/..")):
        out.append("")
    return "/".join(out)
