"""Running the command as a real subprocess, and tiny stdio servers written for a test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "mcpl_host.cli"]
# Generous: a run is well under a second; this only stops a hung test.
TIMEOUT = 60


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m mcpl_host.cli ARGS``, output captured, colour settings cleared."""
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    environment.update(env or {})
    return subprocess.run(
        [*CLI, *args], check=False, capture_output=True, text=True, timeout=TIMEOUT, env=environment
    )


def run_json(
    *args: str, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run a command line that has ``--json``; stdout must be exactly one JSON object
    (``json.loads`` refuses anything after it)."""
    done = run(*args, env=env)
    report = json.loads(done.stdout)
    assert isinstance(report, dict), done.stdout
    return report, done


PRELUDE = """\
import json, os, sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()

def refused_discover(request):
    # A handshake-era server refuses server/discover, which a dual-era host asks first.
    if request.get("method") != "server/discover":
        return False
    send({"jsonrpc": "2.0", "id": request["id"],
          "error": {"code": -32601, "message": "Method not found"}})
    return True

def read_initialize():
    # A handshake-era server: it refuses server/discover (a dual-era host asks it
    # first) as a method it does not know, and returns the initialize request.
    request = json.loads(sys.stdin.readline())
    while request.get("method") == "server/discover":
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32601, "message": "Method not found"}})
        request = json.loads(sys.stdin.readline())
    return request

def initialized(request, version=None, server_info=None, capabilities=None):
    send({"jsonrpc": "2.0", "id": request["id"], "result": {
        "protocolVersion": version or request["params"]["protocolVersion"],
        "capabilities": capabilities if capabilities is not None else {"tools": {}},
        "serverInfo": server_info or {"name": "test-server", "version": "0"},
    }})

"""


def server(tmp_path: Path, name: str, body: str) -> list[str]:
    """A stdio server: ``body`` (Python, after :data:`PRELUDE`) written to a file; the
    argv that runs it."""
    script = tmp_path / f"{name}.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    return [sys.executable, str(script)]
