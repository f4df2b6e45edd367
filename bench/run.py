#!/usr/bin/env python3
"""The client benchmark: every face of mcpl_host next to the official MCP SDKs and two
floors, over stdio and over Streamable HTTP.

Every client runs in a fresh process of its own, so CPU time and RSS are the client's.
Over stdio each spawns ``bench/server.py``; over HTTP the parent starts
``bench/http_server.py`` for each client process (a fresh server per run, never shared
by two clients) and gives the child its URL. One run of a client measures, in this
order: the import of the client library, ``--handshakes`` handshakes (stdio: spawn the
server, initialize, initialized; HTTP: connect, initialize, initialized; the median is
kept), ``--warmup`` calls, ``--calls`` sequential ``tools/call echo`` (the CPU column is
the process's user+system time over these), the same number with 64 in flight (RSS
after the small calls is VmHWM read here), ``--big-calls`` echoes of ``--big-bytes``
(1 MiB) one at a time; peak RSS is VmHWM at the end. Every answer is checked. Runs
alternate between the clients and the transports (this machine is noisy); the tables
show medians, ratios, and the targets of issue 20 as ratios of the same medians.

Clients (``--clients``; the module that runs each):

- ``mcpl_host``, ``mcpl_host-asyncio``, ``mcpl_host-sync``, ``mcpl_host-manager``:
  mcpl_host's trio ``Connection``, its asyncio face, its sync face under threads, and
  the trio ``ConnectionManager``'s ``call_tool`` (``clients_mcpl.py``), telemetry on
  as by default (``opentelemetry-api`` installed, no SDK configured);
- ``mcpl_host-notel``: the trio ``Connection`` with ``telemetry=False``: the time and
  CPU of a sequential call against ``mcpl_host``'s are the no-op tracer's cost (issue
  24's target; ``bench/telemetry_overhead.py`` measures it in one process, finer);
- ``python-sdk``: ``mcp`` 2.3.0's ``ClientSession`` (``clients_sdk.py``);
- ``typescript-sdk``: ``@modelcontextprotocol/sdk``'s ``Client`` on node
  (``node/client.mjs``, pinned by ``node/package-lock.json``);
- ``floor``: no client, blocking I/O of prepared requests (``clients_floor.py``);
- ``floor-asyncio``: a bare asyncio protocol with msgspec, no MCP library
  (``clients_floor_asyncio.py``).

Then, for mcpl_host only and over stdio (``extras.py``): memory per idle connection
with 1,000 connections open in one process to one server over a Unix socket, and the
time from ``kill -9`` of a stdio server to the connection being back.

    scripts/test                               # once: the venv and `npm ci` of bench/node
    .venv/bin/pip install -e '.[bench]'        # the official Python SDK
    .venv/bin/python bench/run.py [--runs 5] [--transports stdio,http]
    .venv/bin/python bench/run.py --quick      # a few hundred calls: proves it works
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Final

from measure import BENCH, HTTP_SERVER, SERVER, Setup

TS_CLIENT: Final = BENCH / "node" / "client.mjs"
CLIENTS: Final = (
    "mcpl_host",
    "mcpl_host-notel",
    "mcpl_host-asyncio",
    "mcpl_host-sync",
    "mcpl_host-manager",
    "python-sdk",
    "typescript-sdk",
    "floor",
    "floor-asyncio",
)
TRANSPORTS: Final = ("stdio", "http")


def _children() -> dict[str, Callable[[Setup], None]]:
    """Every Python child by name; their modules import no client library at the top."""
    import clients_floor
    import clients_floor_asyncio
    import clients_mcpl
    import clients_sdk
    import extras

    return {
        "mcpl_host": clients_mcpl.child_trio,
        "mcpl_host-notel": clients_mcpl.child_trio_notel,
        "mcpl_host-asyncio": clients_mcpl.child_asyncio,
        "mcpl_host-sync": clients_mcpl.child_sync,
        "mcpl_host-manager": clients_mcpl.child_manager,
        "python-sdk": clients_sdk.child_python_sdk,
        "floor": clients_floor.child_floor,
        "floor-asyncio": clients_floor_asyncio.child_floor_asyncio,
        "idle": extras.child_idle,
        "reconnect": extras.child_reconnect,
    }


# -- the parent -----------------------------------------------------------------------------


@contextlib.contextmanager
def http_server() -> Iterator[str]:
    """A fresh ``bench/http_server.py``; its URL."""
    server = subprocess.Popen(HTTP_SERVER, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"bench/http_server.py did not start (exit {server.poll()})")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def run_child(client: str, transport: str, args: argparse.Namespace) -> dict[str, float]:
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(http_server()) if transport == "http" else ""
        flags = [
            f"--transport={transport}",
            f"--url={url}",
            f"--calls={args.calls}",
            f"--warmup={args.warmup}",
            f"--big-calls={args.big_calls}",
            f"--big-bytes={args.big_bytes}",
            f"--handshakes={args.handshakes}",
        ]
        if client == "typescript-sdk":
            # --no-warnings: over HTTP the SDK adds an abort listener per request to one
            # shared signal (undici drops them at GC), and node would print a warning for
            # each past 1,500: the listeners are the SDK's cost, the printing is not.
            server = f"--server-json={json.dumps(SERVER)}"
            command = [args.node, "--no-warnings", str(TS_CLIENT), server, *flags]
        else:
            command = [sys.executable, __file__, f"--child={client}", *flags]
            command += [f"--idle={args.idle}", f"--kills={args.kills}"]
        # node reads NODE_EXTRA_CA_CERTS at start (tens of ms for a system bundle): unset,
        # so that the import column compares the libraries.
        env = {name: value for name, value in os.environ.items() if name != "NODE_EXTRA_CA_CERTS"}
        out = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=900, check=False
        )
    if out.returncode != 0 or out.stderr.strip():
        print(f"-- {client} ({transport}): exit {out.returncode}\n{out.stderr}", file=sys.stderr)
    out.check_returncode()
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def available(clients: list[str]) -> list[str]:
    """``clients`` without those whose library is not installed (said on stderr)."""
    kept = []
    for client in clients:
        if client == "python-sdk" and not _has_sdk():
            print("skipped python-sdk: pip install -e '.[bench]'", file=sys.stderr)
        elif client == "typescript-sdk" and not (BENCH / "node/node_modules").is_dir():
            print("skipped typescript-sdk: npm ci --prefix bench/node", file=sys.stderr)
        else:
            kept.append(client)
    return kept


def _has_sdk() -> bool:
    try:
        import mcp  # noqa: F401
    except ImportError:
        return False
    return True


def _names(raw: str, known: tuple[str, ...], parser: argparse.ArgumentParser) -> list[str]:
    names = [name for name in raw.split(",") if name]
    if unknown := set(names) - set(known):
        parser.error(f"unknown: {', '.join(sorted(unknown))} (known: {', '.join(known)})")
    return names


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
    parser.add_argument("--transports", default=",".join(TRANSPORTS))
    parser.add_argument("--node", default=shutil.which("node") or "node")
    parser.add_argument("--quick", action="store_true", help="a few hundred calls, one run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--transport", default="stdio", help=argparse.SUPPRESS)
    parser.add_argument("--url", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _children()[args.child](Setup.of(args))
        return 0
    if args.quick:
        args.runs, args.calls, args.warmup, args.big_calls = 1, 300, 20, 3
        args.handshakes, args.idle, args.kills = 2, 50, 2
    clients = available(_names(args.clients, CLIENTS, parser))
    transports = _names(args.transports, TRANSPORTS, parser)
    import report

    results: dict[str, report.Runs] = {t: {client: [] for client in clients} for t in transports}
    for run in range(args.runs):
        # Alternate clients and transports, so that drift hits every client alike.
        for transport in transports:
            for client in clients:
                figures = run_child(client, transport, args)
                results[transport][client].append(figures)
                print(f"run {run + 1}/{args.runs} {transport} {client}: {figures}", file=sys.stderr)
    extra: dict[str, float] = {}
    if "mcpl_host" in clients and "stdio" in transports:
        extra.update(run_child("idle", "stdio", args))
        extra.update(run_child("reconnect", "stdio", args))
    print(
        f"\npython {sys.version.split()[0]}, {os.cpu_count()} cores; medians of {args.runs} "
        f"alternating runs; {args.calls} calls per mode, {args.big_calls} echoes of "
        f"{args.big_bytes} bytes, {args.handshakes} handshakes per run"
    )
    for transport in transports:
        print(f"\n{transport}:\n")
        print("\n".join(report.table(results[transport], transport)))
        print()
        print("\n".join(report.spread(results[transport], transport)))
    if extra:
        print(
            f"\nmcpl_host: {extra['idle_kib']:.1f} KiB per idle connection "
            f"({int(extra['idle'])} open over a Unix socket); reconnect after kill -9: "
            f"{extra['reconnect_s'] * 1000:.1f} ms (median of {int(extra['kills'])})"
        )
    print("\ntargets (ratios of the medians above; issue 20's, and issue 24's no-op tracer):\n")
    print("\n".join(report.targets(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
