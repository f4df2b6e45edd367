"""The event-stream decoder's bounds against a hostile stream: what it holds, when it
says an event was dropped, and fields it must not choke on (issue 17)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcpl_host.protocol.sse import SseDecoder, SseEvent


def test_an_event_is_counted_dropped_as_soon_as_it_passes_the_bound() -> None:
    # The transport fails the event's request on this count: it must not wait for the
    # end of an event that may be 50 MB away.
    decoder = SseDecoder(max_event_bytes=50)
    assert decoder.feed(b"data: " + b"x" * 100) == []
    assert decoder.dropped == 1
    assert decoder.feed(b"x" * 100 + b"\n\ndata: ok\n\n") == [SseEvent(data="ok")]
    assert decoder.dropped == 1  # one event, counted once
    decoder = SseDecoder(max_event_bytes=50)
    decoder.feed(b"data: 0123456789\n" * 5)  # 55 bytes of data, no blank line yet
    assert decoder.dropped == 1


def test_the_bound_counts_bytes_not_characters() -> None:
    # Three lines of 20 two-byte characters: 123 bytes of data (63 characters).
    line = "data:" + "\u00e9" * 20 + "\n"
    decoder = SseDecoder(max_event_bytes=100)
    assert decoder.feed((line * 3 + "\n").encode()) == []
    assert decoder.dropped == 1
    decoder = SseDecoder(max_event_bytes=123)
    assert decoder.feed((line * 3 + "\n").encode()) == [
        SseEvent(data="\n".join(["\u00e9" * 20] * 3))
    ]


def test_a_line_may_only_fill_what_is_left_of_its_event() -> None:
    # 900 bytes of data held, then a line as long as the bound: held whole, the event
    # in progress and the line would be twice the bound.
    decoder = SseDecoder(max_event_bytes=1000)
    decoder.feed(b"data: " + b"a" * 899 + b"\n")
    assert decoder.held == 900
    decoder.feed(b"data: " + b"b" * 990)
    assert decoder.dropped == 1
    assert decoder.held <= 1000


chunks = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"data: ", b"data:", b"\n", b"\r\n", b"\r", b"id: 1\n", b": c\n"]),
    ),
    max_size=60,
)


@given(chunks=chunks, bound=st.integers(min_value=1, max_value=64))
def test_what_the_decoder_holds_never_passes_the_bound(chunks: list[bytes], bound: int) -> None:
    decoder = SseDecoder(max_event_bytes=bound)
    for chunk in chunks:
        for event in decoder.feed(chunk):
            # The bound is on the bytes held; each byte decodes to at most one character
            # (a byte that is not UTF-8 becomes one U+FFFD, three bytes re-encoded).
            assert len(event.data) <= bound
        # A field name and its colon and space are not data: a data line may be that
        # much longer than what is left of the event.
        assert decoder.held <= bound + len(b"data: ")


def test_a_retry_of_thousands_of_digits_is_read_not_raised() -> None:
    # int() refuses more than 4,300 digits, and a float() of a 400-digit number
    # overflows: either would end the stream from inside the decoder.
    decoder = SseDecoder()
    for digits in (400, 5000):
        decoder.feed(b"retry: " + b"9" * digits + b"\n\n")
        assert decoder.retry_ms is not None
        assert decoder.retry_ms / 1000 < 10**7
