"""The real servers the interop tests talk to: stdio targets, and the same servers over
Streamable HTTP on loopback."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def over_http(
    argv: list[str], port: int, env: dict[str, str] | None = None, path: str = "/mcp"
) -> Iterator[str]:
    """Run a server that listens on ``port``; yield its URL (``path``: /mcp) once it
    accepts, and stop it afterwards."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{argv[:2]} did not listen on {port}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def everything_http() -> contextlib.AbstractContextManager[str]:
    """server-everything in its streamableHttp mode on a free loopback port."""
    node = shutil.which("node")
    assert node is not None, "node is needed for the interop tests"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "NODE_EXTRA_CA_CERTS"}
    env["PORT"] = str(port)
    return over_http([node, str(EVERYTHING), "streamableHttp"], port, env)


def sdk_server_http() -> contextlib.AbstractContextManager[str]:
    """The official Python SDK server over its Streamable HTTP app on a free port."""
    port = _free_port()
    return over_http([sys.executable, str(HERE / "sdk_server.py"), "--http", str(port)], port)


def everything_sse() -> contextlib.AbstractContextManager[str]:
    """server-everything in its legacy ``sse`` mode (GET /sse, POST /message)."""
    node = shutil.which("node")
    assert node is not None, "node is needed for the interop tests"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "NODE_EXTRA_CA_CERTS"}
    env["PORT"] = str(port)
    return over_http([node, str(EVERYTHING), "sse"], port, env, path="/sse")


def sdk_server_sse() -> contextlib.AbstractContextManager[str]:
    """The official Python SDK server over its legacy HTTP+SSE app (GET /sse, POST
    /messages/) on a free port."""
    port = _free_port()
    argv = [sys.executable, str(HERE / "sdk_server.py"), "--sse", str(port)]
    return over_http(argv, port, path="/sse")
