"""``--json``: exactly one JSON object on stdout, with every known secret masked.

A server's data is passed through whole (a consumer wants full descriptions and
schemas), but every string in it, keys included, is redacted: a server that echoes its
environment must not put a credential on stdout. Error messages were already escaped
and cut when the report was made.

The report is written piece by piece, never encoded whole: the lists and the result
stay raw JSON (:mod:`.jsonvalue`) and each item is written on its own. An item whose
bytes cannot hold a secret (none of the secrets' texts, in any form, and no ``\\u`` or
``\\/`` escape that could spell one) is re-indented as it is, never decoded; any other
is decoded, redacted and encoded again. So a listing costs about its own size here,
not the size of its Python objects (docs/client.md).
"""

from __future__ import annotations

import re
from typing import Any, Final, TextIO

import msgspec
from msgspec import Raw

from ..protocol.redact import Redactor
from .jsonvalue import plain

__all__ = ["scrub", "write_json"]

_INDENT: Final = "  "
_ENCODER: Final = msgspec.json.Encoder()
# Escapes that can spell a character some other way than msgspec writes it: an item
# with one is redacted the slow way, decoded.
_ESCAPES: Final = (rb"\\u", rb"\\/")


def scrub(value: Any, redactor: Redactor) -> Any:
    """``value`` with every string in it (object keys included) redacted, raw JSON
    decoded first. Raises nothing."""
    value = plain(value)
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, list):
        return [scrub(item, redactor) for item in value]
    if isinstance(value, dict):
        return {scrub(key, redactor): scrub(item, redactor) for key, item in value.items()}
    return value


def write_json(report: dict[str, Any], redactor: Redactor, stream: TextIO) -> None:
    """Write ``report`` as one JSON object (indented, for people reading it too) and a
    newline. Raises ``OSError`` when ``stream`` cannot be written."""
    _Writer(redactor, stream).value(report, 0)
    stream.write("\n")
    stream.flush()


class _Writer:
    def __init__(self, redactor: Redactor, stream: TextIO) -> None:
        self.redactor = redactor
        self.stream = stream
        # Bytes that may hold a secret: the secrets in every form the redactor knows
        # (as written and JSON-escaped), and the escapes that can hide one.
        secrets = sorted(redactor.secrets, key=len, reverse=True)
        self._risky = (
            re.compile(b"|".join([*(re.escape(s.encode()) for s in secrets), *_ESCAPES]))
            if secrets
            else None
        )

    def value(self, value: Any, depth: int) -> None:
        if isinstance(value, dict) and value:
            self._container("{", "}", list(value.items()), depth)
        elif isinstance(value, list) and value:
            self._container("[", "]", [(None, item) for item in value], depth)
        elif isinstance(value, Raw):
            self.stream.write(self._raw(value, depth))
        else:
            self.stream.write(self._formatted(scrub(value, self.redactor), depth))

    def _container(
        self, open_: str, close: str, entries: list[tuple[Any, Any]], depth: int
    ) -> None:
        inner = _INDENT * (depth + 1)
        self.stream.write(open_)
        for index, (key, item) in enumerate(entries):
            self.stream.write(("\n" if index == 0 else ",\n") + inner)
            if key is not None:
                name = _ENCODER.encode(self.redactor.redact(str(key))).decode()
                self.stream.write(name + ": ")
            self.value(item, depth + 1)
        self.stream.write("\n" + _INDENT * depth + close)

    def _raw(self, raw: Raw, depth: int) -> str:
        if self._risky is None or self._risky.search(raw) is None:
            try:
                return _reindent(msgspec.json.format(raw, indent=len(_INDENT)).decode(), depth)
            except UnicodeDecodeError:
                pass  # a string that is not UTF-8: decoded with replacement below
        return self._formatted(scrub(raw, self.redactor), depth)

    def _formatted(self, value: Any, depth: int) -> str:
        return _reindent(
            msgspec.json.format(_ENCODER.encode(value), indent=len(_INDENT)).decode(), depth
        )


def _reindent(text: str, depth: int) -> str:
    # Formatted JSON has a newline only between tokens (never inside a string, where it
    # is escaped): each line moves right by the depth it is written at.
    return text.replace("\n", "\n" + _INDENT * depth) if depth else text
