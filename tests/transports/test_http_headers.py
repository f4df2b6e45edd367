"""Header values a Streamable HTTP server sets, checked before the host sends them back."""

from __future__ import annotations

import pytest

from mcpl_host.transports.http_headers import (
    MAX_ECHOED_BYTES,
    Refused,
    echoable_event_id,
    session_id,
)


def test_a_session_id_of_visible_ascii_is_taken() -> None:
    token = bytes(range(0x21, 0x7F))  # every visible ASCII character
    assert session_id([(b"Content-Type", b"x"), (b"MCP-Session-ID", token)]) == token.decode()
    assert session_id([(b"mcp-session-id", b"a" * MAX_ECHOED_BYTES)]) == "a" * MAX_ECHOED_BYTES
    assert session_id([(b"Content-Type", b"application/json")]) is None


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ([b"s\xc3\xa9ance"], "not all visible ASCII"),
        ([b"a b"], "not all visible ASCII"),
        ([b"a\tb"], "not all visible ASCII"),
        ([b"a\x7fb"], "not all visible ASCII"),
        ([b""], "empty"),
        ([b"a" * (MAX_ECHOED_BYTES + 1)], f"over {MAX_ECHOED_BYTES}"),
        ([b"one", b"two"], "2 Mcp-Session-Id headers"),
    ],
)
def test_an_unusable_session_id_is_refused_saying_why_without_its_value(
    raw: list[bytes], why: str
) -> None:
    found = session_id([(b"Mcp-Session-Id", value) for value in raw])
    assert isinstance(found, Refused)
    assert why in found.why
    assert "ance" not in found.why  # sizes only: the value is the peer's text


@pytest.mark.parametrize(
    ("event_id", "echoable"),
    [
        ("42", True),
        ("stream-1 event 7", True),  # spaces inside are header text
        (" 42", False),  # HTTP strips the ends: the server would see another id
        ("42 ", False),
        ("", False),
        ("\u00e9", False),
        ("a\x01b", False),
        ("a\x7fb", False),
        ("a" * MAX_ECHOED_BYTES, True),
        ("a" * (MAX_ECHOED_BYTES + 1), False),
    ],
)
def test_which_event_ids_can_go_back_in_last_event_id(event_id: str, echoable: bool) -> None:
    assert echoable_event_id(event_id) is echoable
