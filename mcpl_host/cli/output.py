"""``--json``: exactly one JSON object on stdout, with every known secret masked.

A server's data is passed through whole (a consumer wants full descriptions and
schemas), but every string in it, keys included, is redacted: a server that echoes its
environment must not put a credential on stdout. Error messages were already escaped
and cut when the report was made.
"""

from __future__ import annotations

from typing import Any, TextIO

import msgspec

from ..protocol.redact import Redactor

__all__ = ["scrub", "write_json"]


def scrub(value: Any, redactor: Redactor) -> Any:
    """``value`` with every string in it (object keys included) redacted. Raises nothing."""
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
    encoded = msgspec.json.format(msgspec.json.encode(scrub(report, redactor)), indent=2)
    stream.write(encoded.decode() + "\n")
    stream.flush()
