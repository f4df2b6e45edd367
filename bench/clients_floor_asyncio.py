"""The asyncio floor: a bare asyncio client, no MCP library. What an asyncio program
pays for JSON-RPC with the least machinery: an asyncio protocol, an id per request and
a future waiting for its answer, msgspec to encode the request and decode the answer
(the envelope with ``result`` kept raw, then the tool result as a struct).

- stdio: ``loop.subprocess_exec`` with a ``SubprocessProtocol``; answers are split into
  lines and matched to their futures by id;
- HTTP: ``loop.create_connection`` with a ``Protocol`` per keep-alive connection, one
  exchange at a time each (``bench/http_wire.py``); a call takes an idle connection or
  opens one, and gives it back (64 in flight: 64 connections).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from http_wire import Endpoint, header, response_end
from measure import INIT_PARAMS, SERVER, Report, Setup, asyncio_task_group, check, timed_calls


def child_floor_asyncio(setup: Setup) -> None:
    started = time.perf_counter()
    import asyncio

    from floor_messages import (
        INITIALIZED,
        Answer,
        CallParams,
        EchoArguments,
        answer_of,
        text_of,
    )
    from floor_messages import (
        request as encode_request,
    )

    report = Report(started)

    # -- stdio ------------------------------------------------------------------------

    class Pipe(asyncio.SubprocessProtocol):
        def __init__(self) -> None:
            self.waiting: dict[int | str | None, asyncio.Future[Answer]] = {}
            self.exited = asyncio.get_running_loop().create_future()
            self._buffer = bytearray()

        def pipe_data_received(self, fd: int, data: bytes | str) -> None:
            del fd
            start = len(self._buffer)
            self._buffer += data if isinstance(data, bytes) else data.encode()
            end = self._buffer.rfind(b"\n", start)  # never rescan a long partial line
            if end < 0:
                return
            lines = bytes(self._buffer[: end + 1]).split(b"\n")
            del self._buffer[: end + 1]
            for line in lines:
                if line:
                    answer = answer_of(line)
                    self.waiting.pop(answer.id).set_result(answer)

        def process_exited(self) -> None:
            self.exited.set_result(None)

    class StdioClient:
        def __init__(self, transport: asyncio.SubprocessTransport, pipe: Pipe) -> None:
            self.transport, self.pipe = transport, pipe
            stdin = transport.get_pipe_transport(0)
            assert isinstance(stdin, asyncio.WriteTransport)
            self._write = stdin.write
            self._ids = 0

        async def request(self, method: str, params: Any) -> Answer:
            self._ids += 1
            future = asyncio.get_running_loop().create_future()
            self.pipe.waiting[self._ids] = future
            self._write(encode_request(self._ids, method, params) + b"\n")
            return await future

        def notify(self, body: bytes) -> None:
            self._write(body + b"\n")

        async def aclose(self) -> None:
            stdin = self.transport.get_pipe_transport(0)
            assert stdin is not None
            stdin.close()
            await self.pipe.exited
            self.transport.close()

    async def open_stdio() -> StdioClient:
        loop = asyncio.get_running_loop()
        transport, pipe = await loop.subprocess_exec(
            Pipe, *SERVER, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        client = StdioClient(transport, pipe)
        await client.request("initialize", INIT_PARAMS)
        client.notify(INITIALIZED)
        return client

    # -- HTTP --------------------------------------------------------------------------

    class HttpConnection(asyncio.Protocol):
        def __init__(self) -> None:
            self.transport: asyncio.Transport | None = None
            self._buffer = bytearray()
            self._waiting: asyncio.Future[tuple[bytes, bytes]] | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self._buffer += data
            ends = response_end(self._buffer)
            if ends is None or len(self._buffer) < ends[1] or self._waiting is None:
                return
            head_end, end = ends
            head, body = bytes(self._buffer[:head_end]), bytes(self._buffer[head_end + 4 : end])
            del self._buffer[:end]
            self._waiting.set_result((head, body))
            self._waiting = None

        def connection_lost(self, exc: Exception | None) -> None:
            if self._waiting is not None:
                self._waiting.set_exception(exc or ConnectionError("closed by the server"))

        async def exchange(self, request: bytes) -> tuple[bytes, bytes]:
            assert self.transport is not None
            self._waiting = asyncio.get_running_loop().create_future()
            self.transport.write(request)
            return await self._waiting

    class HttpClient:
        def __init__(self, endpoint: Endpoint) -> None:
            self.endpoint = endpoint
            self.session: bytes | None = None
            self._idle: list[HttpConnection] = []
            self._ids = 0

        async def post(self, body: bytes) -> tuple[bytes, bytes]:
            if self._idle:
                conn = self._idle.pop()
            else:
                loop = asyncio.get_running_loop()
                _, conn = await loop.create_connection(
                    HttpConnection, self.endpoint.host, self.endpoint.port
                )
            try:
                return await conn.exchange(self.endpoint.post(body, self.session))
            finally:
                self._idle.append(conn)

        async def request(self, method: str, params: Any) -> Answer:
            self._ids += 1
            _, body = await self.post(encode_request(self._ids, method, params))
            return answer_of(body)

        async def aclose(self) -> None:
            for conn in self._idle:
                assert conn.transport is not None
                conn.transport.close()

    async def open_http() -> HttpClient:
        client = HttpClient(Endpoint(setup.url))
        head, _ = await client.post(encode_request(0, "initialize", INIT_PARAMS))
        client.session = header(head, b"mcp-session-id")
        await client.post(INITIALIZED)
        return client

    # -- the run -----------------------------------------------------------------------

    async def main() -> None:
        opened: Callable[[], Awaitable[Any]] = open_http if setup.http else open_stdio
        client = None
        for _ in range(setup.handshakes):
            if client is not None:
                await client.aclose()
            began = time.perf_counter()
            client = await opened()
            report.handshake(time.perf_counter() - began)
        assert client is not None

        async def calls(n: int, text: str = "hello") -> None:
            for _ in range(n):
                params = CallParams("echo", EchoArguments(text))
                check(text_of(await client.request("tools/call", params)), len(text))

        await timed_calls(report, setup, calls, asyncio_task_group)
        await client.aclose()
        report.emit()

    asyncio.run(main())
