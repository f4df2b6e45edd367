"""The event-stream decoder: the WHATWG interpretation, chunking-invariant, bounded."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from mcpl_host.protocol.sse import SseDecoder, SseEvent

STREAM = (
    b"retry: 500\r\n"
    b"id: 1\r\n"
    b"data: \r\n"
    b"\r\n"  # a priming event: an id, empty data
    b": a comment\n"
    b'data: {"a":1}\n'
    b'data:{"b":2}\n'  # no space after the colon
    b"id: 7\n"
    b"\n"
    b"id: a\0b\n"  # an id with NUL is ignored
    b"event: other\n"
    b"data: x\r"
    b"\r"
    b"id\n"  # a bare field name: id becomes empty
    b"data\n"
    b"\n"
    b"retry: 12a\n"  # not digits: ignored
    b"data: no dispatch without a blank line"
)

EXPECTED = [
    SseEvent(data="", id="1"),
    SseEvent(data='{"a":1}\n{"b":2}', id="7"),
    SseEvent(data="x", event="other", id="7"),
    SseEvent(data="", id=""),
]


def decode(chunks: list[bytes], **kwargs: int) -> tuple[list[SseEvent], SseDecoder]:
    decoder = SseDecoder(**kwargs)
    events: list[SseEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events, decoder


def test_the_fields_and_line_endings() -> None:
    events, decoder = decode([STREAM])
    assert events == EXPECTED
    assert decoder.last_event_id == ""
    assert decoder.retry_ms == 500


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=30))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    edges = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(edges)]
    events, decoder = decode(chunks)
    assert events == EXPECTED
    assert decoder.retry_ms == 500


def test_byte_by_byte() -> None:
    events, _ = decode([STREAM[i : i + 1] for i in range(len(STREAM))])
    assert events == EXPECTED


def test_an_oversized_event_is_dropped_and_counted_and_the_next_one_kept() -> None:
    big = b"data: " + b"x" * 100 + b"\n\n"
    events, decoder = decode([big, b"data: ok\n\n"], max_event_bytes=50)
    assert events == [SseEvent(data="ok")]
    assert decoder.dropped == 1
    many_lines = b"data: 0123456789\n" * 10 + b"\n"
    events, decoder = decode([many_lines, b"data: ok\n\n"], max_event_bytes=50)
    assert events == [SseEvent(data="ok")]
    assert decoder.dropped == 1


def test_invalid_utf8_is_replaced_not_raised() -> None:
    events, _ = decode([b"data: \xff\xfe\n\n"])
    assert events == [SseEvent(data="\ufffd\ufffd")]
