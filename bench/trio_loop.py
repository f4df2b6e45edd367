#!/usr/bin/env python3
"""How close trio itself gets to the blocking floor, with no JSON-RPC client at all.

Against ``bench/server.py`` over stdio, sequential round trips of one prepared line:

- ``blocking``: ``write`` then a blocking ``read`` (the floor of ``bench/run.py``);
- ``trio, one task``: ``write``, ``trio.lowlevel.wait_readable``, ``read``;
- ``trio, reader task``: a reader task reads and wakes the caller through a
  ``trio.Event`` (the shape of any client with one reader per connection).

    .venv/bin/python bench/trio_loop.py [--calls 5000]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

SERVER = [sys.executable, str(Path(__file__).resolve().parent / "server.py")]
LINE = (
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
    b'"params":{"name":"echo","arguments":{"text":"hello"}}}\n'
)


def report(label: str, calls: int, run: Callable[[], None]) -> None:
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    run()
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"{label:<20} {calls / wall:>9,.0f} round trips/s  {cpu / calls * 1e6:6.1f} us CPU each")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=5000)
    calls = parser.parse_args().calls
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    out, into = proc.stdin.fileno(), proc.stdout.fileno()

    def blocking() -> None:
        for _ in range(calls):
            os.write(out, LINE)
            os.read(into, 65536)

    report("blocking", calls, blocking)
    os.set_blocking(out, False)
    os.set_blocking(into, False)

    async def one_task() -> None:
        for _ in range(calls):
            os.write(out, LINE)
            await trio.lowlevel.wait_readable(into)
            os.read(into, 65536)

    async def reader_task() -> None:
        answered = trio.Event()

        async def reader() -> None:
            while True:
                await trio.lowlevel.wait_readable(into)
                os.read(into, 65536)
                answered.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            for _ in range(calls):
                answered = trio.Event()
                os.write(out, LINE)
                await answered.wait()
            nursery.cancel_scope.cancel()

    def in_trio(fn: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        return lambda: trio.run(fn)

    report("trio, one task", calls, in_trio(one_task))
    report("trio, reader task", calls, in_trio(reader_task))
    proc.stdin.close()
    proc.wait()
    proc.stdout.close()


if __name__ == "__main__":
    main()
