"""The measuring host's bookkeeping: baselines, the outcome of each call it makes, and
the figures it prints (one JSON object).

Figures are growths over a baseline taken just before the connection opens (after the
hostile server, when the harness starts it itself, is up): ``rss_peak_mb`` the highest
RSS seen while the row ran, ``rss_end_mb`` what is left after closing, ``tasks_peak`` the
most live trio tasks at once (``tasks_end`` after closing), ``fds_leaked`` descriptors
still open after closing, ``logs`` the events logged (``lines``: info and above).
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from mcpl_host import Connection, McplHostError

from .measure import MB, LogCounter, MemorySampler, TaskCounter, open_fds

__all__ = ["SLACK", "Probe", "describe_error", "supported"]

T = TypeVar("T")

# How far past its own timeout a call may run before it counts as hung: the host's
# cleanup after a timeout (a cancellation notice, a closed stream) takes a little.
SLACK = 2.0


def supported(callable_: Any, **wanted: Any) -> dict[str, Any]:
    """The keyword arguments ``callable_`` accepts, of ``wanted`` (None: not wanted):
    options the fixed host adds are passed where they exist, so the same harness runs
    against code that predates them."""
    parameters = inspect.signature(callable_).parameters
    return {k: v for k, v in wanted.items() if k in parameters and v is not None}


def connection_options(**wanted: Any) -> dict[str, Any]:
    return supported(Connection, **wanted)


def describe_error(exc: BaseException) -> str:
    """An exception's type, and the types inside a group (a raw group is a finding)."""
    if isinstance(exc, BaseExceptionGroup):
        inner = ",".join(sorted({describe_error(e) for e in exc.exceptions}))
        return f"{type(exc).__name__}({inner})"
    return type(exc).__name__


class Probe:
    def __init__(self, tasks: TaskCounter, logs: LogCounter) -> None:
        self.tasks = tasks
        self.logs = logs
        self.memory = MemorySampler().start()
        self.calls: dict[str, dict[str, Any]] = {}
        self.extra: dict[str, Any] = {}
        self._fds0 = 0
        self._rss0 = 0
        self._tasks0 = 0
        self._started = trio.current_time()
        self._peak_rss = 0
        self._peak_tasks = 0
        self._close_seconds: float | None = None
        self._close_lines = 0

    def baseline(self) -> None:
        """Now is what the figures are growths over."""
        self._fds0 = open_fds()
        self._tasks0 = self.tasks.live
        self.tasks.reset_peak()
        self._rss0 = self.memory.reset_peak()
        self._started = trio.current_time()

    async def call(
        self,
        label: str,
        fn: Callable[[], Awaitable[T]],
        *,
        timeout: float,
        bound: float | None = None,
    ) -> T | None:
        """Run one of the host's own calls and record how it ended: ``answered``, the
        exception's type (``typed`` when it is an McplHostError), or ``hung`` when it
        still ran ``bound`` seconds on (default: its ``timeout`` plus :data:`SLACK`).
        Returns the call's result, None when it did not answer."""
        started = trio.current_time()
        record: dict[str, Any] = {"timeout": timeout}
        result: T | None = None
        with trio.move_on_after(timeout + SLACK if bound is None else bound) as scope:
            try:
                result = await fn()
            except Exception as exc:
                record["outcome"] = describe_error(exc)
                record["typed"] = isinstance(exc, McplHostError)
                record["error"] = str(exc)[:160]
                if not isinstance(exc, McplHostError):
                    record["traceback"] = traceback.format_exc()[-1500:]
            else:
                record["outcome"] = "answered"
                record["typed"] = True
        if scope.cancelled_caught:
            record["outcome"] = "hung"
            record["typed"] = False
        record["seconds"] = round(trio.current_time() - started, 3)
        self.calls[label] = record
        return result

    def peaks(self) -> None:
        """Take the peaks now (before closing: a close that frees everything at once
        must not hide what the host held)."""
        self._peak_rss = max(self._peak_rss, self.memory.peak_now())
        self._peak_tasks = max(self._peak_tasks, self.tasks.peak)

    async def close(self, aclose: Callable[[], Awaitable[Any]]) -> None:
        """Close (bounded), timing it and counting the log lines it cost."""
        self.peaks()
        lines = self.logs.lines
        started = trio.current_time()
        with trio.move_on_after(60):
            await aclose()
        self._close_seconds = round(trio.current_time() - started, 3)
        self._close_lines = self.logs.lines - lines

    async def figures(self) -> dict[str, Any]:
        self.peaks()
        await trio.sleep(0.2)  # a child's exit and the last closes settle
        end = {
            "rss_peak_mb": round((self._peak_rss - self._rss0) / MB, 1),
            "rss_end_mb": round((self.memory.rss() - self._rss0) / MB, 1),
            "rss_base_mb": round(self._rss0 / MB, 1),
            "tasks_peak": self._peak_tasks - self._tasks0,
            "tasks_end": self.tasks.live - self._tasks0,
            "fds_leaked": open_fds() - self._fds0,
            "logs": self.logs.snapshot(),
            "close_seconds": self._close_seconds,
            "close_log_lines": self._close_lines,
            "seconds": round(trio.current_time() - self._started, 3),
            "calls": self.calls,
            **self.extra,
        }
        self.memory.stop()
        return end
