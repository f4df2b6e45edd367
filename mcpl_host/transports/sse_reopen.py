"""When to reopen a server-sent event stream: the server's ``retry``, a floor, a backoff.

Plain code, no I/O: the transport asks :meth:`Reopening.delay` before each reopening
and reports each stream's end with :meth:`Reopening.ended`.

A server's ``retry`` is honoured, but never below :data:`FLOOR`: ``retry: 0`` and a
stream that ends at once would otherwise be reopened as fast as the loop turns (about
1,300 times a second). A stream that ends having carried no message within
:data:`STABLE` seconds (or that failed to open) doubles the next wait, up to
:data:`CAP`; one that carried a message or lived that long starts again from the
server's ``retry``. A ``retry`` above the cap is still honoured: waiting longer than
asked is never the hazard.
"""

from __future__ import annotations

import math
from typing import Final

__all__ = ["CAP", "DEFAULT_RETRY", "FLOOR", "STABLE", "Reopening", "retry_seconds"]

FLOOR: Final = 0.5  # seconds: the least wait before a stream is reopened or resumed
DEFAULT_RETRY: Final = 1.0  # seconds, when the server gave no retry
CAP: Final = 30.0  # seconds: the backoff doubles up to this
STABLE: Final = 10.0  # seconds: a stream that lived this long was no quick end
_MAX_DOUBLINGS: Final = 16  # 0.5 s doubled 16 times is far past the cap already


def retry_seconds(retry_ms: int | None) -> float:
    """The server's ``retry`` in seconds, never below :data:`FLOOR`."""
    seconds = retry_ms / 1000 if retry_ms is not None else DEFAULT_RETRY
    if not math.isfinite(seconds):
        seconds = DEFAULT_RETRY
    return max(seconds, FLOOR)


class Reopening:
    """The waits between the streams of one GET stream's life."""

    def __init__(self) -> None:
        self.quick_ends = 0  # streams in a row that ended with nothing, quickly

    def ended(self, *, lived: float, delivered: bool) -> None:
        """A stream ended after ``lived`` seconds, having carried a message or not."""
        if delivered or lived >= STABLE:
            self.quick_ends = 0
        else:
            self.quick_ends += 1

    def delay(self, retry_ms: int | None) -> float:
        """Seconds to wait before the next stream is opened."""
        base = retry_seconds(retry_ms)
        # The first quick end waits the base alone: it may be a server's own restart.
        backoff = base * 2.0 ** min(max(self.quick_ends - 1, 0), _MAX_DOUBLINGS)
        return max(base, min(backoff, CAP))
