"""Being an async context manager that owns its nursery, without exception groups."""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Any, Self

import trio

__all__ = ["OwnsNursery"]


class OwnsNursery(abc.ABC):
    """``async with obj:`` runs ``obj.run`` in a nursery of its own; leaving calls
    ``aclose()``. ``run`` must report ``started`` once usable, raise (before that) the one
    typed error that stops it, and never raise after; then a failure to start comes out
    bare, and so does an exception from the ``async with`` body — never in a group."""

    _own_nursery: Any = None

    @abc.abstractmethod
    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        """Start, report ``started``, serve until closed."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Stop everything ``run`` started; idempotent."""

    async def __aenter__(self) -> Self:
        self._own_nursery = trio.open_nursery()
        nursery = await self._own_nursery.__aenter__()
        try:
            await nursery.start(self.run)
        except BaseException:
            # run() failed before it started: its exception comes out bare, as the
            # caller should see it; leave the (empty) nursery without it.
            nursery.cancel_scope.cancel()
            await self._own_nursery.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        await self.aclose()
        # run()'s tasks never raise, so the nursery has nothing to report; the body's
        # own exception propagates as itself, not wrapped in a group.
        await self._own_nursery.__aexit__(None, None, None)
        return False
