"""The rows over stdio (and the deaf flood over a WebSocket too): floods, batches, bad
numbers and bytes, unmatched responses, writes to a server that stopped reading."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import trio

from mcpl_host import Connection, McplHostError

from .harness import (
    Inbound,
    action,
    connected,
    limits,
    network_server,
    read_stats,
    settle,
    stats_file,
    stdio,
)
from .probe import Probe, supported


@action
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
            await settle(
                lambda: inbound.lines,
                lambda lines: lines > p["count"],
                quiet=0.5,
                limit=p["limit"],
            )
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


@action
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


@action
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
            # The server answers the host's ping once the array's answer is in (or
            # then): the ping's answer says the host wrote its answer.
            "--wait",
            max(p["timeout"] - 2, 1),
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


@action
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


@action
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


@action
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


@action
async def unmatched(probe: Probe, p: dict[str, Any]) -> None:
    """Unmatched responses, or pings past the bound on server requests in flight."""
    probe.baseline()
    target = stdio("unmatched", "--kind", p["kind"], "--count", p["count"])
    async with connected(probe, Connection(target, **limits(probe, p)), timeout=10) as conn:
        if conn is not None:
            await probe.call("ping", partial(conn.request, "ping"), timeout=p["timeout"])


@action
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

            async def fill() -> None:
                # The pipe filled by a notification that cannot go out either (however
                # the host gives up on it: that is the first connection's figure).
                with contextlib.suppress(McplHostError):
                    await conn.notify("notifications/hostile", {"pad": pad})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(fill)
                await trio.sleep(0.2)
                kwargs = supported(conn.set_roots, timeout=timeout)
                await probe.call(
                    "set_roots", partial(conn.set_roots, ["file:///b"], **kwargs), timeout=timeout
                )
                nursery.cancel_scope.cancel()
