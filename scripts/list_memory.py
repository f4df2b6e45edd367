#!/usr/bin/env python3
"""Memory per byte of a listing: what one large ``tools/list`` page costs the host.

A plain-Python stdio server (written to a temporary directory, outside the package)
answers ``tools/list`` with one page of about ``--mb`` megabytes, in one of these shapes:

- ``tools``: many ordinary tools (a name, a description, an inputSchema with a few
  typed properties), the shape a large real server sends;
- ``schema``: one tool whose inputSchema is a flat object of many tiny members
  (``{"p0": {}, "p1": {}, ...}``), the most Python objects per byte a schema can hold;
- ``text``: a few tools with very long descriptions (strings: cheap to decode).

Each case runs in its own process and prints the bytes the server sent (``--pages``
pages of that size, each with a new cursor), the host's peak RSS growth while listing
(``ru_maxrss`` minus the RSS just before the listing began) and that growth as a
multiple of the bytes sent, through two paths:

- ``connection``: ``Connection.list_tools()`` (the typed list, cached);
- ``cli``: ``mcpl-host connect --json`` (the report written to a pipe), minus the same
  command against a server whose page is empty.

Figures, not assertions: run it on the machine you care about.

    .venv/bin/python scripts/list_memory.py --mb 15
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

SERVER = r"""
import json, sys

MB, SHAPE, PAGES = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
TARGET = int(MB * 1_000_000)


def tools_page():
    tool = {
        "name": "",
        "description": "Looks something up in the catalogue and returns what it found.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "tags": {"type": "array", "items": {"type": "string"}},
                "exact": {"type": "boolean"},
            },
            "required": ["query"],
        },
    }
    size = len(json.dumps(tool)) + 8
    tools = []
    for i in range(TARGET // size):
        tools.append(dict(tool, name=f"tool_{i:07d}"))
    return {"tools": tools}


def schema_page():
    count = TARGET // len('"p0000000":{},')
    properties = {f"p{i:07d}": {} for i in range(count)}
    return {"tools": [{"name": "wide", "inputSchema": {"type": "object", "properties": properties}}]}


def tiny_page():
    return {"tools": [{"name": f"t{i:07d}"} for i in range(TARGET // len('{"name":"t0000000"},'))]}


def objects_page():
    return {"tools": [{} for i in range(TARGET // 3)]}


def text_page():
    return {"tools": [
        {"name": f"t{i}", "description": "x" * (TARGET // 10), "inputSchema": {"type": "object"}}
        for i in range(10)
    ]}


PAGE = {"tools": tools_page, "schema": schema_page, "text": text_page,
        "tiny": tiny_page, "objects": objects_page, "none": lambda: {"tools": []}}[SHAPE]()
BODY = None


def send(message):
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method, rid = request.get("method"), request.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "big-page", "version": "0"},
        }})
    elif method == "tools/list":
        if BODY is None:
            BODY = json.dumps(PAGE, separators=(",", ":"))[:-1]  # without its closing brace
        number = int((request.get("params") or {}).get("cursor", "0")) + 1
        more = f',"nextCursor":"{number}"' if number < PAGES else ""
        sys.stdout.write(f'{{"jsonrpc":"2.0","id":{rid},"result":{BODY}{more}}}}}\n')
        sys.stdout.flush()
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
"""

CONNECTION = r"""
import gc, resource, sys, trio
from mcpl_host import Connection, StdioTarget

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

async def main():
    target = StdioTarget.of(sys.argv[1:])
    async with Connection(target, request_timeout=300) as conn:
        gc.collect()
        before = rss()
        try:
            outcome = str(len(await conn.list_tools()))
        except Exception as exc:
            outcome = type(exc).__name__
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        held = rss() - before
        print(outcome, max(peak - before, 0), held)

trio.run(main)
"""


def page_size(server: list[str]) -> int:
    done = subprocess.run(
        server,
        input='{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n',
        capture_output=True,
        text=True,
        check=True,
    )
    return len(done.stdout.encode()) - 1


def via_connection(server: list[str]) -> tuple[str, int, int]:
    """(outcome, peak RSS growth, RSS still held) of one Connection.list_tools()."""
    done = subprocess.run(
        [sys.executable, "-c", CONNECTION, *server], capture_output=True, text=True, check=True
    )
    outcome, peak, held = done.stdout.split()
    return outcome, int(peak), int(held)


CLI_RUN = """
import os, resource, sys
from mcpl_host.cli import main

# The command runs in this process, so RUSAGE_SELF is the command alone: the server it
# starts is another process (RUSAGE_CHILDREN would count the server's peak instead).
out = os.open(sys.argv[1], os.O_WRONLY)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
status = main(sys.argv[2:])
os.write(out, f"{status} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}".encode())
"""


def via_cli(server: list[str], tmp: Path) -> tuple[str, int]:
    """(exit status, peak RSS) of one ``mcpl-host connect --json``, its report written
    to /dev/null."""
    figures = tmp / "figures"
    figures.write_text("")
    cli = ["connect", "--json", "--timeout", "300", "--", *server]
    subprocess.run(
        [sys.executable, "-c", CLI_RUN, str(figures), *cli],
        stderr=subprocess.DEVNULL,
        check=True,
    )
    status, peak = figures.read_text().split()
    return f"exit {status}", int(peak)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=15.0, help="page size in MB (default 15)")
    parser.add_argument("--shapes", default="tools,schema,text,tiny,objects")
    parser.add_argument("--paths", default="connection,cli")
    parser.add_argument("--pages", type=int, default=1, help="pages of that size (default 1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "big_page_server.py"
        script.write_text(textwrap.dedent(SERVER))
        base = [sys.executable, str(script), str(args.mb)]
        print(
            f"{'shape':<8} {'path':<11} {'MB in':>8} {'growth MB':>10} {'x in':>7}"
            f" {'held MB':>8}  outcome"
        )
        _, cli_base = via_cli([*base, "none", "1"], Path(tmp)) if "cli" in args.paths else ("", 0)
        for shape in args.shapes.split(","):
            server = [*base, shape, str(args.pages)]
            size = page_size([*base, shape, "1"]) * args.pages
            for path in args.paths.split(","):
                if path == "connection":
                    outcome, peak, held = via_connection(server)
                    held_mb = f"{held / 1e6:8.1f}"
                else:
                    outcome, peak = via_cli(server, Path(tmp))
                    peak -= cli_base
                    held_mb = f"{'':>8}"
                print(
                    f"{shape:<8} {path:<11} {size / 1e6:8.1f} {peak / 1e6:10.1f}"
                    f" {peak / size:7.1f} {held_mb}  {outcome}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
