"""The measuring host: opens mcpl_host against one hostile server, does one row's
action, prints one JSON object of figures on stdout.

    python -m tests.hostile.host ROW '{"count": 30000}'

(from the repository root). Each row is a function below; its parameters come as JSON,
so the tests run small versions and scripts/hostile.py the issue's sizes. The hostile
servers are scripts in ``servers/``; the stdio ones are spawned by the connection, the
HTTP and WebSocket ones by this process (their startup is before the baseline).
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

from mcpl_host import (
    Closed,
    Connection,
    HttpTarget,
    StdioTarget,
)
from mcpl_host.manager import ConnectionManager

from .measure import LogCounter, MemorySampler, TaskCounter, open_fds
from .probe import Probe, connection_options, supported

SERVERS = Path(__file__).parent / "servers"
ROOT = Path(__file__).parents[2]
Row = Callable[[Probe, dict[str, Any]], Awaitable[None]]
ROWS: dict[str, Row] = {}


def row(fn: Row) -> Row:
    ROWS[fn.__name__.replace("_", "-")] = fn
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


async def settle(count: Callable[[], int], goal: int, *, quiet: float, limit: float) -> None:
    """Wait until ``count()`` reaches ``goal``, stops growing for ``quiet`` seconds, or
    ``limit`` seconds pass: how long a flood takes to be read (or refused)."""
    deadline = trio.current_time() + limit
    last, since = count(), trio.current_time()
    while count() < goal and trio.current_time() < deadline:
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


# -- stdio floods ------------------------------------------------------------------------


@row
async def deaf_flood(probe: Probe, p: dict[str, Any]) -> None:
    """Requests flood in after the handshake; the server never reads again."""
    inbound = Inbound()
    roots = [f"file:///hostile/root-{i}/" + "r" * 80 for i in range(p.get("roots", 1))]
    options = limits(probe, p)
    probe.baseline()
    async with (
        network_or_stdio(p, "deaf_flood") as target,
        connected(
            probe,
            Connection(
                target,
                roots=roots,
                on_wire=inbound.on_wire,
                on_event=inbound.on_event,
                request_timeout=p["timeout"],
                **options,
            ),
            timeout=10,
        ) as conn,
    ):
        if conn is not None:
            await settle(lambda: inbound.lines, p["count"] + 1, quiet=0.5, limit=p["limit"])
            probe.extra["lines_read"] = inbound.lines
            await probe.call("ping", partial(conn.request, "ping"), timeout=p["timeout"])
            probe.extra["closed_by_host"] = inbound.closed


@contextlib.asynccontextmanager
async def network_or_stdio(p: dict[str, Any], name: str) -> AsyncIterator[Any]:
    if p.get("transport") == "ws":
        async with network_server(f"ws_{name}", "--count", p["count"]) as url:
            yield url  # parsed as a WebSocketTarget
    else:
        yield stdio(name, "--count", p["count"], "--kind", p.get("kind", "roots"))


@row
async def preinit_pings(probe: Probe, p: dict[str, Any]) -> None:
    """Pings before the answer to initialize; never reads after initialize."""
    options = limits(probe, p)
    probe.baseline()
    conn = Connection(
        stdio("preinit_pings", "--count", p["count"]),
        initialize_timeout=p["timeout"],
        **options,
    )
    async with connected(probe, conn, timeout=p["timeout"]):
        pass


@row
async def batch(probe: Probe, p: dict[str, Any]) -> None:
    """One huge array after the handshake (a batch, or under 2025-11-25 an array to
    refuse); then the host's ping must still be answered."""
    options = limits(probe, p)
    with stats_file() as path:
        target = stdio(
            "batch_flood",
            "--kind",
            p["kind"],
            "--entries",
            p.get("entries", 0),
            "--bytes",
            p.get("bytes", 0),
            "--version",
            p["version"],
            "--stats",
            path,
        )
        probe.baseline()
        async with connected(probe, Connection(target, **options), timeout=10) as conn:
            if conn is not None:
                probe.extra["protocol_version"] = conn.protocol_version
                await probe.call("ping", partial(conn.request, "ping"), timeout=p["timeout"])
        await trio.sleep(0.2)
        stats = read_stats(path)
    probe.extra["array_bytes"] = stats.get("array_bytes")
    probe.extra["bytes_answered"] = stats.get("bytes_in")


@row
async def bad_numbers(probe: Probe, p: dict[str, Any]) -> None:
    """Huge integer ids and deep nesting; the host's ping after them."""
    with stats_file() as path:
        target = stdio("bad_numbers", "--count", p["count"], "--stats", path)
        probe.baseline()
        async with connected(probe, Connection(target), timeout=10) as conn:
            if conn is not None:
                await probe.call("ping", partial(conn.request, "ping"), timeout=p["timeout"])
        await trio.sleep(0.2)
        stats = read_stats(path)
    probe.extra["sent"] = stats.get("sent")
    probe.extra["invalid_request_answers"] = stats.get("invalid_request_answers", 0)


@row
async def bad_utf8(probe: Probe, p: dict[str, Any]) -> None:
    """Invalid UTF-8 in a batch entry and in a message whose typed decode fails."""
    with stats_file() as path:
        target = stdio("bad_utf8", "--version", p["version"], "--stats", path)
        probe.baseline()
        async with connected(probe, Connection(target), timeout=10) as conn:
            if conn is not None:
                await probe.call("ping", partial(conn.request, "ping"), timeout=p["timeout"])
        await trio.sleep(0.2)
        stats = read_stats(path)
    probe.extra["batch_answered"] = stats.get("answered", [])
    probe.extra["single_answered"] = stats.get("single_answered")


@row
async def surrogate(probe: Probe, p: dict[str, Any]) -> None:
    """A lone surrogate in a tool's result."""
    probe.baseline()
    async with connected(probe, Connection(stdio("surrogate")), timeout=10) as conn:
        if conn is not None:
            await probe.call(
                "tools/call",
                partial(conn.call_tool, "listing", {}, timeout=p["timeout"]),
                timeout=p["timeout"],
            )


@row
async def unmatched(probe: Probe, p: dict[str, Any]) -> None:
    """Unmatched responses, or pings past the bound on server requests in flight."""
    probe.baseline()
    target = stdio("unmatched", "--kind", p["kind"], "--count", p["count"])
    async with connected(probe, Connection(target, **limits(probe, p)), timeout=10) as conn:
        if conn is not None:
            await probe.call("ping", partial(conn.request, "ping"), timeout=p["timeout"])


@row
async def deaf_notify(probe: Probe, p: dict[str, Any]) -> None:
    """notify() and set_roots() to a server that stopped reading, each on a connection
    of its own: a notification too big for the pipe, then set_roots behind one."""
    timeout = p["timeout"]
    pad = "x" * p["pad"]
    probe.baseline()
    async with connected(probe, Connection(stdio("deaf_flood", "--count", 0)), timeout=10) as conn:
        if conn is not None:
            kwargs = supported(conn.notify, timeout=timeout)
            probe.extra["notify_has_timeout"] = bool(kwargs)
            await probe.call(
                "notify",
                partial(conn.notify, "notifications/hostile", {"pad": pad}, **kwargs),
                timeout=timeout,
            )
    second = Connection(stdio("deaf_flood", "--count", 0), roots=["file:///a"])
    async with connected(probe, second, timeout=10, label="connect 2") as conn:
        if conn is not None:
            async with trio.open_nursery() as nursery:
                # The pipe filled by a notification that cannot go out in time either.
                nursery.start_soon(
                    lambda: conn.notify("notifications/hostile", {"pad": pad}), name="filler"
                )
                await trio.sleep(0.2)
                kwargs = supported(conn.set_roots, timeout=timeout)
                await probe.call(
                    "set_roots", partial(conn.set_roots, ["file:///b"], **kwargs), timeout=timeout
                )
                nursery.cancel_scope.cancel()


# -- listings ------------------------------------------------------------------------------


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


@row
async def big_page_cli(probe: Probe, p: dict[str, Any]) -> None:
    """``mcpl-host connect --json`` against one huge tools/list page; the growth is the
    CLI's peak RSS over its peak against a one-tool page."""
    probe.baseline()
    control = await run_cli(
        ["connect", "--json", "--", *server_argv("big_page", "--bytes", 200)], timeout=60
    )
    big = await run_cli(
        ["connect", "--json", "--", *server_argv("big_page", "--bytes", p["bytes"])],
        timeout=p["timeout"] + 30,
    )
    probe.extra["cli"] = big
    probe.extra["page_mb"] = round(p["bytes"] / 2**20, 1)
    probe.extra["cli_rss_growth_mb"] = round((big["peak_rss"] - control["peak_rss"]) / 2**20, 1)
    outcome = "answered" if big["ok"] else big["error_kind"] or "no report"
    probe.calls["cli connect"] = {
        "outcome": outcome,
        "typed": big["json"] and not big["traceback"],
        "seconds": big["seconds"],
        "timeout": p["timeout"],
    }


@row
async def big_pages_manager(probe: Probe, p: dict[str, Any]) -> None:
    """ConnectionManager.list_tools over huge pages (the catalogue collects them all)."""
    probe.extra["page_mb"] = round(p["bytes"] / 2**20, 1)
    probe.extra["pages"] = p["pages"]
    target = stdio("big_page", "--bytes", p["bytes"], "--pages", p["pages"])
    probe.baseline()
    async with ConnectionManager(
        {"big": target}, reconnect=None, request_timeout=p["timeout"]
    ) as m:
        listing = await probe.call(
            "list_tools", partial(m.list_tools, timeout=p["timeout"]), timeout=p["timeout"]
        )
        if listing is not None:
            probe.extra["tools"] = len(listing.tools)
            error = listing.errors.get("big")
            if error is not None:  # the manager reports a server's failure, never raises
                probe.calls["list_tools"].update(
                    outcome=type(error).__name__, typed=True, error=str(error)[:160]
                )
            del listing
        await probe.close(m.aclose)


@row
async def wrong_shapes(probe: Probe, p: dict[str, Any]) -> None:
    """The CLI's readable output for results whose members have the wrong type."""
    probe.baseline()
    argv = ["--", *server_argv("wrong_shapes")]
    runs = {
        "connect": ["connect", *argv],
        "tool": ["call", "--tool", "t", *argv],
        "resource": ["call", "--resource", "file:///r", *argv],
        "prompt": ["call", "--prompt", "p", *argv],
    }
    for name, args in runs.items():
        done = await run_cli(args, timeout=p["timeout"])
        probe.calls[f"cli {name}"] = {
            "outcome": "traceback" if done["traceback"] else f"exit {done['exit']}",
            "typed": not done["traceback"] and done["stdout_lines"] > 0,
            "seconds": done["seconds"],
            "timeout": p["timeout"],
            "stdout_lines": done["stdout_lines"],
            "stderr_tail": done["stderr_tail"][-300:],
        }


# -- HTTP ----------------------------------------------------------------------------------


@row
async def http_timeouts(probe: Probe, p: dict[str, Any]) -> None:
    """Requests a server never answers (an event stream with no event), timed out by
    the host, then one it does answer."""
    probe.baseline()
    async with network_server("http_hang", "--mode", "open") as url:
        target = HttpTarget(url, timeout=p["target_timeout"])
        async with connected(probe, Connection(target), timeout=10) as conn:
            if conn is not None:
                fds = open_fds()
                outcomes: dict[str, int] = {}

                async def one() -> None:
                    try:
                        await conn.request("tools/call", {"name": "hang"}, timeout=p["timeout"])
                    except Exception as exc:
                        name = type(exc).__name__
                        outcomes[name] = outcomes.get(name, 0) + 1

                with trio.move_on_after(p["timeout"] + 10):
                    async with trio.open_nursery() as nursery:
                        for _ in range(p["count"]):
                            nursery.start_soon(one)
                await trio.sleep(0.3)  # closes in flight land
                probe.extra["timed_out"] = outcomes
                probe.extra["fds_held_open"] = open_fds() - fds
                probe.extra["server_holding"] = (await http_stats(url)).get("holding", 0)
                await probe.call("ping", partial(conn.request, "ping"), timeout=p["ping_timeout"])


@row
async def http_headers(probe: Probe, p: dict[str, Any]) -> None:
    """A server that never sends response headers: the target's timeout must bound
    the wait, well before the request's own timeout."""
    probe.baseline()
    async with network_server("http_hang", "--mode", "silent") as url:
        # Initialize is answered; only the later request hangs.
        target = HttpTarget(url, timeout=p["target_timeout"])
        async with connected(probe, Connection(target), timeout=10) as conn:
            if conn is not None:
                await probe.call(
                    "tools/call",
                    partial(conn.request, "tools/call", {"name": "hang"}, timeout=p["timeout"]),
                    timeout=p["timeout"],
                )
                probe.calls["tools/call"]["target_timeout"] = p["target_timeout"]


@row
async def http_retry0(probe: Probe, p: dict[str, Any]) -> None:
    """The GET stream ends at once with ``retry: 0``; how often is it reopened?"""
    probe.baseline()
    async with (
        network_server("http_retry0") as url,
        connected(probe, Connection(HttpTarget(url)), timeout=10) as conn,
    ):
        if conn is not None:
            before = (await http_stats(url)).get("gets", 0)
            await trio.sleep(p["window"])
            after = (await http_stats(url)).get("gets", 0)
            probe.extra["gets_in_window"] = after - before
            probe.extra["gets_per_second"] = round((after - before) / p["window"], 1)
            await probe.call("ping", partial(conn.request, "ping"), timeout=p["timeout"])


@row
async def http_big_event(probe: Probe, p: dict[str, Any]) -> None:
    """One event past the size bound, carrying the answer to a request."""
    probe.baseline()
    async with network_server("http_big_event", "--bytes", p["bytes"]) as url:
        options = limits(probe, p)
        async with connected(probe, Connection(HttpTarget(url), **options), timeout=10) as conn:
            if conn is not None:
                lines = probe.logs.lines
                await probe.call(
                    "tools/call",
                    partial(conn.request, "tools/call", {"name": "big"}, timeout=p["timeout"]),
                    timeout=p["timeout"],
                )
                probe.extra["log_lines_for_event"] = probe.logs.lines - lines


@row
async def http_session_id(probe: Probe, p: dict[str, Any]) -> None:
    """A session id that is not ASCII, through Connection and through the CLI."""
    probe.baseline()
    async with network_server("http_session_id") as url:
        async with connected(probe, Connection(HttpTarget(url)), timeout=p["timeout"]):
            pass
        done = await run_cli(["connect", "--json", url], timeout=p["timeout"] + 10)
    probe.calls["cli connect --json"] = {
        "outcome": "traceback"
        if done["traceback"]
        else (done["error_kind"] or "answered")
        if done["json"]
        else "no JSON",
        "typed": done["json"] and not done["traceback"],
        "seconds": done["seconds"],
        "timeout": p["timeout"],
        "stderr_tail": done["stderr_tail"][-300:],
    }


# -- running one row ---------------------------------------------------------------------


async def measure(name: str, params: dict[str, Any], tasks: TaskCounter, logs: LogCounter) -> Any:
    probe = Probe(tasks, logs)
    await ROWS[name](probe, params)
    figures = await probe.figures()
    return {"row": name, "params": params, **figures}


def main() -> None:
    name, params = sys.argv[1], json.loads(sys.argv[2] if len(sys.argv) > 2 else "{}")
    if name not in ROWS:
        sys.exit(f"unknown row {name!r}; rows: {', '.join(ROWS)}")
    tasks, logs = TaskCounter(), LogCounter()
    logs.install()
    figures = trio.run(measure, name, params, tasks, logs, instruments=[tasks])
    sys.stdout.write(json.dumps(figures) + "\n")
    sys.stdout.flush()
    os._exit(0)  # a hostile row may leave threads behind (the measuring is done)


if __name__ == "__main__":
    main()
