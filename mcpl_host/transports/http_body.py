"""Reading an httpx response's body in chunks, and stopping early without leaving debris.

httpx 0.28 and httpcore 1.0 hand a body through a chain of async generators. Left
early (a ``break``, a ``return``, or an exception raised in the loop's body rather than
inside the chain) only the outermost one is closed; the others wait for the garbage
collector, which trio reports as a ``ResourceWarning`` per generator (httpx issue 3686).
So :func:`read_chunks` stops by cancelling a scope of its own and letting the chain meet
that cancel at its next read: every generator then ends by an exception raised inside
it. A cancel from outside that lands while the chunk handler waits is met the same way.
Closing the response itself (the socket) is the caller's: ``HttpTransport._open``.

A request's body has the same trouble on the way out: httpx's ``ByteStream`` yields the
body from a generator, left unexhausted when a request is cancelled while being written.
:class:`OneChunk` is that body as a plain iterator.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import trio

__all__ = ["OneChunk", "content_kind", "read_chunks"]


class OneChunk(httpx.AsyncByteStream):
    """A request body sent as one chunk, iterated without a generator."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def __aiter__(self) -> _OneChunkIterator:
        return _OneChunkIterator(self._body)


class _OneChunkIterator:
    def __init__(self, body: bytes) -> None:
        self._body: bytes | None = body

    def __aiter__(self) -> _OneChunkIterator:
        return self

    async def __anext__(self) -> bytes:
        body, self._body = self._body, None
        if body is None:
            raise StopAsyncIteration
        return body


async def read_chunks(
    response: httpx.Response, on_chunk: Callable[[bytes], Awaitable[bool]]
) -> None:
    """Hand each chunk of ``response``'s body to ``on_chunk`` until it returns False or
    the body ends.

    Raises what reading raises (httpx's errors), and ``trio.Cancelled`` when the caller
    is cancelled.
    """
    stopping = False
    with trio.CancelScope() as reading:
        async for chunk in response.aiter_bytes():
            if stopping:
                continue  # chunks already buffered come without a read: the cancel waits
            try:
                if not await on_chunk(chunk):
                    stopping = True
                    reading.cancel()
            except trio.Cancelled:
                # Raised here it would leave the chain to the collector; trio raises a
                # cancel again at every checkpoint, so the chain's next read meets it.
                stopping = True
    # The body may have ended without another read after a cancel from outside.
    await trio.lowlevel.checkpoint_if_cancelled()


def content_kind(response: httpx.Response) -> str:
    """The media type of the response's ``Content-Type``, lowercased; "" when it has none.
    Never raises: httpx decodes a header value as Latin-1 when it is not UTF-8."""
    kind: str = response.headers.get("content-type", "")
    return kind.split(";", maxsplit=1)[0].strip().lower()
