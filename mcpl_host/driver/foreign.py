"""Requests awaited by a task of the host loop that trio is the guest of, not a trio task.

trio as the guest of an asyncio loop (the asyncio face) keeps its run state in the loop's
thread, so the synchronous parts of a request (encoding, queueing, writing, decoding)
run as well in an asyncio task, between trio's ticks, as in a trio task. Waiting cannot:
a trio wait parks a trio task. A :class:`Host` set for the awaiting task (:data:`HOST`)
lends its own way to wait: :meth:`Pending.wait <mcpl_host.driver.pending.Pending.wait>`
parks on the host's future, which the reader settles in trio's tick; code that needs a
trio task of its own (cancel scopes, sleeps, the hooks) runs in one through
:func:`in_trio`. A call then costs no trio task, no crossing into trio and back, and one
tick (docs/performance.md). Whether a method may be awaited this way is declared where
it is defined (``HOST_LOOP_METHODS`` of the client's Connection).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import sniffio

__all__ = ["HOST", "Host", "Parked", "host", "in_trio", "in_trio_task"]

T = TypeVar("T")


class Parked(Protocol):
    """What a host needs of the request it waits for (a Pending)."""

    finished: bool
    waiter: Any


class Host(Protocol):
    """The host loop's side, for the task awaiting a request."""

    async def park(self, pending: Parked) -> None:
        """Until ``pending`` is finished: set ``pending.waiter`` to a callable that ends
        the wait (called in trio's tick), wait, and clear it however the wait ends."""

    async def run(self, fn: Callable[[], Awaitable[T]]) -> T:
        """``await fn()`` in a trio task; cancelling the awaiting task cancels it."""


HOST: contextvars.ContextVar[Host | None] = contextvars.ContextVar("mcpl_host_host", default=None)


def in_trio_task() -> bool:
    """Whether the code runs in trio (a task, or one of trio's ticks) rather than in the
    host loop between them: trio names itself to sniffio for exactly that time."""
    return sniffio.thread_local.name == "trio"


def host() -> Host:
    """The awaiting task's host (raises ``RuntimeError`` when none is set)."""
    found = HOST.get()
    if found is None:
        raise RuntimeError("a request was awaited outside trio, with no host loop to wait on")
    return found


async def in_trio(fn: Callable[[], Awaitable[T]]) -> T:
    """``await fn()`` in a trio task: this one when in trio already, else one the host
    starts (for the parts of a call that wait on anything but its answer)."""
    if in_trio_task():
        return await fn()
    return await host().run(fn)
