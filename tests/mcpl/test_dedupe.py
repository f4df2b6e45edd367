"""push/event dedupe by eventId: bounded memory."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpl_host.mcpl.dedupe import DEFAULT_CAPACITY, EventIds


def test_a_repeated_id_is_a_duplicate() -> None:
    seen = EventIds()
    assert seen.add("evt_1")
    assert not seen.add("evt_1")
    assert seen.add("evt_2")
    assert "evt_1" in seen
    assert "evt_3" not in seen
    assert len(seen) == 2


def test_memory_is_bounded() -> None:
    seen = EventIds()
    assert seen.capacity == DEFAULT_CAPACITY == 4096
    for i in range(10_000):
        seen.add(f"evt_{i}")
    assert len(seen) == 4096
    assert "evt_0" not in seen
    assert "evt_9999" in seen
    assert seen.add("evt_0")  # forgotten, so new again


def test_the_least_recently_seen_id_is_forgotten_first() -> None:
    seen = EventIds(capacity=2)
    seen.add("a")
    seen.add("b")
    assert not seen.add("a")  # a retry keeps "a" fresh
    seen.add("c")
    assert "a" in seen
    assert "b" not in seen


def test_discard_lets_a_retry_through() -> None:
    seen = EventIds()
    seen.add("a")
    seen.discard("a")
    seen.discard("never-seen")
    assert seen.add("a")


def test_a_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^capacity must be at least 1$"):
        EventIds(capacity=0)


@given(st.lists(st.text(alphabet="abcdef", max_size=2)), st.integers(1, 8))
def test_never_more_than_capacity_and_the_newest_is_always_known(
    ids: list[str], capacity: int
) -> None:
    seen = EventIds(capacity=capacity)
    for event_id in ids:
        seen.add(event_id)
        assert event_id in seen
        assert len(seen) <= capacity
