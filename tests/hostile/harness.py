"""What the measuring host's actions share: starting hostile servers, waiting for a
flood, connecting with a bounded wait, running the CLI, and the registry of actions.

An action is ``async def name(probe, params)``: it opens mcpl_host against one hostile
server, does its row's part, and leaves its figures in the :class:`Probe`.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import trio

from mcpl_host import Closed, Connection, StdioTarget

from .measure import MemorySampler
from .probe import Probe, connection_options

SERVERS = Path(__file__).parent / "servers"
ROOT = Path(__file__).parents[2]
Action = Callable[[Probe, dict[str, Any]], Awaitable[None]]
ACTIONS: dict[str, Action] = {}


def action(fn: Action) -> Action:
    """Register ``fn`` under its name, dashed (``deaf_flood``: ``deaf-flood``)."""
    ACTIONS[fn.__name__.replace("_", "-")] = fn
    return fn


def server_argv(name: str, *args: Any) -> list[str]:
    return [sys.executable, str(SERVERS / f"{name}.py"), *map(str, args)]


def stdio(name: str, *args: Any) -> StdioTarget:
    return StdioTarget.of(server_argv(name, *args))


@contextlib.contextmanager
def stats_file() -> Iterator[Path]:
    """Where a stdio server writes its counters (``--stats``)."""
    with tempfile.TemporaryDirectory(prefix="hostile-") as directory:
        yield Path(directory) / "stats.json"


def read_stats(path: Path) -> dict[str, Any]:
    try:
        value: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value


@contextlib.asynccontextmanager
async def network_server(name: str, *args: Any) -> AsyncIterator[str]:
    """A hostile HTTP or WebSocket server in a subprocess; yields its URL. It ends when
    its stdin closes."""
    process = subprocess.Popen(
        server_argv(name, *args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    assert process.stdin is not None
    try:
        url = (await trio.to_thread.run_sync(process.stdout.readline)).decode().strip()
        yield url
    finally:
        process.stdin.close()
        process.stdout.close()
        try:
            await trio.to_thread.run_sync(partial(process.wait, 5))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def http_stats(url: str) -> dict[str, Any]:
    def fetch() -> dict[str, Any]:
        with urllib.request.urlopen(url.replace("/mcp", "/stats"), timeout=5) as response:
            value: dict[str, Any] = json.loads(response.read())
            return value

    try:
        return await trio.to_thread.run_sync(fetch)
    except OSError:
        return {}


async def settle(
    count: Callable[[], int], reached: Callable[[int], bool], *, quiet: float, limit: float
) -> None:
    """Wait until ``count()`` is ``reached``, stops changing for ``quiet`` seconds, or
    ``limit`` seconds pass: a flood read (or refused), descriptors closed (or kept)."""
    deadline = trio.current_time() + limit
    last, since = count(), trio.current_time()
    while not reached(count()) and trio.current_time() < deadline:
        await trio.sleep(0.05)
        now = count()
        if now != last:
            last, since = now, trio.current_time()
        elif trio.current_time() - since >= quiet:
            return


class Inbound:
    """Lines read by the connection (``on_wire``), and whether it closed (``on_event``)."""

    def __init__(self) -> None:
        self.lines = 0
        self.closed: str | None = None

    def on_wire(self, direction: str, _line: bytes) -> None:
        if direction == "in":
            self.lines += 1

    def on_event(self, event: Any) -> None:
        if isinstance(event, Closed):
            self.closed = event.reason


def limits(probe: Probe, p: dict[str, Any]) -> dict[str, Any]:
    """The bounds a row configures (``max_owed_answers``, ``max_batch_entries``,
    ``max_message_bytes``), those Connection has; recorded with the figures."""
    options = connection_options(
        max_owed_answers=p.get("max_owed_answers"),
        max_batch_entries=p.get("max_batch_entries"),
        max_message_bytes=p.get("max_message_bytes"),
    )
    probe.extra["options"] = options
    return options


@contextlib.asynccontextmanager
async def connected(
    probe: Probe, conn: Connection, *, timeout: float, label: str = "connect"
) -> AsyncIterator[Connection | None]:
    """Connect (recorded as the call ``label``) in a nursery of our own, so that a
    connect that hangs can be given up on; yields None when it failed; closes timed."""
    async with trio.open_nursery() as nursery:
        started = await probe.call(label, partial(nursery.start, conn.run), timeout=timeout)
        try:
            yield started
        finally:
            if started is not None:
                await probe.close(conn.aclose)
            else:
                probe.peaks()


async def run_cli(args: list[str], *, timeout: float) -> dict[str, Any]:
    """``python -m mcpl_host.cli ARGS`` with its peak RSS (sampled from /proc), whether
    stdout was one JSON object, and whether stderr holds a traceback."""

    def run() -> dict[str, Any]:
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpl_host.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        sampler = MemorySampler(process.pid).start()
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        sampler.stop()
        try:
            report = json.loads(out)
        except ValueError:
            report = None
        return {
            "exit": process.returncode,
            "seconds": round(time.monotonic() - started, 3),
            "peak_rss": sampler.peak,
            "json": isinstance(report, dict),
            "ok": report.get("ok") if isinstance(report, dict) else None,
            "error_kind": (report.get("error") or {}).get("kind")
            if isinstance(report, dict)
            else None,
            "stdout_lines": len(out.splitlines()),
            "stderr_lines": len(err.splitlines()),
            "traceback": "Traceback" in err,
            "stderr_tail": err[-600:],
        }

    return await trio.to_thread.run_sync(run)
