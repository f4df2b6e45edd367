"""Lifecycle rules of a stdio server's process: it ends on stdin's EOF and on SIGTERM
(basic/lifecycle#shutdown), and its stdout holds nothing but JSON-RPC messages
(basic/transports#stdio). Other transports have no process: the rules do not apply."""

from __future__ import annotations

import signal
import time
from collections.abc import Awaitable, Callable

import trio

from .context import Context
from .rules import probe, rule
from .wire import StreamWire, Wire

STDIN_EOF = rule(
    "lifecycle.stdin-eof",
    "a stdio server exits soon after its stdin is closed",
    revision="2024-11-05",
    section="basic/lifecycle#stdio",
    level="SHOULD",
)
SIGTERM = rule(
    "lifecycle.sigterm",
    "a stdio server exits soon after SIGTERM",
    revision="2024-11-05",
    section="basic/lifecycle#stdio",
    level="SHOULD",
)
STDOUT_JSON_RPC = rule(
    "lifecycle.stdout-json-rpc",
    "a stdio server writes nothing to stdout that is not a JSON-RPC message",
    revision="2024-11-05",
    section="basic/transports#stdio",
)


def _stdio(ctx: Context, rule_id: str) -> bool:
    if ctx.kind != "stdio":
        ctx.not_applicable(rule_id, f"a {ctx.kind} server has no process the checker started")
        return False
    return True


async def _exits(ctx: Context, wire: Wire) -> tuple[bool, str]:
    """Wait up to the exit grace for the server's process to end; note how it did."""
    assert isinstance(wire, StreamWire)
    assert wire.process is not None
    process = wire.process
    start = time.monotonic()
    with trio.move_on_after(ctx.options.exit_grace):
        await process.wait()
    took = time.monotonic() - start
    if process.returncode is None:
        wire.note("·", f"still running after {ctx.options.exit_grace:g} s")
        return False, f"still running after {ctx.options.exit_grace:g} s"
    status = process.returncode
    how = f"killed by signal {-status}" if status < 0 else f"status {status}"
    wire.note("·", f"exited ({how}) after {took:.2f} s")
    return True, f"exited ({how}) after {took:.2f} s"


async def _ends_after(
    ctx: Context, rule_id: str, what: str, action: Callable[[StreamWire], Awaitable[None]]
) -> None:
    """In a fresh session, do ``action`` to the server (``what`` names it) and judge
    ``rule_id`` by whether its process exits within the exit grace."""
    if not _stdio(ctx, rule_id):
        return
    async with ctx.session() as wire:
        assert isinstance(wire, StreamWire)
        await action(wire)
        exited, detail = await _exits(ctx, wire)
        if exited:
            ctx.passed(rule_id, f"{what}: {detail}", wire)
        else:
            ctx.failed(rule_id, f"{what}: {detail}", wire)


@probe(STDIN_EOF)
async def stdin_eof(ctx: Context) -> None:
    await _ends_after(ctx, STDIN_EOF, "stdin closed", StreamWire.close_input)


@probe(SIGTERM)
async def sigterm(ctx: Context) -> None:
    async def terminate(wire: StreamWire) -> None:
        assert wire.process is not None
        # The process alone, not its group: the rule is about the server itself (a
        # wrapper such as npx that forwards nothing is what the rule should show).
        wire.note("·", "sent SIGTERM to the server's process")
        wire.process.send_signal(signal.SIGTERM)

    await _ends_after(ctx, SIGTERM, "SIGTERM", terminate)


@probe(STDOUT_JSON_RPC)
async def stdout_json_rpc(ctx: Context) -> None:
    if not _stdio(ctx, STDOUT_JSON_RPC):
        return
    facts = await ctx.facts()
    noise: list[str] = []
    async with ctx.session() as wire:
        assert isinstance(wire, StreamWire)
        # A representative session: the handshake (sent), a ping, a list, an unknown
        # method, then the end of input: every line the server writes meanwhile counts.
        requests = [wire.request("ping")] if facts.version is not None else []
        requests.append(wire.request("tools/list", {}))
        requests.append(wire.request("mcpl-host-check/no-such-method", {}))
        for request in requests:
            await wire.send(request)
        last = requests[-1]["id"]
        lines = await wire.received_within(
            ctx.timeout,
            until=lambda r: isinstance(r.value, dict) and r.value.get("id") == last,
        )
        await wire.close_input()
        lines += await wire.received_within(min(ctx.timeout, ctx.options.exit_grace))
        noise = [r.raw.decode("utf-8", "replace") for r in lines if not r.is_json_rpc]
        evidence = wire.since()
    if noise:
        ctx.failed(
            STDOUT_JSON_RPC,
            f"{len(noise)} line(s) on stdout are not JSON-RPC messages",
            evidence,
        )
    else:
        ctx.passed(STDOUT_JSON_RPC, f"all {len(lines)} lines on stdout were JSON-RPC", evidence)
