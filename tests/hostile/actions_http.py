"""The rows over Streamable HTTP: requests never answered, headers never sent, a GET
stream ended at once, an event past the bound, a session id that is not ASCII."""

from __future__ import annotations

from functools import partial
from typing import Any

import trio

from mcpl_host import Connection, HttpTarget

from .harness import action, connected, http_stats, limits, network_server, run_cli, settle
from .measure import open_fds
from .probe import Probe


@action
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
                # Closes may still be landing: wait until none is left or none lands.
                await settle(open_fds, lambda now: now <= fds, quiet=0.5, limit=5)
                probe.extra["timed_out"] = outcomes
                probe.extra["fds_held_open"] = open_fds() - fds
                probe.extra["server_holding"] = (await http_stats(url)).get("holding", 0)
                await probe.call("ping", partial(conn.request, "ping"), timeout=p["ping_timeout"])


@action
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


@action
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


@action
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


@action
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
