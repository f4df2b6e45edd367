"""Checking captured log events for a peer's raw text (DESIGN 3.11)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from mcpl_host.protocol.redact import LOG_VALUE_LIMIT, log_value, utf16_len


def strings(value: Any) -> Iterator[str]:
    """Every string in an event, keys included, however deeply nested."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from strings(item)


def assert_safe(events: list[dict[str, Any]], *secrets: str) -> None:
    """No string anywhere in any event holds a character the rule escapes, runs past
    the cut, or shows a secret."""
    for event in events:
        for text in strings(event):
            assert all(log_value(ch) == ch for ch in text), event
            assert utf16_len(text) <= LOG_VALUE_LIMIT, event
            for secret in secrets:
                assert secret not in text, event
