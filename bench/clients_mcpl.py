"""mcpl_host's faces as benchmark children, over stdio or Streamable HTTP.

- ``mcpl_host``: ``Connection.call_tool`` on trio (typed results), telemetry as it is
  by default: on, with ``opentelemetry-api`` installed and no SDK configured (the no-op
  tracer and meter take the calls);
- ``mcpl_host-notel``: the same with ``telemetry=False`` (issue 24: the no-op tracer
  must cost under 5% of a sequential call);
- ``mcpl_host-asyncio``: the same through ``mcpl_host.aio`` under ``asyncio.run``;
- ``mcpl_host-sync``: ``mcpl_host.sync.Connection`` from plain threads: the sequential
  calls in the main thread, 64 in flight as 64 threads sharing the calls (how a
  synchronous program gets concurrency);
- ``mcpl_host-manager``: ``ConnectionManager({"s": target})`` on trio, every call through
  ``manager.call_tool("s__echo", ...)`` (the catalogue's name; a typed CallToolResult,
  checked as Connection.call_tool checks it). Its handshake is
  the manager's start: up once the server is connected.

Each imports its library inside the function, after the clock of the import column
has started.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from measure import (
    INFLIGHT,
    SERVER,
    Clock,
    Report,
    Setup,
    TaskGroup,
    asyncio_task_group,
    check,
    shares,
    timed_calls,
)

Echo = Callable[[Any, str], Awaitable[str]]


def _target(setup: Setup) -> Any:
    from mcpl_host import HttpTarget, StdioTarget

    return HttpTarget(setup.url) if setup.http else StdioTarget.of(SERVER)


async def _typed_echo(conn: Any, text: str) -> str:
    result = await conn.call_tool("echo", {"text": text})
    return str(result.text)


async def _connect_and_measure(
    report: Report,
    setup: Setup,
    connect: Callable[[], AbstractAsyncContextManager[Any]],
    echo: Echo,
    task_group: Callable[[], AbstractAsyncContextManager[TaskGroup]],
) -> None:
    """``connect()`` opens one connection (or manager); the handshakes, then the timed
    phases on the last one."""
    for _ in range(setup.handshakes - 1):
        began = time.perf_counter()
        async with connect():
            report.handshake(time.perf_counter() - began)
    began = time.perf_counter()
    async with connect() as conn:
        report.handshake(time.perf_counter() - began)

        async def calls(n: int, text: str = "hello") -> None:
            for _ in range(n):
                check(await echo(conn, text), len(text))

        await timed_calls(report, setup, calls, task_group)
    report.emit()


def child_trio(setup: Setup, **options: Any) -> None:
    started = time.perf_counter()
    import trio

    from mcpl_host import Connection

    report = Report(started)
    target = _target(setup)
    trio.run(
        _connect_and_measure,
        report,
        setup,
        lambda: Connection(target, **options),
        _typed_echo,
        trio.open_nursery,
    )


def child_trio_notel(setup: Setup) -> None:
    child_trio(setup, telemetry=False)


def child_manager(setup: Setup) -> None:
    started = time.perf_counter()
    import trio

    from mcpl_host import ConnectionManager

    report = Report(started)
    target = _target(setup)

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[Any]:
        async with ConnectionManager({"s": target}) as manager:
            status = (await manager.wait_ready())["s"]
            if status.state != "ready":
                raise AssertionError(f"the manager's server is {status.state}: {status.error}")
            yield manager

    async def echo(manager: Any, text: str) -> str:
        result = await manager.call_tool("s__echo", {"text": text})
        return str(result.text)

    trio.run(_connect_and_measure, report, setup, connect, echo, trio.open_nursery)


def child_asyncio(setup: Setup) -> None:
    started = time.perf_counter()
    import asyncio

    from mcpl_host import aio

    report = Report(started)
    target = _target(setup)

    asyncio.run(
        _connect_and_measure(
            report, setup, lambda: aio.Connection(target), _typed_echo, asyncio_task_group
        )
    )


def child_sync(setup: Setup) -> None:
    started = time.perf_counter()
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from mcpl_host import sync

    report = Report(started)
    target = _target(setup)
    for _ in range(setup.handshakes - 1):
        began = time.perf_counter()
        with sync.Connection(target):
            report.handshake(time.perf_counter() - began)
    began = time.perf_counter()
    with sync.Connection(target) as conn:
        report.handshake(time.perf_counter() - began)

        def calls(n: int, text: str = "hello") -> None:
            for _ in range(n):
                check(conn.call_tool("echo", {"text": text}).text, len(text))

        calls(setup.warmup)
        clock = Clock()
        calls(setup.calls)
        report.sequential(setup.calls, *clock.since())
        # The threads are made first and start together: the phase times the calls.
        together = threading.Barrier(INFLIGHT + 1)

        def worker(n: int) -> None:
            together.wait()
            calls(n)

        with ThreadPoolExecutor(INFLIGHT) as pool:
            done = [pool.submit(worker, n) for n in shares(setup.calls, INFLIGHT)]
            together.wait()
            clock = Clock()
            for future in done:
                future.result()
            report.timed("inflight_per_s", setup.calls, clock.since()[0])
        report.small_calls_done()
        big = "x" * setup.big_bytes
        clock = Clock()
        calls(setup.big_calls, big)
        report.timed("big_per_s", setup.big_calls, clock.since()[0])
    report.emit()
