#!/usr/bin/env python3
"""tools/call round trips over stdio: mcpl_host next to the official MCP Python SDK.

Both clients talk to the same server (``python -m mcpl_host.demo``, a synchronous
msgspec server answering tools/call "echo"). Each measurement runs in a fresh client
process, so CPU time and peak RSS are the client's own; runs alternate between the
clients (this machine is noisy) and the table shows medians and the ratio.

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python scripts/bench_stdio.py [--runs 5] [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

SERVER = [sys.executable, "-m", "mcpl_host.demo"]
ARGS = {"text": "hello"}


def _peak_rss_mib() -> float:
    # VmHWM belongs to this process image; ru_maxrss would carry over the peak of the
    # parent that forked us (Linux keeps it across exec).
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _report(calls: int, wall: float, cpu: float) -> None:
    result = {
        "calls_per_s": calls / wall,
        "cpu_s_per_1k": cpu / calls * 1000,
        "peak_rss_mib": _peak_rss_mib(),
    }
    print(json.dumps(result))


def run_floor(_mode: str, calls: int) -> None:
    """No client at all: blocking write + readline of prepared bytes. What the server and
    the pipes allow; no JSON-RPC client can be faster sequentially."""
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}\n'
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}\n'
    proc.stdin.write(init)
    proc.stdin.flush()
    proc.stdout.readline()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        proc.stdin.write(call)
        proc.stdin.flush()
        proc.stdout.readline()
    _report(calls, time.perf_counter() - wall, time.process_time() - cpu)
    proc.stdin.close()
    proc.wait()


def run_ours(mode: str, calls: int) -> None:
    import logging

    import structlog
    import trio

    # The application decides what is logged; per-message debug events are not wanted here.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    from mcpl_host import Connection, StdioTarget

    async def main() -> None:
        async with Connection(StdioTarget.of(SERVER)) as conn:
            params = {"name": "echo", "arguments": ARGS}
            for _ in range(200):  # warm up
                await conn.request("tools/call", params)
            wall, cpu = time.perf_counter(), time.process_time()
            if mode == "sequential":
                for _ in range(calls):
                    await conn.request("tools/call", params)
            else:

                async def worker(n: int) -> None:
                    for _ in range(n):
                        await conn.request("tools/call", params)

                async with trio.open_nursery() as nursery:
                    for _ in range(64):
                        nursery.start_soon(worker, calls // 64)
            _report(calls, time.perf_counter() - wall, time.process_time() - cpu)

    trio.run(main)


def run_sdk(mode: str, calls: int) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> None:
        params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(200):
                await session.call_tool("echo", ARGS)
            wall, cpu = time.perf_counter(), time.process_time()
            if mode == "sequential":
                for _ in range(calls):
                    await session.call_tool("echo", ARGS)
            else:

                async def worker(n: int) -> None:
                    for _ in range(n):
                        await session.call_tool("echo", ARGS)

                async with anyio.create_task_group() as group:
                    for _ in range(64):
                        group.start_soon(worker, calls // 64)
            _report(calls, time.perf_counter() - wall, time.process_time() - cpu)

    anyio.run(main)


def measure(client: str, mode: str, calls: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", client, "--mode", mode, "--calls", str(calls)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2048)
    parser.add_argument("--child", choices=["ours", "sdk", "floor"])
    parser.add_argument("--mode", choices=["sequential", "inflight"], default="sequential")
    args = parser.parse_args()
    if args.child:
        {"ours": run_ours, "sdk": run_sdk, "floor": run_floor}[args.child](args.mode, args.calls)
        return 0
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("the official SDK is missing: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.runs):
        for mode in ("sequential", "inflight"):
            for client in ("ours", "sdk"):  # alternate, so drift hits both alike
                results.setdefault((client, mode), []).append(measure(client, mode, args.calls))
        results.setdefault(("floor", "sequential"), []).append(
            measure("floor", "sequential", args.calls)
        )

    def med(client: str, mode: str, key: str) -> float:
        return statistics.median(r[key] for r in results[(client, mode)])

    print(
        f"python {sys.version.split()[0]}; {args.calls} calls per run; medians of {args.runs} "
        "alternating runs"
    )
    header = (
        f"{'client':<20}{'sequential/s':>14}{'64 in flight/s':>16}{'CPU s/1k':>10}"
        f"{'peak RSS MiB':>14}"
    )
    print(header)
    rows: dict[str, Any] = {}
    for client, label in (("ours", "mcpl_host"), ("sdk", "mcp (official SDK)")):
        rows[client] = (
            med(client, "sequential", "calls_per_s"),
            med(client, "inflight", "calls_per_s"),
            med(client, "sequential", "cpu_s_per_1k"),
            max(
                r["peak_rss_mib"] for m in ("sequential", "inflight") for r in results[(client, m)]
            ),
        )
        seq, infl, cpu, rss = rows[client]
        print(f"{label:<20}{seq:>14,.0f}{infl:>16,.0f}{cpu:>10.3f}{rss:>14.1f}")
    (s1, i1, c1, r1), (s2, i2, c2, r2) = rows["ours"], rows["sdk"]
    print(f"{'ratio':<20}{s1 / s2:>13.1f}x{i1 / i2:>15.1f}x{c2 / c1:>9.1f}x{r2 / r1:>13.1f}x")
    print("(ratio: mcpl_host over the SDK for calls/s; the SDK over mcpl_host for CPU and RSS)")
    floor = med("floor", "sequential", "calls_per_s")
    print(
        f"pipe floor (blocking write+readline, no client): {floor:,.0f} sequential calls/s; "
        f"mcpl_host reaches {s1 / floor:.0%} of it, the SDK {s2 / floor:.0%}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
