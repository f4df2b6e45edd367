"""The OAuth tests' servers: tests/auth/asserver.py (a real authorization server and the
MCP server it protects, built on the official SDK's server-side auth) as a subprocess,
and ``auto_approve``, an ``authorize`` callback that does what a browser and a consenting
user would.

    async def test_something(asserver: AuthServer) -> None: ...       # default flags
    async def test_other(asserver_factory: StartAuthServer) -> None:
        server = await asserver_factory("--step-up", "--token-lifetime", "1")

Each server is stopped (SIGTERM, then SIGKILL) and reaped when its test ends; its stderr
(one line per /authorize, /token, /register, /revoke request, field names only) goes to
a file the test can read with ``server.log_lines()`` and is echoed at teardown, so a
failing test shows it.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx
import pytest
import trio

ASSERVER = Path(__file__).resolve().with_name("asserver.py")
READY_TIMEOUT = 20.0  # seconds; a cold start (imports) takes about 1 s
STOP_TIMEOUT = 5.0


@dataclass
class AuthServer:
    """One running asserver.py."""

    mcp_url: str  # http://127.0.0.1:PORT/mcp, the protected resource
    issuer: str  # http://127.0.0.1:PORT, the issuer the resource metadata names
    process: trio.Process
    log_path: Path

    @property
    def resource_metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/oauth-protected-resource/mcp"

    @property
    def as_metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/oauth-authorization-server"

    async def revoke_all(self) -> int:
        """Revoke every access and refresh token the server issued; return how many."""
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{self.issuer}/test/revoke-all")
        response.raise_for_status()
        revoked: int = response.json()["revoked"]
        return revoked

    def log_lines(self) -> list[str]:
        """The server's stderr so far."""
        return self.log_path.read_text(errors="replace").splitlines()


class StartAuthServer(Protocol):
    def __call__(self, *flags: str) -> Awaitable[AuthServer]: ...


async def _read_ready_line(process: trio.Process) -> str:
    assert process.stdout is not None
    buffer = b""
    while b"\n" not in buffer:
        chunk = await process.stdout.receive_some(4096)
        if not chunk:
            raise RuntimeError("asserver.py exited before it was READY")
        buffer += chunk
    line = buffer.split(b"\n", 1)[0].decode()
    if not line.startswith("READY "):
        raise RuntimeError(f"asserver.py said {line!r} instead of READY <url>")
    return line.removeprefix("READY ").strip()


async def _stop(process: trio.Process) -> None:
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            process.terminate()
            with trio.move_on_after(STOP_TIMEOUT):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
        if process.stdout is not None:
            await process.stdout.aclose()


@contextlib.asynccontextmanager
async def run_asserver(*flags: str, log_path: Path) -> AsyncIterator[AuthServer]:
    """Start asserver.py with ``flags`` on a free loopback port; yield it once READY."""
    with log_path.open("wb") as log_file:
        process = await trio.lowlevel.open_process(
            [sys.executable, str(ASSERVER), "--port", "0", *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log_file,
        )
    try:
        try:
            with trio.fail_after(READY_TIMEOUT):
                mcp_url = await _read_ready_line(process)
        except (RuntimeError, trio.TooSlowError) as exc:
            await _stop(process)
            raise RuntimeError(f"{exc}; its stderr:\n{log_path.read_text()}") from exc
        yield AuthServer(
            mcp_url=mcp_url,
            issuer=mcp_url.removesuffix("/mcp"),
            process=process,
            log_path=log_path,
        )
    finally:
        await _stop(process)
        print(f"--- {log_path.name} (asserver.py {' '.join(flags)})")
        print(log_path.read_text(errors="replace"), end="")


@pytest.fixture
async def asserver_factory(tmp_path: Path) -> AsyncIterator[StartAuthServer]:
    """Start as many asserver.py processes as a test wants, each with its own flags."""
    async with contextlib.AsyncExitStack() as stack:
        count = 0

        async def start(*flags: str) -> AuthServer:
            nonlocal count
            count += 1
            log_path = tmp_path / f"asserver-{count}.log"
            return await stack.enter_async_context(run_asserver(*flags, log_path=log_path))

        yield start


@pytest.fixture
async def asserver(asserver_factory: StartAuthServer) -> AuthServer:
    """One asserver.py with the default flags."""
    return await asserver_factory()


async def auto_approve(url: str) -> str:
    """An ``authorize`` callback: open the authorization URL as a browser would, and return
    where the server redirects (the redirect URI with code, state and iss, or with an
    error). asserver.py approves without asking anyone."""
    async with httpx.AsyncClient() as client:
        response = await client.get(url, follow_redirects=False)
    location: str | None = response.headers.get("location")
    if response.status_code not in (302, 303) or location is None:
        raise AssertionError(
            f"the authorization endpoint answered {response.status_code}, not a redirect: "
            f"{response.text[:500]}"
        )
    return location
