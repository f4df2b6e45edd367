"""Reading a response's body in chunks, and what kind of body it is.

The body comes from :class:`~.http_pool.HttpResponse` one read at a time, with no chain
of async generators to leave behind when reading stops early (httpx's had to be ended
by a cancel: httpx issue 3686). Closing the response (the socket, or its return to the
pool) is the caller's: ``HttpCore.open`` (http_core.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .http_pool import HttpResponse

__all__ = ["content_kind", "read_chunks"]


async def read_chunks(response: HttpResponse, on_chunk: Callable[[bytes], Awaitable[bool]]) -> None:
    """Hand each chunk of ``response``'s body to ``on_chunk`` until it returns False or
    the body ends.

    Raises:
        ReadError, RemoteProtocolError: (http_pool) the body could not be read.
        trio.Cancelled: the caller was cancelled.
    """
    while True:
        chunk = await response.read_chunk()
        if not chunk or not await on_chunk(chunk):
            return


def content_kind(response: HttpResponse) -> str:
    """The media type of the response's ``Content-Type``, lowercased; "" when it has none.
    Never raises: a value that is not UTF-8 is decoded as Latin-1."""
    kind = response.header(b"content-type") or ""
    return kind.split(";", maxsplit=1)[0].strip().lower()
