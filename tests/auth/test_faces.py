"""OAuth from the asyncio and synchronous faces: an ``authorize`` hook written for
asyncio (a coroutine) or for threads (a plain function) runs the authorization code flow
against the real authorization server (tests/auth/asserver.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from mcpl_host import HttpTarget, aio, sync
from mcpl_host.auth import OAuth

from ..cli.helpers import authorization_server


@pytest.fixture
def server_url() -> Iterator[str]:
    """asserver.py started without trio (these tests run their own loops)."""
    with authorization_server() as url:
        yield url


def _follow(url: str) -> str:
    response = httpx.get(url, follow_redirects=False, timeout=10)
    assert response.status_code in (302, 303), response.status_code
    return response.headers["location"]


def test_asyncio_face_runs_the_flow_with_an_asyncio_hook(server_url: str) -> None:
    seen: list[str] = []

    async def authorize(url: str) -> str:
        await asyncio.sleep(0)  # an asyncio coroutine: it would fail if run under trio
        seen.append(asyncio.current_task().get_name())  # type: ignore[union-attr]
        return await asyncio.to_thread(_follow, url)

    async def main() -> str:
        auth = OAuth(authorize=authorize)
        async with aio.Connection(HttpTarget(server_url, auth=auth)) as conn:
            result = await conn.call_tool("whoami", {})
            return str(result.content[0].text)  # type: ignore[union-attr]

    assert "mcp" in asyncio.run(asyncio.wait_for(main(), 30))
    assert len(seen) == 1


def test_sync_face_runs_the_flow_with_a_plain_function(server_url: str) -> None:
    calls: list[str] = []

    def authorize(url: str) -> str:
        calls.append(url)
        return _follow(url)

    auth = OAuth(authorize=authorize)
    with sync.Connection(HttpTarget(server_url, auth=auth)) as conn:
        result = conn.call_tool("whoami", {})
    assert "mcp" in str(result.content[0].text)  # type: ignore[union-attr]
    assert len(calls) == 1
    assert "code_challenge_method=S256" in calls[0]
