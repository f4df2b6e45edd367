#!/usr/bin/env python3
"""tools/list + N tools/call against @modelcontextprotocol/server-everything: mcpl_host next
to the official MCP Python SDK.

Each client, in a fresh process of its own (so CPU time and peak RSS are the client's),
starts the node server, initializes, then times ``tools/list`` followed by N
``tools/call echo {"message": "hello"}``, one at a time and, in a second mode, with 64 in
flight. Every answer must read ``Echo: hello``. The runs alternate between the clients
(this machine is noisy) and the table shows medians and ratios. The *floor* is no client
at all: blocking writes of prepared lines and readline, what the node server and the
pipes allow one call at a time.

    scripts/test                  # once: npm ci installs server-everything
    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python bench/everything.py [--runs 5] [--calls 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = ROOT / "tests/interop/node/node_modules/@modelcontextprotocol/server-everything"
SERVER = [shutil.which("node") or "node", str(EVERYTHING / "dist/index.js"), "stdio"]
ARGS = {"message": "hello"}
EXPECTED = "Echo: hello"
INFLIGHT = 64
TIMEOUT = 60.0


class Clock:
    """Wall and CPU time of the phases of one child, reported as one JSON line."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.started = (time.perf_counter(), time.process_time())
        self.connect_s = 0.0
        self.tools = 0

    def connected(self) -> None:
        self.connect_s = time.perf_counter() - self.started[0]
        self.started = (time.perf_counter(), time.process_time())

    def report(self) -> None:
        wall = time.perf_counter() - self.started[0]
        cpu = time.process_time() - self.started[1]
        status = Path("/proc/self/status").read_text()  # VmHWM: this image's own peak
        hwm = re.search(r"^VmHWM:\s+(\d+)", status, re.MULTILINE)
        result = {
            "connect_s": self.connect_s,
            "row_s": wall,
            "calls_per_s": self.calls / wall,
            "cpu_s_per_1k": cpu / self.calls * 1000,
            "peak_rss_mib": int(hwm.group(1)) / 1024 if hwm else float("nan"),
            "tools": self.tools,
        }
        print(json.dumps(result))


def shares(calls: int, workers: int) -> list[int]:
    """``calls`` split over ``workers`` (the first ones take one more)."""
    return [calls // workers + (i < calls % workers) for i in range(workers)]


def run_floor(_mode: str, calls: int) -> None:
    """No client: blocking write + readline of prepared lines, skipping the server's
    notifications. No JSON-RPC client can be faster one call at a time."""
    clock = Clock(calls)
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def ask(line: bytes) -> bytes:
        stdin.write(line)
        stdin.flush()
        while (answer := stdout.readline()).startswith(b'{"method"'):
            pass  # notifications/tools/list_changed and the like
        return answer

    ask(
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}\n'
    )
    stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    clock.connected()
    listing = ask(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
    call = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}\n'
    answers = [ask(call) for _ in range(calls)]
    clock.tools = len(json.loads(listing)["result"]["tools"])
    clock.report()
    assert all(EXPECTED.encode() in answer for answer in answers), answers[:3]
    stdin.close()
    proc.wait()


async def calls_in(mode: str, calls: int, one: Callable[[], Awaitable[str]], group: Any) -> None:
    """``calls`` of ``one`` one after another, or spread over 64 tasks started in ``group``
    (a trio nursery or an anyio task group, both with ``start_soon``); every answer is
    checked."""

    async def worker(n: int) -> None:
        for _ in range(n):
            if (text := await one()) != EXPECTED:
                raise AssertionError(f"echo answered {text!r}")

    if mode == "sequential":
        await worker(calls)
        return
    async with group() as tasks:
        for n in shares(calls, INFLIGHT):
            tasks.start_soon(worker, n)


def run_ours(mode: str, calls: int) -> None:
    import logging

    import structlog
    import trio

    # The application decides what is logged; per-message debug events are not wanted here.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    from mcpl_host import Connection, StdioTarget

    async def main() -> None:
        clock = Clock(calls)
        async with Connection(StdioTarget.of(SERVER), request_timeout=TIMEOUT) as conn:
            clock.connected()
            clock.tools = len(await conn.list_tools())

            async def one() -> str:
                return (await conn.call_tool("echo", ARGS)).text

            await calls_in(mode, calls, one, trio.open_nursery)
            clock.report()

    trio.run(main)


def run_sdk(mode: str, calls: int) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import TextContent

    async def main() -> None:
        clock = Clock(calls)
        params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            clock.connected()
            clock.tools = len((await session.list_tools()).tools)

            async def one() -> str:
                result = await session.call_tool("echo", ARGS, read_timeout_seconds=TIMEOUT)
                block = result.content[0]
                return block.text if isinstance(block, TextContent) else repr(block)

            await calls_in(mode, calls, one, anyio.create_task_group)
            clock.report()

    anyio.run(main)


CHILDREN = {"ours": run_ours, "sdk": run_sdk, "floor": run_floor}


def measure(client: str, mode: str, calls: int) -> dict[str, float]:
    # node reads NODE_EXTRA_CA_CERTS at start (≈45 ms for a system bundle). mcpl_host passes
    # it on to servers (allowlisted for TLS), the SDK's default environment drops it: unset
    # here, every node starts alike and connect+init compares the clients.
    env = {name: value for name, value in os.environ.items() if name != "NODE_EXTRA_CA_CERTS"}
    out = subprocess.run(
        [sys.executable, __file__, f"--calls={calls}", f"--child={client}:{mode}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    # The server's one line at start is expected; anything else (a warning) is shown.
    stderr = [
        line for line in out.stderr.splitlines() if line != "Starting default (STDIO) server..."
    ]
    if out.returncode != 0 or stderr:
        print(f"-- {client} {mode}, exit {out.returncode}:", *stderr, sep="\n", file=sys.stderr)
    out.check_returncode()
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="alternating runs per client")
    parser.add_argument("--calls", type=int, default=1000, help="tools/call per run")
    parser.add_argument("--child", help="internal: CLIENT:MODE, one measurement")
    args = parser.parse_args()
    if args.child:
        client, mode = args.child.split(":")
        CHILDREN[client](mode, args.calls)
        return 0
    if not Path(SERVER[1]).is_file():
        print(f"{SERVER[1]} is missing: run scripts/test (npm ci)", file=sys.stderr)
        return 2
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("the official SDK is missing: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    cases = [("ours", "sequential"), ("sdk", "sequential"), ("ours", "inflight")]
    cases += [("sdk", "inflight"), ("floor", "sequential")]
    results: dict[tuple[str, str], list[dict[str, float]]] = {case: [] for case in cases}
    for _ in range(args.runs):
        for case in cases:  # alternate, so drift hits every client alike
            results[case].append(measure(*case, args.calls))

    def med(case: tuple[str, str], key: str) -> float:
        return statistics.median(r[key] for r in results[case])

    def spread(case: tuple[str, str]) -> str:
        rates = [r["calls_per_s"] for r in results[case]]
        return f"{min(rates):,.0f}-{max(rates):,.0f}"

    version = json.loads((EVERYTHING / "package.json").read_text())["version"]
    print(
        f"\npython {sys.version.split()[0]}; server-everything {version}; tools/list + "
        f"{args.calls} tools/call per run; medians of {args.runs} alternating runs\n"
    )
    print("| client | mode | connect+init s | tools/list + calls s | calls/s | CPU s / 1k calls "
          "| peak RSS MiB | calls/s min-max |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    labels = {"ours": "mcpl_host", "sdk": "mcp (official SDK)", "floor": "floor (no client)"}
    for case in cases:
        print(
            f"| {labels[case[0]]} | {case[1]} | {med(case, 'connect_s'):.3f} "
            f"| {med(case, 'row_s'):.3f} | {med(case, 'calls_per_s'):,.0f} "
            f"| {med(case, 'cpu_s_per_1k'):.3f} | {med(case, 'peak_rss_mib'):.1f} "
            f"| {spread(case)} |"
        )
    keys = ("connect_s", "row_s", "calls_per_s", "cpu_s_per_1k", "peak_rss_mib")
    for mode in ("sequential", "inflight"):
        ratios = [med(("sdk", mode), key) / med(("ours", mode), key) for key in keys]
        ratios[2] = 1 / ratios[2]  # calls/s: more is better
        print(f"| ratio | {mode} | " + " | ".join(f"{r:.2f}x" for r in ratios) + " | |")
    print("(ratio: the SDK over mcpl_host for times, CPU and RSS, mcpl_host over the SDK for")
    print(" calls/s: above 1 favours mcpl_host)")
    floor = med(("floor", "sequential"), "calls_per_s")
    print(
        f"\nfloor: {floor:,.0f} sequential calls/s; mcpl_host reaches "
        f"{med(('ours', 'sequential'), 'calls_per_s') / floor:.0%} of it, the SDK "
        f"{med(('sdk', 'sequential'), 'calls_per_s') / floor:.0%}"
    )
    tools = {int(r["tools"]) for runs in results.values() for r in runs}
    print(f"tools/list returned {' or '.join(map(str, sorted(tools)))} tools")
    return 0


if __name__ == "__main__":
    sys.exit(main())
