#!/usr/bin/env python3
"""The Streamable HTTP transport's bounds, measured against hostile servers (issue 17).

Each server is tests/transports/hostile_http.py, run in a subprocess so that its sockets
are not counted as the host's:

- ``timeouts``: 100 requests the server never answers (no response headers), each
  given up by its request timeout, one after another: the host's open file descriptors
  before and after, and whether a later request is still answered;
- ``headers``: how long a request waits for response headers with ``HttpTarget(timeout=3)``
  and a request timeout of 60 s, and how it fails;
- ``reopen``: GET streams opened per second when every GET stream says ``retry: 0`` and
  ends at once, over a window of ``--window`` seconds;
- ``big-event``: a 50 MB event on a request's event stream: how long the request takes
  to fail, and the host's peak RSS growth.

Prints one table; measures, asserts nothing.

    .venv/bin/python scripts/http_limits.py
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import trio

from mcpl_host import Connection, HttpTarget, McplHostError

SERVER = Path(__file__).resolve().parent.parent / "tests" / "transports" / "hostile_http.py"


@contextlib.contextmanager
def hostile(mode: str, arg: str = "") -> Iterator[str]:
    """The server's base URL while it runs."""
    args = [sys.executable, str(SERVER), mode, *([arg] if arg else [])]
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            port = process.stdout.readline().split()[1]
            yield f"http://127.0.0.1:{port}"
        finally:
            process.kill()


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def stats(base: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{base}/stats", timeout=5) as answer:
        counts: dict[str, int] = json.loads(answer.read())
    return counts


async def timeouts(count: int) -> list[tuple[str, str]]:
    with hostile("hang") as base:
        async with Connection(HttpTarget(f"{base}/mcp", timeout=30), request_timeout=0.05) as conn:
            await conn.request("ping")
            before = fds()
            failures: set[str] = set()
            for _ in range(count):
                try:
                    await conn.request("tools/call", {"name": "x"})
                except McplHostError as exc:
                    failures.add(type(exc).__name__)
            await trio.sleep(0.5)  # the cancel notices POSTed, their answers read
            after = fds()
            try:
                with trio.fail_after(10):
                    await conn.request("ping", timeout=10)
                later = "answered"
            except (McplHostError, trio.TooSlowError) as exc:
                later = f"failed: {type(exc).__name__}"
    return [
        (f"{count} timed-out requests", ", ".join(sorted(failures))),
        ("fds before", str(before)),
        ("fds after", f"{after} ({after - before:+d})"),
        ("a later ping", later),
    ]


async def headers(timeout: float) -> list[tuple[str, str]]:
    with hostile("hang") as base:
        async with Connection(HttpTarget(f"{base}/mcp", timeout=timeout), request_timeout=60) as c:
            began = time.monotonic()
            try:
                await c.request("tools/call", {"name": "x"})
                outcome = "answered"
            except McplHostError as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            waited = time.monotonic() - began
    return [
        (f"no headers, HttpTarget(timeout={timeout:g})", f"failed after {waited:.2f} s"),
        ("  as", outcome[:100]),
    ]


async def reopen(window: float) -> list[tuple[str, str]]:
    with hostile("retry0") as base:
        async with Connection(HttpTarget(f"{base}/mcp")):
            start = stats(base)["gets"]
            await trio.sleep(window)
            opened = stats(base)["gets"] - start
    return [(f"GET streams, retry: 0, over {window:g} s", f"{opened} ({opened / window:.1f}/s)")]


async def big_event(megabytes: int) -> list[tuple[str, str]]:
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with hostile("big-event", str(megabytes)) as base:
        async with Connection(HttpTarget(f"{base}/mcp"), request_timeout=30) as conn:
            began = time.monotonic()
            try:
                await conn.request("tools/call", {"name": "x"})
                outcome = "answered"
            except McplHostError as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            waited = time.monotonic() - began
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    return [
        (f"a {megabytes} MB event", f"failed after {waited:.2f} s"),
        ("  as", outcome[:100]),
        ("  peak RSS growth", f"{grown:.0f} MB"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--window", type=float, default=3.0)
    parser.add_argument("--megabytes", type=int, default=50)
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    rows += trio.run(timeouts, args.count)
    rows += trio.run(headers, args.timeout)
    rows += trio.run(reopen, args.window)
    rows += trio.run(big_event, args.megabytes)
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
