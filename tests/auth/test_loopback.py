"""LoopbackRedirect: a real listener on 127.0.0.1 takes one redirect, refuses anything
else and goes on waiting, gives up after its timeout, and never logs the code."""

from __future__ import annotations

import contextlib
import re
import threading
import webbrowser

import httpx
import pytest
import structlog
import trio

from mcpl_host.auth import LoopbackRedirect, loopback
from mcpl_host.protocol.errors import AuthorizationRequired

from ..logcheck import strings

AUTHORIZE_URL = "https://as.example/authorize?client_id=c&state=s1&code_challenge=x"
CODE = "the-authorization-code-123"


@pytest.fixture(autouse=True)
def browser(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No test opens a real browser; each records the URLs it was asked to open."""
    opened: list[str] = []

    def fake_open(url: str, *args: object, **kwargs: object) -> bool:
        opened.append(url)
        return False

    monkeypatch.setattr(webbrowser, "open", fake_open)
    return opened


def client() -> httpx.AsyncClient:
    # No proxy from the environment: the request must reach the loopback listener.
    return httpx.AsyncClient(trust_env=False, timeout=5)


async def run_authorize(
    redirect: LoopbackRedirect, nursery: trio.Nursery
) -> trio.MemoryReceiveChannel[str]:
    send, receive = trio.open_memory_channel[str](1)

    async def go() -> None:
        await send.send(await redirect.authorize(AUTHORIZE_URL))

    nursery.start_soon(go)
    return receive


async def test_the_redirect_comes_back_whole() -> None:
    announced: list[str] = []
    with trio.fail_after(10):
        async with (
            LoopbackRedirect(open_browser=False, announce=announced.append) as redirect,
            trio.open_nursery() as nursery,
        ):
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", redirect.redirect_uri)
            result = await run_authorize(redirect, nursery)
            async with client() as http:
                answer = await http.get(f"{redirect.redirect_uri}?code={CODE}&state=s1")
            assert answer.status_code == 200
            assert "Authorization received, you can close this window" in answer.text
            assert answer.headers["content-type"] == "text/html; charset=utf-8"
            assert answer.headers["cache-control"] == "no-store"
            assert await result.receive() == f"{redirect.redirect_uri}?code={CODE}&state=s1"
    assert announced == [AUTHORIZE_URL]


async def test_another_path_is_refused_and_the_wait_goes_on() -> None:
    with trio.fail_after(10):
        async with (
            LoopbackRedirect(open_browser=False, announce=lambda url: None) as redirect,
            trio.open_nursery() as nursery,
        ):
            result = await run_authorize(redirect, nursery)
            base = redirect.redirect_uri.removesuffix("/callback")
            async with client() as http:
                for wrong in (
                    http.get(f"{base}/favicon.ico"),
                    http.get(f"{base}/callback/more?code=x"),
                    http.get(f"{base}/callbackx?code=x"),
                    http.get(redirect.redirect_uri),  # no query: not a redirect
                    http.post(f"{redirect.redirect_uri}?code=x&state=s1"),
                ):
                    answer = await wrong
                    assert answer.status_code == 400
                    assert "Authorization received" not in answer.text
                assert result.statistics().current_buffer_used == 0
                answer = await http.get(f"{redirect.redirect_uri}?error=access_denied&state=s1")
            assert answer.status_code == 200
            assert await result.receive() == f"{redirect.redirect_uri}?error=access_denied&state=s1"


async def test_the_path_and_port_are_as_given() -> None:
    with trio.fail_after(10):
        async with LoopbackRedirect(path="/oauth/done", open_browser=False) as first:
            port = int(first.redirect_uri.split(":")[2].split("/")[0])
        async with LoopbackRedirect(port=port, path="/oauth/done", open_browser=False) as second:
            assert second.redirect_uri == f"http://127.0.0.1:{port}/oauth/done"


async def test_no_redirect_within_the_timeout_raises() -> None:
    with trio.fail_after(10):
        async with LoopbackRedirect(timeout=0.2, open_browser=False, announce=lambda u: None) as r:
            with pytest.raises(
                AuthorizationRequired, match=r"no authorization redirect arrived within 0\.2 s"
            ):
                await r.authorize(AUTHORIZE_URL)


async def test_the_url_is_announced_on_stderr_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with trio.fail_after(10):
        async with LoopbackRedirect(timeout=0.05, open_browser=False) as redirect:
            with pytest.raises(AuthorizationRequired):
                await redirect.authorize(AUTHORIZE_URL + "\x1b[2J")
    captured = capsys.readouterr()
    assert captured.out == ""
    # One line, the whole URL, and a terminal escape in it shown, not obeyed.
    assert captured.err == f"Open this URL to authorize: {AUTHORIZE_URL}\\u001b[2J\n"


async def test_open_browser_false_never_calls_the_browser(browser: list[str]) -> None:
    announced: list[str] = []
    with trio.fail_after(10):
        async with LoopbackRedirect(
            timeout=0.05, open_browser=False, announce=announced.append
        ) as r:
            with pytest.raises(AuthorizationRequired):
                await r.authorize(AUTHORIZE_URL)
    assert browser == []
    assert announced == [AUTHORIZE_URL]


async def test_the_browser_is_opened_and_the_url_announced_as_well(browser: list[str]) -> None:
    announced: list[str] = []
    with trio.fail_after(10):
        async with LoopbackRedirect(timeout=0.2, announce=announced.append) as r:
            with pytest.raises(AuthorizationRequired):
                await r.authorize(AUTHORIZE_URL)
    assert browser == [AUTHORIZE_URL]
    assert announced == [AUTHORIZE_URL]


async def test_a_browser_that_never_returns_does_not_hold_up_the_redirect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: release.wait(10))
    try:
        with trio.fail_after(5):
            async with (
                LoopbackRedirect(announce=lambda url: None) as redirect,
                trio.open_nursery() as nursery,
            ):
                result = await run_authorize(redirect, nursery)
                async with client() as http:
                    await http.get(f"{redirect.redirect_uri}?code={CODE}")
                assert await result.receive() == f"{redirect.redirect_uri}?code={CODE}"
    finally:
        release.set()


async def test_a_silent_connection_neither_blocks_the_redirect_nor_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loopback, "CONNECTION_DEADLINE", 0.5)
    with trio.fail_after(10):
        async with (
            LoopbackRedirect(open_browser=False, announce=lambda url: None) as redirect,
            trio.open_nursery() as nursery,
        ):
            port = int(redirect.redirect_uri.split(":")[2].split("/")[0])
            # A browser's preconnect: a connection that sends nothing.
            async with await trio.open_tcp_stream("127.0.0.1", port) as silent:
                result = await run_authorize(redirect, nursery)
                await trio.sleep(0.1)
                async with client() as http:
                    await http.get(f"{redirect.redirect_uri}?code={CODE}")
                assert await result.receive() == f"{redirect.redirect_uri}?code={CODE}"
                # The wait is over; the silent connection was closed with it.
                assert await silent.receive_some(100) == b""

        async with LoopbackRedirect(open_browser=False, announce=lambda url: None) as redirect:
            port = int(redirect.redirect_uri.split(":")[2].split("/")[0])
            silent = await trio.open_tcp_stream("127.0.0.1", port)
            async with silent, trio.open_nursery() as nursery:
                result = await run_authorize(redirect, nursery)
                with trio.fail_after(3):  # dropped after its deadline, with no answer
                    assert await silent.receive_some(100) == b""
                async with client() as http:
                    await http.get(f"{redirect.redirect_uri}?code={CODE}")
                await result.receive()


async def read_all(stream: trio.SocketStream) -> bytes:
    """What the server sent until it closed (a reset counts as closed)."""
    answer = b""
    with contextlib.suppress(trio.BrokenResourceError):
        while chunk := await stream.receive_some(1000):
            answer += chunk
    return answer


async def test_a_head_too_large_is_refused_and_the_wait_goes_on() -> None:
    with trio.fail_after(10):
        async with (
            LoopbackRedirect(open_browser=False, announce=lambda url: None) as redirect,
            trio.open_nursery() as nursery,
        ):
            result = await run_authorize(redirect, nursery)
            port = int(redirect.redirect_uri.split(":")[2].split("/")[0])
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                head = b"GET /callback?code=x HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 20_000
                # The server may stop reading at 16 KiB and close.
                with contextlib.suppress(trio.BrokenResourceError):
                    await stream.send_all(head)
                answer = await read_all(stream)
            # The 431 is lost when the close resets the connection before it is read.
            assert answer == b"" or answer.startswith(b"HTTP/1.1 431 ")
            async with client() as http:
                await http.get(f"{redirect.redirect_uri}?code={CODE}")
            assert await result.receive() == f"{redirect.redirect_uri}?code={CODE}"


async def test_garbage_is_answered_400() -> None:
    with trio.fail_after(10):
        async with (
            LoopbackRedirect(open_browser=False, announce=lambda u: None) as redirect,
            trio.open_nursery() as nursery,
        ):
            result = await run_authorize(redirect, nursery)
            port = int(redirect.redirect_uri.split(":")[2].split("/")[0])
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                await stream.send_all(b"NOT HTTP AT ALL\r\n\r\n")
                assert (await read_all(stream)).startswith(b"HTTP/1.1 400 ")
            async with client() as http:
                await http.get(f"{redirect.redirect_uri}?code={CODE}")
            await result.receive()


async def test_the_code_is_never_logged() -> None:
    with trio.fail_after(10), structlog.testing.capture_logs() as logs:
        async with (
            LoopbackRedirect(open_browser=False, announce=lambda url: None) as redirect,
            trio.open_nursery() as nursery,
        ):
            result = await run_authorize(redirect, nursery)
            async with client() as http:
                await http.get(f"{redirect.redirect_uri.removesuffix('/callback')}/x?code={CODE}")
                await http.get(f"{redirect.redirect_uri}?code={CODE}&state=s1")
            await result.receive()
    assert [e["outcome"] for e in logs if e["event"] == "loopback request"] == [
        "other path",
        "redirect",
    ]
    assert not any(CODE in text for event in logs for text in strings(event))


async def test_outside_its_block_it_refuses() -> None:
    redirect = LoopbackRedirect(open_browser=False)
    with pytest.raises(RuntimeError, match="not open"):
        _ = redirect.redirect_uri
    with pytest.raises(RuntimeError, match="not open"):
        await redirect.authorize(AUTHORIZE_URL)
    with pytest.raises(ValueError, match="must start with '/'"):
        LoopbackRedirect(path="callback")


async def test_an_ipv6_loopback_is_bracketed() -> None:
    try:
        redirect = await LoopbackRedirect(host="::1", open_browser=False).__aenter__()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        assert re.fullmatch(r"http://\[::1\]:\d+/callback", redirect.redirect_uri)
    finally:
        await redirect.__aexit__(None, None, None)
