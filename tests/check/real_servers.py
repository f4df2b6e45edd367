"""The real servers the checker's proof runs against (docs/check.md, "Real servers").

Each entry names a server and how it is reached; ``target()`` is a context manager
yielding the target (an HTTP server is started on a free loopback port and stopped
after). ``scripts/check_servers.py`` checks them all and writes docs/check.md's table;
``tests/check/test_real_servers.py`` checks each and compares with that table.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mcpl_host.check import CheckOptions, Report, check
from mcpl_host.transports.targets import HttpTarget, StdioTarget, Target
from tests.interop.servers import (
    HERE,
    everything,
    everything_http,
    sdk_lowlevel_server,
    sdk_server,
    sdk_server_http,
)

FILESYSTEM = HERE / "node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"


@dataclass(frozen=True, slots=True)
class RealServer:
    """``key`` names the server in docs/check.md's table; ``what`` says what it is."""

    key: str
    what: str
    transport: str
    target: Callable[[], contextlib.AbstractContextManager[Target]]


@contextlib.contextmanager
def _given(target: Callable[[], Target]) -> Iterator[Target]:
    yield target()


@contextlib.contextmanager
def _http(server: Callable[[], contextlib.AbstractContextManager[str]]) -> Iterator[Target]:
    with server() as url:
        yield HttpTarget(url)


@contextlib.contextmanager
def _filesystem() -> Iterator[Target]:
    node = shutil.which("node")
    assert node is not None, "node is needed for server-filesystem"
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "hello.txt").write_text("hello\n")
        yield StdioTarget.of([node, str(FILESYSTEM), root])


SERVERS: tuple[RealServer, ...] = (
    RealServer(
        "demo",
        "mcpl_host's demo server (`python -m mcpl_host.demo`)",
        "stdio",
        lambda: _given(lambda: StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])),
    ),
    RealServer(
        "everything-stdio",
        "@modelcontextprotocol/server-everything 2026.8.31 (TypeScript SDK)",
        "stdio",
        lambda: _given(everything),
    ),
    RealServer(
        "everything-http",
        "@modelcontextprotocol/server-everything 2026.8.31 (TypeScript SDK)",
        "Streamable HTTP",
        lambda: _http(everything_http),
    ),
    RealServer(
        "sdk-mcpserver-stdio",
        "the official Python SDK's MCPServer (mcp 2.3.0, tests/interop/sdk_server.py)",
        "stdio",
        lambda: _given(sdk_server),
    ),
    RealServer(
        "sdk-mcpserver-http",
        "the official Python SDK's MCPServer (mcp 2.3.0, tests/interop/sdk_server.py)",
        "Streamable HTTP",
        lambda: _http(sdk_server_http),
    ),
    RealServer(
        "sdk-lowlevel-stdio",
        "the official Python SDK's low-level Server (mcp 2.3.0, "
        "tests/interop/sdk_lowlevel_server.py)",
        "stdio",
        lambda: _given(sdk_lowlevel_server),
    ),
    RealServer(
        "filesystem-stdio",
        "@modelcontextprotocol/server-filesystem 2026.8.31 (TypeScript SDK)",
        "stdio",
        _filesystem,
    ),
)


# The answer timeout is generous: a verdict must not depend on how busy the machine is.
OPTIONS = CheckOptions(timeout=5.0, exit_grace=5.0)


async def run(server: RealServer) -> Report:
    """The full check of ``server``."""
    with server.target() as target:
        return await check(target, options=OPTIONS, description=server.key)
