"""The raw wire: what an exchange keeps of what it reads, and the headers it sends."""

from __future__ import annotations

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import msgspec
import pytest
import trio

from mcpl_host.check import httpwire as httpwire_module
from mcpl_host.check import wire as wire_module
from mcpl_host.check.httpwire import HttpWire
from mcpl_host.check.wire import Wire
from mcpl_host.protocol.redact import Redactor
from mcpl_host.transports.targets import HttpTarget

pytestmark = pytest.mark.timeout(10)


class ScriptedWire(Wire):
    """A wire whose server says ``lines`` and then nothing."""

    def __init__(self, lines: list[bytes]) -> None:
        super().__init__(Redactor())
        self._script = list(lines)

    async def _write(self, data: bytes) -> None:
        del data

    async def _read(self) -> bytes | None:
        await trio.lowlevel.checkpoint()
        if not self._script:
            await trio.sleep_forever()
        return self._script.pop(0)

    async def aclose(self) -> None:
        pass


def _progress(n: int, padding: int) -> bytes:
    note: dict[str, Any] = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": 1, "progress": n, "message": "x" * padding},
    }
    return msgspec.json.encode(note)


async def test_an_answer_after_many_large_lines_is_found_and_what_is_kept_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bound is lowered so that the test is fast: 64 KiB kept, 200 lines of 4 KiB read.
    monkeypatch.setattr(wire_module, "KEPT_BYTES", 64 * 1024)
    answer = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    wire = ScriptedWire([*(_progress(n, 4096) for n in range(200)), answer])
    with trio.fail_after(5):
        lines = await wire.received_within(3.0, until=lambda r: r.raw == answer)
    assert lines[-1].raw == answer
    assert sum(len(line.raw) for line in lines) <= 64 * 1024
    assert lines[0].value["params"]["progress"] == 0  # the first lines are kept too
    assert any("not kept" in line.text for line in wire.since())


async def test_an_answer_after_more_lines_than_the_limit_is_found() -> None:
    answer = b'{"jsonrpc":"2.0","id":"a","result":{}}'
    wire = ScriptedWire([*(_progress(n, 0) for n in range(50)), answer])
    with trio.fail_after(5):
        found = await wire.received_within(3.0, until=lambda r: r.raw == answer, limit=10)
    assert len(found) == 10
    assert found[-1].raw == answer


async def test_a_2026_07_28_post_names_its_tool_as_the_host_would_encode_it() -> None:
    # 2026-07-28 basic/transports, "Standard MCP request headers": a value that is not
    # printable ASCII goes as =?base64?...?=; the checker derives them as the host does.
    async with trio.open_nursery() as nursery, httpx.AsyncClient() as client:
        wire = HttpWire(HttpTarget("http://127.0.0.1:9/mcp"), client, nursery, Redactor())
        wire.version = wire_module.MODERN
        line = msgspec.json.encode(wire.request("tools/call", {"name": "café", "arguments": {}}))
        headers = wire.headers(line)
        await wire.aclose()
    assert headers["Mcp-Method"] == "tools/call"
    assert headers["Mcp-Name"] == "=?base64?Y2Fmw6k=?="
    assert headers["MCP-Protocol-Version"] == "2026-07-28"


class _Flooding(BaseHTTPRequestHandler):
    """Answers every POST with an event stream of 100 events of 16 KiB each."""

    def log_message(self, *args: Any) -> None:
        del args

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        event = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":"'
        event += b"x" * 16384 + b'"}\n\n'
        with contextlib.suppress(OSError):
            for _ in range(100):
                self.wfile.write(event)


async def test_the_lines_waiting_to_be_read_over_http_are_bounded_in_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bound = 64 * 1024
    monkeypatch.setattr(httpwire_module, "KEPT_BYTES", bound)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flooding)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery, httpx.AsyncClient() as client:
                wire = HttpWire(HttpTarget(url), client, nursery, Redactor())
                await wire.send(wire.request("ping"))
                await trio.sleep(1)  # nobody reads: the POST's reader must wait
                held = wire._lines.statistics().current_buffer_used * 16 * 1024
                lines = await wire.received_within(1, limit=1000)
                await wire.aclose()
                nursery.cancel_scope.cancel()
    finally:
        server.shutdown()
        server.server_close()
    assert 0 < held <= bound + 16 * 1024
    assert len(lines) == 100  # held back, not lost


async def test_a_server_streaming_requests_over_http_gets_a_bounded_number_of_posts() -> None:
    # Each answer to the server's own request is a POST of its own over HTTP; a server
    # whose POSTs never end and that keeps asking must not make the checker open more.
    async def never_answers(request: httpx.Request) -> httpx.Response:
        del request
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    with trio.fail_after(10):
        async with (
            trio.open_nursery() as nursery,
            httpx.AsyncClient(transport=httpx.MockTransport(never_answers)) as client,
        ):
            wire = HttpWire(HttpTarget("http://127.0.0.1:9/mcp"), client, nursery, Redactor())
            wire.version = "2025-11-25"
            for n in range(httpwire_module.MAX_POSTS + 8):
                await wire._serve(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % n)
            await trio.sleep(0.1)
            in_flight = wire._open_posts
            notes = [line.text for line in wire.since() if line.direction == "·"]
            nursery.cancel_scope.cancel()
    assert in_flight == httpwire_module.MAX_POSTS
    assert notes.count("a request from the server not answered: too many answers in flight") == 8
