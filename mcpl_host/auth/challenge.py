"""Reading a server's ``WWW-Authenticate`` header (RFC 9110 section 11.6.1, RFC 6750
section 3, RFC 9728 section 5.1): the challenges it holds and their parameters.

A header may carry several challenges (``Bearer ..., DPoP ...``), each a scheme and
comma-separated ``name=value`` parameters whose values are tokens or quoted strings. The
values are a peer's text: callers cut and escape them before they reach a log or an
error (:func:`shown`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from ..protocol.redact import Redactor, log_value

__all__ = ["Challenge", "bearer_params", "parse_challenges", "shown", "wants_authorization"]

_TOKEN: Final = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_SCHEME: Final = re.compile(rf"\s*({_TOKEN})(?=\s|,|$)")
_PARAM: Final = re.compile(rf'\s*({_TOKEN})\s*=\s*(?:"((?:[^"\\]|\\.)*)"|({_TOKEN}))\s*')
_TOKEN68: Final = re.compile(r"\s*[A-Za-z0-9\-._~+/]+=*\s*(?=,|$)")
_ESCAPE: Final = re.compile(r"\\(.)")
# A header longer than this is not read further: a server decides its length.
MAX_HEADER: Final = 8192


@dataclass(frozen=True, slots=True)
class Challenge:
    """One challenge: its scheme (lower case) and parameters (names lower case; the
    first of a repeated name wins)."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)


def parse_challenges(header: str) -> list[Challenge]:
    """Every challenge of one ``WWW-Authenticate`` value, in order. What cannot be read
    ends the parse: the challenges read so far are returned, never an exception."""
    text = header
    if len(text) > MAX_HEADER:
        # Cut at a list separator: a cut inside a value would read a shorter value
        # (``error=insufficient_sc``) or a piece of one as a scheme of its own.
        text = text[: max(0, text.rfind(",", 0, MAX_HEADER + 1))]
    found: list[Challenge] = []
    at = 0
    while at < len(text):
        while at < len(text) and text[at] in " ,":
            at += 1
        scheme = _SCHEME.match(text, at)
        if scheme is None:
            break
        challenge = Challenge(scheme.group(1).lower())
        found.append(challenge)
        at = scheme.end()
        token68 = _TOKEN68.match(text, at)
        if token68 is not None and not _PARAM.match(text, at):
            at = token68.end()
            continue
        while at < len(text):
            param = _PARAM.match(text, at)
            if param is None:
                break
            name = param.group(1).lower()
            quoted, plain = param.group(2), param.group(3)
            value = _ESCAPE.sub(r"\1", quoted) if quoted is not None else plain
            challenge.params.setdefault(name, value)
            at = param.end()
            if at < len(text) and text[at] == ",":
                # The next item is this challenge's parameter, or the next challenge;
                # empty list elements (", ,") between them are skipped (RFC 9110 5.6.1).
                following = at + 1
                while following < len(text) and text[following] in " \t,":
                    following += 1
                if _PARAM.match(text, following) is None:
                    at += 1
                    break
                at = following
    return found


def bearer_params(headers: list[str]) -> dict[str, str]:
    """The parameters of the first Bearer (or DPoP) challenge among ``headers``."""
    for header in headers:
        for challenge in parse_challenges(header):
            if challenge.scheme in ("bearer", "dpop"):
                return challenge.params
    return {}


def wants_authorization(status: int, params: dict[str, str]) -> bool:
    """Whether a refusal is authorization's to answer: a 401, or a 403 asking for more
    scope (``insufficient_scope``, RFC 6750 section 3.1). Any other 403 is the request's
    answer."""
    return status == 401 or (status == 403 and params.get("error") == "insufficient_scope")


def shown(params: dict[str, str], redactor: Redactor | None = None) -> dict[str, str]:
    """Challenge parameters made safe for an error or a log: escaped and cut, and the
    host's secrets masked (a server may echo the token it refused)."""
    safe = redactor.log_value if redactor is not None else log_value
    return {safe(name, 64): safe(value, 256) for name, value in list(params.items())[:16]}
