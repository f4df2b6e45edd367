"""The hold buffer: inbound MCPL traffic waits here until the grant's receipt.

From the first connect until the first receipt, and after every reconnect until the new
receipt, nothing privileged can be admitted (MCPL §5.3), yet a server that registers its
channels right after ``initialize`` must not be refused for being quick. So inbound items
are held, in arrival order, and :meth:`HoldBuffer.release` hands them all back to be
admitted against the grant in force *at release time* (never the grant when they came).

- Requests are never dropped: each must get exactly one answer.
- Notifications are capped (:data:`DEFAULT_MAX_NOTIFICATIONS`); when one more arrives,
  the oldest held notification is dropped and counted.
- Each item remembers the transport epoch it came on: a request is answered only on that
  epoch, so one held across a reconnect is not answered on the new transport (the driver
  logs it instead). :meth:`HoldBuffer.discard_epochs_before` takes such items out.
- Both planes are held alike; each item keeps its plane for the driver and the logs.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator
from typing import Any, Final, Generic, TypeVar

import msgspec

from .methods import Plane

__all__ = ["DEFAULT_MAX_NOTIFICATIONS", "HeldItem", "HoldBuffer", "Offer"]

DEFAULT_MAX_NOTIFICATIONS: Final = 1000

T = TypeVar("T")


class HeldItem(msgspec.Struct, Generic[T], frozen=True, gc=False):
    """One held inbound message. ``seq`` is its arrival number (monotonic)."""

    item: T
    plane: Plane
    epoch: int
    is_request: bool
    seq: int


class Offer(msgspec.Struct, Generic[T], frozen=True, gc=False):
    """What :meth:`HoldBuffer.offer` did: ``held`` false means admit the item now.
    ``dropped`` is the notification dropped to make room (log it), if any."""

    held: bool
    dropped: HeldItem[T] | None = None


class HoldBuffer(Generic[T]):
    """Holds inbound items while :attr:`holding`; starts holding (nothing is granted
    before the first receipt)."""

    def __init__(
        self, *, max_notifications: int = DEFAULT_MAX_NOTIFICATIONS, holding: bool = True
    ) -> None:
        """Raises ``ValueError`` for a negative ``max_notifications``."""
        if max_notifications < 0:
            raise ValueError("max_notifications must not be negative")
        self.max_notifications = max_notifications
        self.holding = holding
        self.dropped = 0  # notifications dropped, over the buffer's life
        # Two queues, merged by arrival number on release: dropping the oldest
        # notification is then O(1) however many requests wait.
        self._requests: deque[HeldItem[T]] = deque()
        self._notifications: deque[HeldItem[T]] = deque()
        self._seq = 0

    def __len__(self) -> int:
        return len(self._requests) + len(self._notifications)

    def __iter__(self) -> Iterator[HeldItem[T]]:
        """The held items in arrival order (they stay held)."""
        return heapq.merge(self._requests, self._notifications, key=_seq)

    @property
    def notifications(self) -> int:
        """Notifications held now."""
        return len(self._notifications)

    def hold(self) -> None:
        """Start holding (a reconnect: wait for the new epoch's receipt)."""
        self.holding = True

    def offer(self, item: T, *, plane: Plane, epoch: int, is_request: bool) -> Offer[T]:
        """Hold ``item`` if holding; otherwise say to admit it now."""
        if not self.holding:
            return Offer(held=False)
        self._seq += 1
        held = HeldItem(item, plane, epoch, is_request, self._seq)
        if is_request:
            self._requests.append(held)
            return Offer(held=True)
        if self.max_notifications == 0:
            self.dropped += 1
            return Offer(held=True, dropped=held)
        dropped = None
        if len(self._notifications) >= self.max_notifications:
            dropped = self._notifications.popleft()
            self.dropped += 1
        self._notifications.append(held)
        return Offer(held=True, dropped=dropped)

    def release(self) -> list[HeldItem[T]]:
        """Stop holding; every held item, in arrival order."""
        self.holding = False
        items = list(self)
        self._requests.clear()
        self._notifications.clear()
        return items

    def discard_epochs_before(self, epoch: int) -> list[HeldItem[T]]:
        """Take out the items that came on an epoch before ``epoch``, in arrival order;
        the rest stay held."""
        gone = [held for held in self if held.epoch < epoch]
        if gone:
            self._requests = deque(h for h in self._requests if h.epoch >= epoch)
            self._notifications = deque(h for h in self._notifications if h.epoch >= epoch)
        return gone


def _seq(held: HeldItem[Any]) -> int:
    return held.seq
