"""The rows about listings and the CLI: huge pages (the CLI, the manager) and results
of the wrong shape in the CLI's readable output."""

from __future__ import annotations

from functools import partial
from typing import Any

from mcpl_host.manager import ConnectionManager

from .harness import action, run_cli, server_argv, stdio
from .probe import Probe


@action
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


@action
async def big_pages_manager(probe: Probe, p: dict[str, Any]) -> None:
    """ConnectionManager.list_tools over huge pages (the catalogue collects them all)."""
    probe.extra["page_mb"] = round(p["bytes"] / 2**20, 1)
    probe.extra["pages"] = p["pages"]
    target = stdio("big_page", "--bytes", p["bytes"], "--pages", p["pages"])
    probe.baseline()
    async with ConnectionManager(
        {"big": target}, reconnect=None, request_timeout=p["timeout"]
    ) as m:
        await m.wait_ready(timeout=p["timeout"])
        listing = await probe.call(
            "list_tools", partial(m.list_tools, timeout=p["timeout"]), timeout=p["timeout"]
        )
        if listing is not None:
            probe.extra["tools"] = len(listing.entries)
            error = listing.errors.get("big")
            if error is not None:  # the manager reports a server's failure, never raises
                probe.calls["list_tools"].update(
                    outcome=type(error).__name__, typed=True, error=str(error)[:160]
                )
            del listing
        await probe.close(m.aclose)


@action
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
