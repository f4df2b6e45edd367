"""The real servers the interop tests talk to, as stdio targets."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from mcpl_host import StdioTarget

HERE = Path(__file__).resolve().parent
EVERYTHING = HERE / "node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def everything() -> StdioTarget:
    """@modelcontextprotocol/server-everything, pinned by tests/interop/node/package-lock.json
    and installed by scripts/test (npm ci)."""
    node = shutil.which("node")
    assert node is not None, "node is needed for the interop tests"
    assert EVERYTHING.is_file(), f"{EVERYTHING} is missing: run scripts/test (npm ci)"
    return StdioTarget.of([node, str(EVERYTHING), "stdio"])


def sdk_server() -> StdioTarget:
    """A server written with the official Python SDK (mcp==2.3.0, high-level API)."""
    return StdioTarget.of([sys.executable, str(HERE / "sdk_server.py")])


def sdk_lowlevel_server() -> StdioTarget:
    """The official Python SDK's low-level server, sending results that break their schemas."""
    return StdioTarget.of([sys.executable, str(HERE / "sdk_lowlevel_server.py")])
