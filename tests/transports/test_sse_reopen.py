"""When the GET stream is reopened: the server's retry, the floor, the backoff (plain
code, no I/O)."""

from __future__ import annotations

import pytest

from mcpl_host.transports.sse_reopen import CAP, FLOOR, STABLE, Reopening, retry_seconds


def waits(reopening: Reopening, retry_ms: int | None, ends: int) -> list[float]:
    """The waits after ``ends`` streams in a row that each ended at once with nothing."""
    out = []
    for _ in range(ends):
        reopening.ended(lived=0.0, delivered=False)
        out.append(reopening.delay(retry_ms))
    return out


def test_retry_0_is_raised_to_the_floor_then_doubled_up_to_the_cap() -> None:
    assert FLOOR == 0.5
    assert waits(Reopening(), 0, 8) == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, CAP, CAP]


def test_the_servers_retry_is_honoured_above_the_floor_and_above_the_cap() -> None:
    assert waits(Reopening(), 2000, 3) == [2.0, 4.0, 8.0]
    assert waits(Reopening(), 120_000, 3) == [120.0, 120.0, 120.0]  # never shortened
    assert waits(Reopening(), None, 2) == [1.0, 2.0]  # no retry given: 1 s


@pytest.mark.parametrize(
    ("lived", "delivered"), [(0.0, True), (STABLE, False)], ids=["a-message", "lived-long"]
)
def test_a_stream_that_carried_a_message_or_lived_long_starts_again_from_the_retry(
    lived: float, delivered: bool
) -> None:
    reopening = Reopening()
    waits(reopening, 0, 5)
    reopening.ended(lived=lived, delivered=delivered)
    assert reopening.delay(0) == FLOOR


def test_a_stream_that_ended_with_nothing_just_before_it_was_stable_counts() -> None:
    reopening = Reopening()
    reopening.ended(lived=STABLE - 0.01, delivered=False)
    reopening.ended(lived=STABLE - 0.01, delivered=False)
    assert reopening.delay(0) == 2 * FLOOR


def test_many_quick_ends_stay_at_the_cap() -> None:
    reopening = Reopening()
    waits(reopening, 0, 10_000)
    assert reopening.delay(0) == CAP


def test_retry_seconds_has_the_floor_and_a_default() -> None:
    assert retry_seconds(0) == FLOOR
    assert retry_seconds(499) == FLOOR
    assert retry_seconds(501) == 0.501
    assert retry_seconds(None) == 1.0
