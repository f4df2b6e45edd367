"""One timer task for every pending request's timeout.

A trio CancelScope with a deadline per request costs about as much as the rest of a
round trip's bookkeeping; a heap watched by one task costs a push. Entries are removed
lazily: a settled request's entry is skipped when it comes due, and the heap is rebuilt
from the live entries when stale ones outnumber them, so it never grows past a small
multiple of the requests actually pending.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Protocol

import trio

__all__ = ["Expirable", "TimeoutWatch"]


class Expirable(Protocol):
    deadline: float
    settled: bool

    def expire(self) -> None: ...


class TimeoutWatch:
    """Calls ``item.expire()`` once ``item.deadline`` passes, unless it settled first.

    Moving a deadline is :meth:`watch` again with the new value; the old entry goes
    stale.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Expirable]] = []
        self._seq = itertools.count()
        self._next = math.inf
        self._wake = trio.Event()

    def watch(self, item: Expirable) -> None:
        heap = self._heap
        heapq.heappush(heap, (item.deadline, next(self._seq), item))
        if len(heap) > 256 and len(heap) > 4 * sum(1 for e in heap if self._live(e)):
            self._heap = heap = [e for e in heap if self._live(e)]
            heapq.heapify(heap)
        if item.deadline < self._next:
            self._wake.set()

    @staticmethod
    def _live(entry: tuple[float, int, Expirable]) -> bool:
        deadline, _, item = entry
        return not item.settled and item.deadline == deadline

    async def run(self) -> None:
        """The timer task: runs until cancelled."""
        while True:
            now = trio.current_time()
            heap = self._heap
            while heap and heap[0][0] <= now:
                entry = heapq.heappop(heap)
                if self._live(entry):
                    entry[2].expire()
            self._next = heap[0][0] if heap else math.inf
            self._wake = trio.Event()
            with trio.move_on_at(self._next):
                await self._wake.wait()
