"""Servers for the embedding tests: the demo server, and a recording server that writes
every line it reads to a file (so a test can see what reached the server)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from mcpl_host import StdioTarget

DEMO = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])

RECORDER = r"""
import json, sys
record = open(sys.argv[1], "a", buffering=1)
for line in sys.stdin:
    record.write(line)
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "recorder", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    elif msg.get("method") == "tools/list":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}}), flush=True)
    elif msg.get("method") == "server/discover":  # a handshake-era server refuses it
        error = {"code": -32601, "message": "Method not found"}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}), flush=True)
    # tools/call is never answered: the host has to cancel it
"""


@pytest.fixture
def recorder(tmp_path: Path) -> tuple[StdioTarget, Path]:
    """A server that never answers tools/call and records every line it reads."""
    script, record = tmp_path / "recorder.py", tmp_path / "record.jsonl"
    script.write_text(RECORDER)
    record.touch()
    return StdioTarget.of([sys.executable, str(script), str(record)]), record


def wait_for_line(record: Path, needle: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in record.read_text().splitlines():
            if needle in line:
                return line
        time.sleep(0.02)
    raise AssertionError(f"{needle!r} never reached the server: {record.read_text()!r}")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def leftover_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads started since ``before`` other than trio's idle worker cache (its
    "Trio thread N" daemons end by themselves after 10 s idle)."""
    return [
        t
        for t in threading.enumerate()
        if t not in before and not (t.daemon and t.name.startswith("Trio thread"))
    ]
