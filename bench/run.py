#!/usr/bin/env python3
"""The client benchmark: mcpl_host next to the official MCP SDKs and a raw pipe floor.

Every client talks to the same server (``bench/server.py``, over stdio) and runs in a
fresh process of its own, so CPU time and peak RSS are the client's. One run of a client
measures, in this order: the import of the client library, ``--handshakes`` handshakes
(spawn the server, initialize, initialized; the median is kept), ``--calls`` sequential
``tools/call echo``, the same number with 64 in flight, ``--big-calls`` echoes of
``--big-bytes`` (1 MiB) one at a time. Every answer is checked. Runs alternate between
the clients (this machine is noisy) and the table shows medians and ratios.

Clients: ``mcpl_host`` (``Connection.call_tool``, typed, on trio), ``mcpl_host-asyncio``
(the same through ``mcpl_host.aio`` under ``asyncio.run``), ``python-sdk`` (``mcp``'s
``ClientSession.call_tool``), ``typescript-sdk`` (``@modelcontextprotocol/sdk``'s
``Client.callTool`` on node, ``bench/node/client.mjs``), ``floor`` (no JSON-RPC client:
blocking writes of prepared lines and ``readline``; 64 in flight is 64 lines written at
once, then 64 read).

Then, for mcpl_host only (the SDKs have neither): memory per idle connection with 1,000
connections open in one process to one server over a Unix socket, and the time from
``kill -9`` of a stdio server to the connection being back (``Reconnected``).

    scripts/test                               # once: the venv and `npm ci` of bench/node
    .venv/bin/pip install -e '.[bench]'        # the official Python SDK
    .venv/bin/python bench/run.py [--runs 5]
    .venv/bin/python bench/run.py --quick      # a few hundred calls: proves it works
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
SERVER = [sys.executable, str(BENCH / "server.py")]
TS_CLIENT = BENCH / "node" / "client.mjs"
INFLIGHT = 64
CLIENTS = ("mcpl_host", "mcpl_host-asyncio", "python-sdk", "typescript-sdk", "floor")
INIT_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "floor", "version": "0"},
}


# -- what every child reports ---------------------------------------------------------


def peak_rss_mib() -> float:
    # VmHWM is this process image's own peak; ru_maxrss would carry over the parent's
    # (Linux keeps it across exec).
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def shares(calls: int, workers: int) -> list[int]:
    """``calls`` split over ``workers`` (the first ones take one more)."""
    return [calls // workers + (i < calls % workers) for i in range(workers)]


class Report:
    """The figures of one child run, printed as one JSON line."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.figures: dict[str, float] = {}
        self._handshakes: list[float] = []

    def handshake(self, seconds: float) -> None:
        self._handshakes.append(seconds)

    def timed(self, key: str, calls: int, wall: float) -> None:
        self.figures[key] = calls / wall

    def emit(self) -> None:
        self.figures["handshake_s"] = statistics.median(self._handshakes)
        self.figures["peak_rss_mib"] = peak_rss_mib()
        print(json.dumps(self.figures))


def check(text: str, expected_len: int) -> None:
    if len(text) != expected_len:
        raise AssertionError(f"echo answered {len(text)} characters, not {expected_len}")


async def timed_calls(
    report: Report,
    args: argparse.Namespace,
    calls: Callable[..., Awaitable[None]],
    task_group: Callable[[], Any],
) -> None:
    """The timed phases of an async client: ``calls(n, text="hello")`` makes ``n`` echo
    calls and checks them; ``task_group()`` opens a trio nursery or an anyio task group."""
    await calls(args.warmup)
    wall, cpu = time.perf_counter(), time.process_time()
    await calls(args.calls)
    report.timed("sequential_per_s", args.calls, time.perf_counter() - wall)
    report.figures["cpu_s_per_1k"] = (time.process_time() - cpu) / args.calls * 1000
    wall = time.perf_counter()
    async with task_group() as group:
        for n in shares(args.calls, INFLIGHT):
            group.start_soon(calls, n)
    report.timed("inflight_per_s", args.calls, time.perf_counter() - wall)
    big = "x" * args.big_bytes
    wall = time.perf_counter()
    await calls(args.big_calls, big)
    report.timed("big_per_s", args.big_calls, time.perf_counter() - wall)


async def connect_and_measure(
    report: Report,
    args: argparse.Namespace,
    connect: Callable[[], Any],
    task_group: Callable[[], Any],
) -> None:
    """mcpl_host's run, on either face: ``connect()`` gives an ``async with`` for a
    Connection; the handshakes, then the timed phases on the last one."""
    for _ in range(args.handshakes - 1):
        began = time.perf_counter()
        async with connect():
            report.handshake(time.perf_counter() - began)
    began = time.perf_counter()
    async with connect() as conn:
        report.handshake(time.perf_counter() - began)

        async def calls(n: int, text: str = "hello") -> None:
            for _ in range(n):
                result = await conn.call_tool("echo", {"text": text})
                check(result.text, len(text))

        await timed_calls(report, args, calls, task_group)
    report.emit()


# -- mcpl_host --------------------------------------------------------------------------


def child_mcpl_host(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    import trio

    from mcpl_host import Connection, StdioTarget

    report = Report(args)
    report.figures["import_s"] = time.perf_counter() - started
    target = StdioTarget.of(SERVER)

    async def main() -> None:
        await connect_and_measure(report, args, lambda: Connection(target), trio.open_nursery)

    trio.run(main)


# -- mcpl_host's asyncio face ---------------------------------------------------------


class _StartSoon:
    """An asyncio TaskGroup with trio's ``start_soon``."""

    def __init__(self, group: asyncio.TaskGroup) -> None:
        self._group = group

    def start_soon(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        self._group.create_task(fn(*args))


@contextlib.asynccontextmanager
async def asyncio_group() -> AsyncIterator[_StartSoon]:
    async with asyncio.TaskGroup() as group:
        yield _StartSoon(group)


def child_mcpl_host_asyncio(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    from mcpl_host import StdioTarget, aio

    report = Report(args)
    report.figures["import_s"] = time.perf_counter() - started
    target = StdioTarget.of(SERVER)

    async def main() -> None:
        await connect_and_measure(report, args, lambda: aio.Connection(target), asyncio_group)

    asyncio.run(main())


# -- the official Python SDK -------------------------------------------------------------


def child_python_sdk(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import TextContent

    report = Report(args)
    report.figures["import_s"] = time.perf_counter() - started
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])

    async def main() -> None:
        for last in [False] * (args.handshakes - 1) + [True]:
            began = time.perf_counter()
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                report.handshake(time.perf_counter() - began)
                if last:
                    await measure(s)
        report.emit()

    async def measure(session: ClientSession) -> None:
        async def calls(n: int, text: str = "hello") -> None:
            for _ in range(n):
                result = await session.call_tool("echo", {"text": text})
                block = result.content[0]
                check(block.text if isinstance(block, TextContent) else "", len(text))

        await timed_calls(report, args, calls, anyio.create_task_group)

    anyio.run(main)


# -- the floor: no client at all ---------------------------------------------------------


def child_floor(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    report = Report(args)
    report.figures["import_s"] = time.perf_counter() - started  # nothing beyond the stdlib

    def line(id_: int, method: str, params: Any = None) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        return json.dumps(message, separators=(",", ":")).encode() + b"\n"

    def echo(text: str) -> bytes:
        return line(1, "tools/call", {"name": "echo", "arguments": {"text": text}})

    proc = None
    for _ in range(args.handshakes):
        if proc is not None:
            proc.stdin.close()
            proc.wait()
        began = time.perf_counter()
        proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        proc.stdin.write(line(0, "initialize", INIT_PARAMS))
        proc.stdin.flush()
        proc.stdout.readline()
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.flush()
        report.handshake(time.perf_counter() - began)
    assert proc is not None
    stdin, stdout = proc.stdin, proc.stdout
    small, expected = echo("hello"), len(b'"hello"')

    def sequential(n: int, request: bytes, size: int) -> None:
        for _ in range(n):
            stdin.write(request)
            stdin.flush()
            answer = stdout.readline()
            # the text is the last string of the answer: '..."text":"<text>"}]}}\n'
            start = answer.rindex(b'"text":') + 7
            if len(answer) - start - 5 != size:
                raise AssertionError(f"echo answered {answer[:80]!r}")

    sequential(args.warmup, small, expected)
    wall, cpu = time.perf_counter(), time.process_time()
    sequential(args.calls, small, expected)
    report.timed("sequential_per_s", args.calls, time.perf_counter() - wall)
    report.figures["cpu_s_per_1k"] = (time.process_time() - cpu) / args.calls * 1000
    wall = time.perf_counter()
    for n in shares(args.calls, args.calls // INFLIGHT or 1):
        stdin.write(small * n)
        stdin.flush()
        for _ in range(n):
            stdout.readline()
    report.timed("inflight_per_s", args.calls, time.perf_counter() - wall)
    wall = time.perf_counter()
    sequential(args.big_calls, echo("x" * args.big_bytes), args.big_bytes + 2)
    report.timed("big_per_s", args.big_calls, time.perf_counter() - wall)
    stdin.close()
    proc.wait()
    report.emit()


# -- mcpl_host only: idle connections, reconnect ---------------------------------------


def child_idle(args: argparse.Namespace) -> None:
    """Memory per idle connection: RSS growth from 10 to ``--idle`` open connections to
    one server over a Unix socket, divided by the connections added."""
    import gc
    import resource
    import tempfile

    import trio

    from mcpl_host import Connection, UnixTarget

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * args.idle)), hard))
    path = os.path.join(tempfile.mkdtemp(), "bench.sock")
    server = subprocess.Popen([*SERVER, "--unix", path])
    try:
        while not os.path.exists(path):
            time.sleep(0.01)

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                conns = [await nursery.start(Connection(UnixTarget(path)).run) for _ in range(10)]
                gc.collect()
                before = rss_kib()
                for _ in range(args.idle - 10):
                    conns.append(await nursery.start(Connection(UnixTarget(path)).run))
                await trio.sleep(0.2)  # every reader is parked
                gc.collect()
                grown = rss_kib() - before
                print(json.dumps({"idle_kib": grown / (args.idle - 10), "idle": args.idle}))
                for conn in conns:
                    nursery.start_soon(conn.aclose)

        trio.run(main)
    finally:
        server.kill()
        server.wait()


def child_reconnect(args: argparse.Namespace) -> None:
    """Seconds from ``kill -9`` of the stdio server to ``Reconnected`` (a new server
    spawned and initialized), ``--kills`` times; the median is reported."""
    import signal

    import trio

    from mcpl_host import Connection, Reconnect, Reconnected, StdioTarget

    back = trio.Event()

    def on_event(event: object) -> None:
        if isinstance(event, Reconnected):
            back.set()

    async def main() -> None:
        nonlocal back
        seconds = []
        # stable=0: each kill is of a server that was up for a moment only, which the
        # default rule counts as a quick death and backs off from; this measures the
        # reconnect itself.
        policy = Reconnect(initial=0.05, jitter=0.0, stable=0.0)
        async with Connection(StdioTarget.of(SERVER), reconnect=policy, on_event=on_event) as c:
            for _ in range(args.kills):
                back = trio.Event()
                pid = int((await c.call_tool("pid")).text)
                began = time.perf_counter()
                os.kill(pid, signal.SIGKILL)
                with trio.fail_after(10):
                    await back.wait()
                seconds.append(time.perf_counter() - began)
        print(json.dumps({"reconnect_s": statistics.median(seconds), "kills": args.kills}))

    trio.run(main)


CHILDREN = {
    "mcpl_host": child_mcpl_host,
    "mcpl_host-asyncio": child_mcpl_host_asyncio,
    "python-sdk": child_python_sdk,
    "floor": child_floor,
    "idle": child_idle,
    "reconnect": child_reconnect,
}


# -- the parent -----------------------------------------------------------------------------


def run_child(client: str, args: argparse.Namespace) -> dict[str, float]:
    flags = [
        f"--calls={args.calls}",
        f"--warmup={args.warmup}",
        f"--big-calls={args.big_calls}",
        f"--big-bytes={args.big_bytes}",
        f"--handshakes={args.handshakes}",
    ]
    if client == "typescript-sdk":
        command = [args.node, str(TS_CLIENT), f"--server-json={json.dumps(SERVER)}", *flags]
    else:
        command = [sys.executable, __file__, f"--child={client}", *flags]
        command += [f"--idle={args.idle}", f"--kills={args.kills}"]
    # node reads NODE_EXTRA_CA_CERTS at start (tens of ms for a system bundle): unset, so
    # that the import column compares the libraries.
    env = {name: value for name, value in os.environ.items() if name != "NODE_EXTRA_CA_CERTS"}
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    if out.returncode != 0 or out.stderr.strip():
        print(f"-- {client}: exit {out.returncode}\n{out.stderr}", file=sys.stderr)
    out.check_returncode()
    return json.loads(out.stdout.strip().splitlines()[-1])


COLUMNS = (
    ("import_s", "import ms", 1000, "lower"),
    ("handshake_s", "handshake ms", 1000, "lower"),
    ("sequential_per_s", "sequential/s", 1, "higher"),
    ("inflight_per_s", "64 in flight/s", 1, "higher"),
    ("big_per_s", "1 MiB echo/s", 1, "higher"),
    ("cpu_s_per_1k", "CPU s/1k calls", 1, "lower"),
    ("peak_rss_mib", "peak RSS MiB", 1, "lower"),
)


def table(results: dict[str, list[dict[str, float]]]) -> list[str]:
    def med(client: str, key: str) -> float:
        return statistics.median(r[key] for r in results[client])

    def cell(key: str, value: float) -> str:
        return f"{value:,.0f}" if key.endswith("per_s") else f"{value:.3g}"

    rows = ["| client | " + " | ".join(label for _, label, _, _ in COLUMNS) + " |"]
    rows.append("|---" * (len(COLUMNS) + 1) + "|")
    for client in results:
        cells = [cell(key, med(client, key) * scale) for key, _, scale, _ in COLUMNS]
        rows.append(f"| {client} | " + " | ".join(cells) + " |")
    for other in ("python-sdk", "typescript-sdk", "floor"):
        if other not in results:
            continue
        # Ratios read "mcpl_host is N times better" whatever the direction of the column.
        ratios = []
        for key, _, _, better in COLUMNS:
            ours, theirs = med("mcpl_host", key), med(other, key)
            ratio = ours / theirs if better == "higher" else theirs / ours
            # The floor imports nothing: no ratio to speak of.
            ratios.append(f"{ratio:.2f}x" if min(theirs, ours) > 1e-3 else "-")
        rows.append(f"| mcpl_host vs {other} | " + " | ".join(ratios) + " |")
    if "floor" in results:
        gap = (med("mcpl_host", "handshake_s") - med("floor", "handshake_s")) * 1000
        rows.append(f"\nhandshake: mcpl_host {gap:+.2f} ms from the floor's")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="alternating runs per client")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--big-calls", type=int, default=50)
    parser.add_argument("--big-bytes", type=int, default=1 << 20)
    parser.add_argument("--handshakes", type=int, default=10)
    parser.add_argument("--idle", type=int, default=1000, help="idle connections")
    parser.add_argument("--kills", type=int, default=10, help="kill -9 to time reconnects")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--node", default=shutil.which("node") or "node")
    parser.add_argument("--quick", action="store_true", help="a few hundred calls, one run")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        CHILDREN[args.child](args)
        return 0
    if args.quick:
        args.runs, args.calls, args.warmup, args.big_calls = 1, 300, 20, 3
        args.handshakes, args.idle, args.kills = 2, 50, 2
    clients = [c for c in args.clients.split(",") if c]
    if unknown := set(clients) - set(CLIENTS):
        parser.error(f"unknown clients: {', '.join(sorted(unknown))}")
    if "python-sdk" in clients and not _has_sdk():
        print("the official Python SDK is missing: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    if "typescript-sdk" in clients and not (BENCH / "node/node_modules").is_dir():
        print("the TypeScript SDK is missing: npm ci --prefix bench/node", file=sys.stderr)
        return 2
    results: dict[str, list[dict[str, float]]] = {client: [] for client in clients}
    for run in range(args.runs):
        for client in clients:  # alternate, so drift hits every client alike
            results[client].append(run_child(client, args))
            print(f"run {run + 1}/{args.runs} {client}: {results[client][-1]}", file=sys.stderr)
    extra = {}
    if "mcpl_host" in clients:
        extra.update(run_child("idle", args))
        extra.update(run_child("reconnect", args))
    print(
        f"\npython {sys.version.split()[0]}, {os.cpu_count()} cores; medians of {args.runs} "
        f"alternating runs; {args.calls} calls per mode, {args.big_calls} echoes of "
        f"{args.big_bytes} bytes, {args.handshakes} handshakes per run\n"
    )
    print("\n".join(table(results)) if "mcpl_host" in results else "")
    if extra:
        print(
            f"mcpl_host: {extra['idle_kib']:.1f} KiB per idle connection "
            f"({int(extra['idle'])} open over a Unix socket); reconnect after kill -9: "
            f"{extra['reconnect_s'] * 1000:.1f} ms (median of {int(extra['kills'])})"
        )
    return 0


def _has_sdk() -> bool:
    try:
        import mcp  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
