"""The hold buffer: order, requests never dropped, capped notifications, epochs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpl_host.mcpl.grant import Applied, Grant
from mcpl_host.mcpl.methods import INBOUND, Admit, Plane, Refuse, admit
from mcpl_host.mcpl.planes import DEFAULT_MAX_NOTIFICATIONS, HeldItem, HoldBuffer, Offer

C, D = Plane.CONTROL, Plane.DATA


def test_it_holds_from_the_start() -> None:
    buffer: HoldBuffer[str] = HoldBuffer()
    assert buffer.holding
    assert buffer.max_notifications == DEFAULT_MAX_NOTIFICATIONS == 1000
    assert buffer.offer("a", plane=C, epoch=0, is_request=True) == Offer(held=True)
    assert buffer.offer("b", plane=C, epoch=0, is_request=False) == Offer(held=True, dropped=None)
    assert len(buffer) == 2


def test_release_returns_everything_in_arrival_order() -> None:
    buffer: HoldBuffer[str] = HoldBuffer()
    buffer.offer("register", plane=C, epoch=0, is_request=True)
    buffer.offer("changed", plane=C, epoch=0, is_request=False)
    buffer.offer("push", plane=D, epoch=0, is_request=True)
    buffer.offer("manifest", plane=C, epoch=0, is_request=False)
    assert [h.item for h in buffer] == ["register", "changed", "push", "manifest"]  # a look
    released = buffer.release()
    assert [(h.item, h.plane, h.is_request) for h in released] == [
        ("register", C, True),
        ("changed", C, False),
        ("push", D, True),
        ("manifest", C, False),
    ]
    assert [h.seq for h in released] == sorted(h.seq for h in released)
    assert len(buffer) == 0
    assert buffer.holding is False


def test_after_release_items_pass_through_until_held_again() -> None:
    buffer: HoldBuffer[str] = HoldBuffer()
    buffer.release()
    assert buffer.offer("a", plane=D, epoch=0, is_request=True) == Offer(held=False)
    assert len(buffer) == 0
    buffer.hold()
    assert buffer.offer("b", plane=D, epoch=1, is_request=True).held
    assert [h.item for h in buffer.release()] == ["b"]


def test_it_may_start_open() -> None:
    buffer: HoldBuffer[str] = HoldBuffer(holding=False)
    assert not buffer.offer("a", plane=C, epoch=0, is_request=False).held


def test_requests_are_never_dropped() -> None:
    buffer: HoldBuffer[int] = HoldBuffer(max_notifications=2)
    for i in range(5000):
        assert buffer.offer(i, plane=D, epoch=0, is_request=True) == Offer(held=True)
    assert buffer.dropped == 0
    assert [h.item for h in buffer.release()] == list(range(5000))


def test_notifications_are_capped_dropping_the_oldest() -> None:
    buffer: HoldBuffer[str] = HoldBuffer(max_notifications=2)
    buffer.offer("n1", plane=C, epoch=0, is_request=False)
    buffer.offer("r1", plane=D, epoch=0, is_request=True)
    buffer.offer("n2", plane=C, epoch=0, is_request=False)
    offer = buffer.offer("n3", plane=D, epoch=0, is_request=False)
    assert offer.held
    assert offer.dropped is not None
    assert offer.dropped.item == "n1"
    assert buffer.dropped == 1
    assert buffer.notifications == 2
    buffer.offer("r2", plane=D, epoch=0, is_request=True)
    buffer.offer("n4", plane=C, epoch=0, is_request=False)
    assert buffer.dropped == 2
    assert [h.item for h in buffer.release()] == ["r1", "n3", "r2", "n4"]
    assert buffer.dropped == 2  # counted over the buffer's life


def test_the_default_cap_is_a_thousand() -> None:
    buffer: HoldBuffer[int] = HoldBuffer()
    for i in range(1005):
        buffer.offer(i, plane=D, epoch=0, is_request=False)
    assert buffer.dropped == 5
    assert [h.item for h in buffer.release()] == list(range(5, 1005))


def test_a_zero_cap_drops_every_notification() -> None:
    buffer: HoldBuffer[str] = HoldBuffer(max_notifications=0)
    offer = buffer.offer("n", plane=C, epoch=0, is_request=False)
    assert offer.held
    assert offer.dropped is not None
    assert offer.dropped.item == "n"
    assert buffer.dropped == 1
    assert buffer.release() == []


def test_a_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^max_notifications must not be negative$"):
        HoldBuffer(max_notifications=-1)


def test_each_item_remembers_its_epoch() -> None:
    buffer: HoldBuffer[str] = HoldBuffer()
    buffer.offer("old-request", plane=D, epoch=3, is_request=True)
    buffer.offer("old-note", plane=C, epoch=3, is_request=False)
    buffer.offer("new-request", plane=C, epoch=4, is_request=True)
    buffer.offer("new-note", plane=C, epoch=4, is_request=False)
    gone = buffer.discard_epochs_before(4)
    assert [(h.item, h.epoch) for h in gone] == [("old-request", 3), ("old-note", 3)]
    assert buffer.notifications == 1
    assert buffer.discard_epochs_before(4) == []
    released = buffer.release()
    assert [(h.item, h.epoch) for h in released] == [("new-request", 4), ("new-note", 4)]


def test_release_keeps_the_epoch_of_items_from_a_dead_transport() -> None:
    buffer: HoldBuffer[str] = HoldBuffer()
    buffer.offer("a", plane=D, epoch=1, is_request=True)
    buffer.offer("b", plane=D, epoch=2, is_request=True)
    assert [h.epoch for h in buffer.release()] == [1, 2]


def test_held_items_are_admitted_against_the_grant_at_release_time() -> None:
    # A server registers its channels right after initialize, before the receipt.
    grant = Grant()
    buffer: HoldBuffer[tuple[str, int]] = HoldBuffer()
    update = grant.propose({"channels.register"})
    for method, request_id in [("channels/register", 1), ("push/event", 2)]:
        buffer.offer((method, request_id), plane=INBOUND[method].plane, epoch=0, is_request=True)
    outcome = grant.receipt(update.update_id, {"accepted": True})
    assert isinstance(outcome, Applied)
    assert outcome.released
    decisions = [admit(h.item[0], {}, grant) for h in buffer.release()]
    assert isinstance(decisions[0], Admit)
    assert isinstance(decisions[1], Refuse)


kinds = st.lists(st.tuples(st.booleans(), st.sampled_from([C, D])), max_size=60)


@given(kinds, st.integers(0, 5))
def test_order_is_kept_and_only_the_oldest_notifications_go(
    items: list[tuple[bool, Plane]], cap: int
) -> None:
    buffer: HoldBuffer[int] = HoldBuffer(max_notifications=cap)
    for index, (is_request, plane) in enumerate(items):
        buffer.offer(index, plane=plane, epoch=0, is_request=is_request)
    released: list[HeldItem[int]] = buffer.release()
    requests = [i for i, (r, _) in enumerate(items) if r]
    notes = [i for i, (r, _) in enumerate(items) if not r]
    kept_notes = notes[len(notes) - min(cap, len(notes)) :]
    assert [h.item for h in released] == sorted(requests + kept_notes)
    assert buffer.dropped == len(notes) - len(kept_notes)
    assert all(h.plane is items[h.item][1] for h in released)
