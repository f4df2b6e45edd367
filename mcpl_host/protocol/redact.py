"""Making a peer's text and a server's secrets safe to log (DESIGN 3.11).

:func:`log_value` escapes control, format and separator characters as ``\\uXXXX`` (so a
peer's text cannot end a log line or forge a field) and cuts the result at 256 UTF-16
units without splitting a surrogate pair or an escape, marking the cut.

:class:`Redactor` is built once per server from its configuration and masks every
credential it found there, in any text: env values, secret-looking arguments, auth
headers, URL userinfo and token query parameters. :meth:`Redactor.fields` is how the
library puts a peer's values in its own log events: every such field goes through it
where the event is made.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Final
from urllib.parse import parse_qsl, urlsplit

import msgspec

__all__ = [
    "CUT_MARK",
    "LOG_VALUE_LIMIT",
    "REDACTION_MARK",
    "Redactor",
    "log_value",
    "utf16_len",
    "value_kind",
]

LOG_VALUE_LIMIT: Final = 256
CUT_MARK: Final = "…[cut]"
# Made of characters no token alphabet uses, so a mark next to text can never complete a
# secret, and masking is done in one pass.
REDACTION_MARK: Final = "***"

# Shorter values are not credentials we can mask without wrecking the line (an env value
# of "1" would turn every digit 1 into the mark).
_MIN_SECRET_LEN: Final = 4
# An env value under a name that does not look secret is masked only from this length on:
# values like "true", "info" or "8080" are settings, not credentials.
_MIN_PLAIN_ENV_LEN: Final = 8
# Secrets learnt while connected (OAuth tokens, codes): the newest this many are kept.
_MAX_LEARNT: Final = 64

_SECRET_NAME: Final = re.compile(
    r"token|secret|passw(?:or)?d|pass(?:phrase)?\b|^pass|pwd|api[-_]?key|apikey|access[-_]?key"
    r"|private[-_]?key|client[-_]?secret|auth|credential|bearer|cookie|session|signature|^key$"
    r"|[-_]key$|^sig$",
    re.IGNORECASE,
)
_SECRET_QUERY: Final = re.compile(
    r"token|secret|passw(?:or)?d|^pass$|pwd|api[-_]?key|apikey|^key$|^code$|auth|sig|signature"
    r"|credential|session",
    re.IGNORECASE,
)
# Well-known credential shapes, masked wherever they appear in the configuration.
_TOKEN_SHAPES: Final = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16})\b"
)
_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_AUTH_SCHEME: Final = re.compile(r"^\s*(?:bearer|basic|token|digest)\s+(\S+)\s*$", re.IGNORECASE)


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit log viewers and JavaScript count in."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _escape_char(ch: str) -> str | None:
    """The escape for a character that must not reach a log raw, or None to keep it."""
    if ch == " ":
        return None
    category = unicodedata.category(ch)
    if category[0] == "C" or category in ("Zl", "Zp", "Zs"):
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\u{code:04x}"
    return None


def log_value(text: str, limit: int = LOG_VALUE_LIMIT) -> str:
    """``text`` escaped and cut to at most ``limit`` UTF-16 units (mark included)."""
    if len(text) <= limit and text.isascii() and text.isprintable():
        return text  # the common case: nothing to escape, nothing to cut
    pieces: list[str] = []
    units: list[int] = []
    total = 0
    for ch in text:
        escaped = _escape_char(ch)
        piece = ch if escaped is None else escaped
        size = 2 if escaped is None and ord(ch) > 0xFFFF else len(piece)
        pieces.append(piece)
        units.append(size)
        total += size
        if total > limit + len(CUT_MARK):
            break  # already certain to cut; the rest is never looked at
    if total <= limit:
        return "".join(pieces)
    budget = limit - len(CUT_MARK)
    kept = 0
    out: list[str] = []
    for piece, size in zip(pieces, units, strict=True):
        if kept + size > budget:
            break
        out.append(piece)
        kept += size
    return "".join(out) + CUT_MARK


class Redactor:
    """Masks one server's credentials in any text. Build once per connection.

    The secrets are found once, at construction, from the server's configuration;
    :meth:`redact` then replaces every occurrence of each one, and of its JSON-escaped
    form, with :data:`REDACTION_MARK`. Overlapping secrets are masked as one span, so
    no part of either shows.
    """

    __slots__ = ("_configured", "_learnt", "_pattern", "secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        found = {s for s in secrets if len(s) >= _MIN_SECRET_LEN}
        # A server may echo a secret inside JSON text, where it appears escaped.
        found |= {
            escaped
            for s in list(found)
            if len(escaped := msgspec.json.encode(s).decode()[1:-1]) >= _MIN_SECRET_LEN
        }
        self.secrets: frozenset[str] = frozenset(found)
        self._configured = self.secrets
        self._learnt: tuple[str, ...] = ()
        self._pattern = (
            re.compile("|".join(re.escape(s) for s in sorted(self.secrets, key=len, reverse=True)))
            if self.secrets
            else None
        )

    @classmethod
    def from_config(
        cls,
        *,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        headers: Mapping[str, str] | None = None,
        urls: Sequence[str] = (),
    ) -> Redactor:
        """Collect the credentials a server's configuration holds.

        - ``env``: every value under a secret-looking name, and every other value of 8
          characters or more (configured env is where stdio servers get their keys);
        - ``args``: the value of ``--token=X`` / ``--api-key X`` style flags and of
          ``NAME=VALUE`` arguments with a secret-looking name, well-known token shapes,
          and the credentials of any URL among them;
        - ``headers``: the value of Authorization-like headers, and the token after its
          scheme (``Bearer X``);
        - ``urls``: userinfo and secret-looking query parameters.
        """
        secrets: list[str] = []
        for name, value in (env or {}).items():
            if _SECRET_NAME.search(name) or len(value) >= _MIN_PLAIN_ENV_LEN:
                secrets.append(value)
        secrets += _secrets_in_args(args)
        for name, value in (headers or {}).items():
            if _SECRET_NAME.search(name) or name.lower() in (
                "authorization",
                "proxy-authorization",
            ):
                secrets.append(value)
                if scheme := _AUTH_SCHEME.match(value):
                    secrets.append(scheme.group(1))
        for url in urls:
            secrets += _secrets_in_url(url)
        return cls(secrets)

    def learn(self, secret: str) -> None:
        """Mask ``secret`` from now on too: a credential obtained while connected (an
        OAuth token, an authorization code, a DPoP proof) is learnt the moment it is
        had, before any log line or trace could show it."""
        if len(secret) < _MIN_SECRET_LEN:
            return
        if secret in self._learnt:
            # Learnt again where it is used: still in use, so it ages from now (what is
            # masked is the same; only the order of dropping changes).
            self._learnt = (*(s for s in self._learnt if s != secret), secret)
            return
        if secret in self.secrets:
            return
        # Bounded: a server that issues token after token cannot grow the pattern (and
        # the cost of every redaction) without end; the oldest learnt secret goes first,
        # the configured ones never.
        self._learnt = (*self._learnt, secret)[-_MAX_LEARNT:]
        learnt = Redactor([*self._configured, *self._learnt])
        self.secrets = learnt.secrets
        self._pattern = learnt._pattern

    def redact(self, text: str) -> str:
        """``text`` with every known secret masked."""
        pattern = self._pattern
        if pattern is None:
            return text
        spans = _secret_spans(text, self.secrets) if pattern.search(text) else []
        if not spans:
            return text
        out: list[str] = []
        last = 0
        for start, end in spans:
            out.append(text[last:start])
            out.append(REDACTION_MARK)
            last = end
        out.append(text[last:])
        return "".join(out)

    def log_value(self, text: str, limit: int = LOG_VALUE_LIMIT) -> str:
        """Redact, escape and cut a peer's text for a log line or an error message.

        Masking runs again on the escaped text: an escape such as ``\\u000a`` next to
        the peer's own characters could otherwise spell a secret.
        """
        masked = self.redact(text)
        shown = log_value(masked, limit)
        # Nothing escaped or cut (the common case): nothing new that could spell a secret.
        return shown if shown is masked else self.redact(shown)

    def log_json(self, value: object, limit: int = LOG_VALUE_LIMIT) -> str:
        """A JSON value (an error member, say) as compact JSON text, made safe to log."""
        try:
            if isinstance(value, msgspec.Raw):
                value = msgspec.json.decode(value)
            text = msgspec.json.encode(value).decode()
        except RecursionError:  # a peer's value nested deeper than the stack allows
            text = "(JSON nested too deeply to show)"
        except (msgspec.DecodeError, msgspec.EncodeError, TypeError):
            try:
                text = repr(value)
            except RecursionError:
                text = "(a value nested too deeply to show)"
        return self.log_value(text, limit)

    def fields(self, **values: object) -> dict[str, object]:
        """Fields of a log event that carry a peer's values (a method, a request id, a
        name), each made safe: a string through :meth:`log_value`, a number, a boolean
        or None as it is, a list or tuple item by item, anything else as its JSON text
        through :meth:`log_json`.

        Called where the event is made, so the raw value never enters the event dict:
        whatever processors an application gives structlog, none can show it.
        """
        return {name: self._field(value) for name, value in values.items()}

    def _field(self, value: object) -> object:
        if type(value) is str:  # the common case first: a method name
            return self.log_value(value)
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):  # a str subclass: its plain text
            return self.log_value(str(value))
        if isinstance(value, (list, tuple)):
            return [self._field(item) for item in value]
        return self.log_json(value)


def _secret_spans(text: str, secrets: Iterable[str]) -> list[tuple[int, int]]:
    """Every occurrence of every secret, overlapping ones merged, in order."""
    spans: list[tuple[int, int]] = []
    for secret in secrets:
        start = text.find(secret)
        while start >= 0:
            spans.append((start, start + len(secret)))
            start = text.find(secret, start + 1)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _secrets_in_args(args: Sequence[str]) -> list[str]:
    secrets: list[str] = []
    for i, arg in enumerate(args):
        secrets += _TOKEN_SHAPES.findall(arg)
        urls = _URL.findall(arg)
        for url in urls:
            secrets += _secrets_in_url(url)
        name, eq, value = arg.partition("=")
        if urls and not name.startswith("-"):
            continue  # a bare URL: its query's "=" is not a NAME=VALUE argument
        if eq and _SECRET_NAME.search(name.lstrip("-")):
            secrets.append(value)  # --token=X, API_KEY=X
        elif (
            not eq
            and arg.startswith("-")
            and _SECRET_NAME.search(arg.lstrip("-"))
            and i + 1 < len(args)
            and not args[i + 1].startswith("-")
        ):
            secrets.append(args[i + 1])  # --api-key X
    return secrets


def _secrets_in_url(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    secrets: list[str] = []
    if parts.password:
        secrets.append(parts.password)
    if parts.username and parts.password is None:
        secrets.append(parts.username)  # https://TOKEN@host/ puts the token here
    for key, value in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET_QUERY.search(key):
            secrets.append(value)
    return secrets


def value_kind(value: object) -> str:
    """What kind of JSON value ``value`` is, in words ("an object", "null"), for messages
    that name a peer's wrong value without showing it. Raises nothing."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
