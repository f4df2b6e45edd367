"""The event-stream decoder: the WHATWG interpretation, chunking-invariant, bounded."""

from __future__ import annotations

import itertools

import pytest
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


LINE_ENDS = (b"\r\n", b"\n", b"\r")
# A field's value: any text but a line end (and NUL, which voids an id).
VALUES = st.text(
    st.characters(blacklist_characters="\r\n\0", blacklist_categories=("Cs",)), max_size=6
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[SseEvent], int | None]:
    """A stream of events whose lines end in CRLF, LF or CR, each drawn per line; the
    events it must decode to, and its last retry."""
    lines: list[bytes] = []
    expected: list[SseEvent] = []
    last_id: str | None = None
    retry: int | None = None
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        event_id = draw(st.none() | VALUES)
        if event_id is not None:
            lines.append(b"id: " + event_id.encode())
            last_id = event_id
        if draw(st.booleans()):
            retry = draw(st.integers(min_value=0, max_value=99999))
            lines.append(b"retry: %d" % retry)
        data = draw(st.lists(VALUES, min_size=1, max_size=4))
        lines += [b"data: " + value.encode() for value in data]
        lines.append(b"")  # the blank line that dispatches
        expected.append(SseEvent("\n".join(data), id=last_id))
    stream = bytearray()
    for line in lines:
        end = draw(st.sampled_from(LINE_ENDS))
        if not line and end == b"\n" and stream.endswith(b"\r"):
            end = b"\r\n"  # a CR then an LF is one line end (CRLF), not two
        stream += line + end
    return bytes(stream), expected, retry


def cut(stream: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *sorted(cuts), len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(edges)]


@given(streams(), st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=20), st.booleans())
def test_any_line_ends_cut_anywhere_give_the_same_events(
    sample: tuple[bytes, list[SseEvent], int | None], cuts: list[int], cut_every_crlf: bool
) -> None:
    stream, expected, retry = sample
    cuts = [c % (len(stream) + 1) for c in cuts]
    if cut_every_crlf:  # the chunk boundary between a CR and its LF, every time
        cuts += [i + 1 for i in range(len(stream) - 1) if stream[i : i + 2] == b"\r\n"]
    events, decoder = decode(cut(stream, cuts))
    assert events == expected
    assert decoder.retry_ms == retry


def test_a_crlf_cut_between_two_chunks_is_one_line_end() -> None:
    # Between data lines: read as two line ends, the blank line would dispatch "a"
    # alone and "b" as a second event.
    events, _ = decode([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert events == [SseEvent(data="a\nb")]
    # An empty chunk between the CR and the LF changes nothing.
    events, _ = decode([b"data: a\r", b"", b"\ndata: b\r\n\r\n"])
    assert events == [SseEvent(data="a\nb")]
    # A CR at the end of a chunk and a CR at the start of the next: two line ends.
    events, _ = decode([b"data: a\r", b"\rdata: b\n\n"])
    assert events == [SseEvent(data="a"), SseEvent(data="b")]


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


CRLF_EVENT = b"data: a\r\ndata: b\r\n\r\n"


def test_a_crlf_cut_between_two_chunks_ends_one_line() -> None:
    for cut in range(len(CRLF_EVENT) + 1):
        events, _ = decode([CRLF_EVENT[:cut], CRLF_EVENT[cut:]])
        assert events == [SseEvent(data="a\nb")], cut


def test_an_empty_chunk_changes_nothing() -> None:
    # Between the CR and the LF of one line ending, too.
    for cut in range(len(CRLF_EVENT) + 1):
        events, _ = decode([CRLF_EVENT[:cut], b"", CRLF_EVENT[cut:]])
        assert events == [SseEvent(data="a\nb")], cut


def test_a_cr_inside_a_chunk_does_not_swallow_the_next_chunks_lf() -> None:
    events, _ = decode([b"data: a\rx", b"\n\n"])  # "x" is a line of its own
    assert events == [SseEvent(data="a")]


def test_nothing_said_yet() -> None:
    decoder = SseDecoder()
    assert (decoder.last_event_id, decoder.retry_ms, decoder.dropped) == (None, None, 0)


def test_the_bound_is_inclusive_for_lines_and_events() -> None:
    # Each line is exactly 8 bytes; the data counts 4 per line ("abc" and its LF).
    two = b"data:abc\ndata:abc\n\n"
    events, decoder = decode([two, two], max_event_bytes=8)
    assert events == [SseEvent(data="abc\nabc"), SseEvent(data="abc\nabc")]
    assert decoder.dropped == 0
    three = b"data:abc\ndata:abc\ndata:abc\n\n"  # 12 > 8
    events, decoder = decode([three, three, two], max_event_bytes=8)
    assert events == [SseEvent(data="abc\nabc")]
    assert decoder.dropped == 2


def test_an_oversized_line_of_any_field_drops_its_event() -> None:
    events, decoder = decode([b"id: 0123456789\ndata:ok\n\n", b"data:ok\n\n"], max_event_bytes=8)
    assert events == [SseEvent(data="ok")]
    assert decoder.last_event_id is None  # the oversized id was never read
    assert decoder.dropped == 1


def test_the_smallest_bound_is_one_byte() -> None:
    events, decoder = decode([b"data:\n\n"], max_event_bytes=1)  # a 5-byte line
    assert events == []
    assert decoder.dropped == 1
    with pytest.raises(ValueError, match=r"^max_event_bytes must be positive$"):
        SseDecoder(0)
