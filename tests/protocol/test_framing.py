"""DESIGN 3.1: one JSON value per line, a bounded buffer, oversized lines dropped."""

from __future__ import annotations

import pytest

from mcpl_host.protocol.framing import DEFAULT_MAX_MESSAGE_BYTES, LineDecoder, OversizedLine
from mcpl_host.protocol.messages import OutNotification, OutRequest, encode


def test_default_bound_is_16_mib() -> None:
    assert DEFAULT_MAX_MESSAGE_BYTES == 16 * 1024 * 1024


def test_splits_lines_and_keeps_a_partial_one() -> None:
    d = LineDecoder()
    assert d.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert d.buffered == 4
    assert d.feed(b":2}\n") == [b'{"b":2}']
    assert d.buffered == 0


def test_crlf_and_empty_lines() -> None:
    d = LineDecoder()
    assert d.feed(b"one\r\n\n\r\ntwo\n") == [b"one", b"two"]


def test_last_line_without_newline_counts_at_close() -> None:
    d = LineDecoder()
    assert d.feed(b"{}\n{") == [b"{}"]
    assert d.close() == [b"{"]
    assert d.close() == []


def test_byte_by_byte_gives_the_same_lines() -> None:
    stream = b'{"x":1}\r\n\n[1,2]\nnot json\n'
    d = LineDecoder()
    out: list[bytes | OversizedLine] = []
    for i in range(len(stream)):
        out += d.feed(stream[i : i + 1])
    assert out == LineDecoder().feed(stream)


def test_oversized_line_is_dropped_and_reading_goes_on() -> None:
    d = LineDecoder(max_message_bytes=10)
    out = d.feed(b"0123456789\n" + b"x" * 25 + b"\n" + b"ok\n")
    assert out == [b"0123456789", OversizedLine(25), b"ok"]


def test_oversized_line_is_never_held_whole() -> None:
    d = LineDecoder(max_message_bytes=100)
    chunk = b"y" * 64
    for _ in range(1000):  # 64 000 bytes of one line
        assert d.feed(chunk) == []
        assert d.buffered <= 100 + len(chunk)
    assert d.buffered == 0  # past the bound nothing is kept, only counted
    assert d.feed(b"yy\n{}\n") == [OversizedLine(64_002), b"{}"]


def test_line_exactly_at_the_bound_passes_and_one_more_byte_does_not() -> None:
    d = LineDecoder(max_message_bytes=4)
    assert d.feed(b"abcd\nabcde\n") == [b"abcd", OversizedLine(5)]
    # a CR counts toward the bound whatever the chunking
    assert d.feed(b"abcd\r\n") == [OversizedLine(5)]
    d2 = LineDecoder(max_message_bytes=4)
    assert d2.feed(b"abcd\r") == []
    assert d2.feed(b"\n") == [OversizedLine(5)]


def test_oversized_at_eof_is_reported() -> None:
    d = LineDecoder(max_message_bytes=3)
    assert d.feed(b"abcdef") == []
    assert d.close() == [OversizedLine(6)]


def test_rejects_nonpositive_bound() -> None:
    with pytest.raises(ValueError, match=r"^max_message_bytes must be positive$"):
        LineDecoder(0)


def test_close_leaves_the_decoder_ready_for_a_new_stream() -> None:
    d = LineDecoder(max_message_bytes=4)
    assert d.feed(b"ab") == []
    assert d.close() == [b"ab"]
    assert d.feed(b"\ncd\n") == [b"cd"]  # the newline at 0 is not skipped
    assert d.feed(b"toolong") == []
    assert d.close() == [OversizedLine(7)]
    assert d.feed(b"\nef\n") == [b"ef"]  # no longer dropping
    assert d.close() == []


def test_encoder_writes_one_message_per_line() -> None:
    line = encode(OutRequest(id=3, method="tools/call", params={"text": "a\nb\u2028c"}))
    assert (
        line
        == b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"text":"a\\nb\xe2\x80\xa8c"}}\n'
    )
    assert line.count(b"\n") == 1
    assert encode(OutNotification(method="notifications/initialized")) == (
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    )
