"""Bounded memory of ``push/event`` ids (MCPL §9.4: hosts SHOULD deduplicate by
``eventId``; servers retry with a stable id).

Least recently seen ids are forgotten first: a server that keeps retrying one event keeps
its id remembered, however many other events arrive. Memory is bounded by ``capacity``
whatever a server sends. One memory per connection, kept across reconnects: a retry
after a reconnect is exactly the duplicate this catches.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

__all__ = ["DEFAULT_CAPACITY", "EventIds"]

DEFAULT_CAPACITY: Final = 4096


class EventIds:
    """The last ``capacity`` event ids seen."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        """Raises ``ValueError`` for a capacity below 1."""
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def add(self, event_id: str) -> bool:
        """Remember ``event_id``; true if it is new, false for a duplicate (which is
        then remembered as the most recent)."""
        if event_id in self._ids:
            self._ids.move_to_end(event_id)
            return False
        self._ids[event_id] = None
        if len(self._ids) > self.capacity:
            self._ids.popitem(last=False)
        return True

    def discard(self, event_id: str) -> None:
        """Forget ``event_id`` (its handling failed, so a retry must go through)."""
        self._ids.pop(event_id, None)
