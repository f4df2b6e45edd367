"""What every benchmark child shares: where the server is, the phases of a run in
order, and the one JSON line of figures it prints (``bench/run.py`` reads it).

Kept free of any client library and of asyncio: a child's import column is what its
own client costs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

BENCH = Path(__file__).resolve().parent
SERVER = [sys.executable, str(BENCH / "server.py")]
HTTP_SERVER = [sys.executable, str(BENCH / "http_server.py")]
INFLIGHT = 64
INIT_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "floor", "version": "0"},
}


@dataclass(frozen=True, slots=True)
class Setup:
    """What one child run is told: the transport, the HTTP server's URL (started by the
    parent), how many of each thing to do."""

    transport: str  # "stdio" or "http"
    url: str
    calls: int
    warmup: int
    big_calls: int
    big_bytes: int
    handshakes: int
    idle: int
    kills: int

    @classmethod
    def of(cls, args: argparse.Namespace) -> Setup:
        return cls(
            args.transport,
            args.url or "",
            args.calls,
            args.warmup,
            args.big_calls,
            args.big_bytes,
            args.handshakes,
            args.idle,
            args.kills,
        )

    @property
    def http(self) -> bool:
        return self.transport == "http"


# -- what every child reports -----------------------------------------------------------


def _status(field: str) -> int:
    # VmHWM is this process image's own peak; ru_maxrss would carry over the parent's
    # (Linux keeps it across exec).
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def peak_rss_mib() -> float:
    return _status("VmHWM:") / 1024


def rss_kib() -> int:
    return _status("VmRSS:")


def shares(calls: int, workers: int) -> list[int]:
    """``calls`` split over ``workers`` (the first ones take one more)."""
    return [calls // workers + (i < calls % workers) for i in range(workers)]


def check(text: str, expected_len: int) -> None:
    if len(text) != expected_len:
        raise AssertionError(f"echo answered {len(text)} characters, not {expected_len}")


def echoed_size(answer: bytes) -> int:
    """The size, quotes included, of the text an echo answer carries: it is the last
    string of the answer, ``..."text":"<text>"}]}}`` (and a newline)."""
    end = len(answer) - 1 if answer.endswith(b"\n") else len(answer)
    return end - answer.rindex(b'"text":', 0, end) - 7 - 4


class Report:
    """The figures of one child run, printed as one JSON line by :meth:`emit`."""

    def __init__(self, imported_since: float) -> None:
        self.figures: dict[str, float] = {"import_s": time.perf_counter() - imported_since}
        self._handshakes: list[float] = []

    def handshake(self, seconds: float) -> None:
        self._handshakes.append(seconds)

    def timed(self, key: str, calls: int, wall: float) -> None:
        self.figures[key] = calls / wall

    def sequential(self, calls: int, wall: float, cpu: float) -> None:
        self.timed("sequential_per_s", calls, wall)
        self.figures["cpu_s_per_1k"] = cpu / calls * 1000

    def small_calls_done(self) -> None:
        """Right after the sequential and in-flight phases, before the big echoes."""
        self.figures["small_rss_mib"] = peak_rss_mib()

    def emit(self) -> None:
        self.figures["handshake_s"] = statistics.median(self._handshakes)
        self.figures["peak_rss_mib"] = peak_rss_mib()
        print(json.dumps(self.figures))


class Clock:
    """Wall and CPU (this process's user+system, every thread) since it was made."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def since(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


# -- the phases of a run ----------------------------------------------------------------


class Calls(Protocol):
    """``calls(n, text)``: ``n`` echo calls of ``text``, one at a time, each checked."""

    def __call__(self, n: int, text: str = "hello") -> Awaitable[None]: ...


class TaskGroup(Protocol):
    def start_soon(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None: ...


class _StartSoon:
    """An asyncio TaskGroup with trio's ``start_soon``."""

    def __init__(self, group: Any) -> None:
        self._group = group

    def start_soon(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        self._group.create_task(fn(*args))


@contextlib.asynccontextmanager
async def asyncio_task_group() -> AsyncIterator[TaskGroup]:
    import asyncio  # only in the children that use it: it is part of their import

    async with asyncio.TaskGroup() as group:
        yield _StartSoon(group)


async def timed_calls(
    report: Report,
    setup: Setup,
    calls: Calls,
    task_group: Callable[[], AbstractAsyncContextManager[TaskGroup]],
) -> None:
    """The timed phases of an async client: warm-up, sequential, ``INFLIGHT`` tasks
    sharing the calls, then the big echoes; ``task_group()`` opens a trio nursery, an
    anyio task group or an asyncio one (``start_soon``)."""
    await calls(setup.warmup)
    clock = Clock()
    await calls(setup.calls)
    report.sequential(setup.calls, *clock.since())
    clock = Clock()
    async with task_group() as group:
        for n in shares(setup.calls, INFLIGHT):
            group.start_soon(calls, n)
    report.timed("inflight_per_s", setup.calls, clock.since()[0])
    report.small_calls_done()
    big = "x" * setup.big_bytes
    clock = Clock()
    await calls(setup.big_calls, big)
    report.timed("big_per_s", setup.big_calls, clock.since()[0])
