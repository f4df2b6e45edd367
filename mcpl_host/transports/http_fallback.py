"""The fallback to the legacy HTTP+SSE transport, and which carrier is in use.

By the specification's "Backwards compatibility" rule as 2025-11-25 narrowed it: when
the POST of ``initialize`` (before any answer proved the transport) is refused with
400, 404 or 405 and a body that is not JSON-RPC (a Streamable HTTP server's own
refusal is one), the transport GETs the same URL for a legacy server's event stream
and, given its endpoint event, sends the message again over the legacy transport
(http_legacy.py), which carries every later line too. The GET is tried once per
transport: a message refused while it is under way waits for its outcome. An ``"sse"``
target opens the legacy session from the start (:meth:`Fallback.open_legacy`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from ..protocol.errors import TransportError
from .http_legacy import LegacySession, NoStream, status_text
from .http_peek import peek
from .http_pool import ConnectError, HttpClientError

if TYPE_CHECKING:
    from .http_core import HttpCore

__all__ = ["Fallback"]

# A refusal of initialize's POST with one of these (and a body that is not JSON-RPC: a
# Streamable HTTP server's own refusal is one) sends the host to the legacy transport
# (the specification's backwards compatibility rule, narrowed to these by 2025-11-25).
_FALLBACK_STATUSES: Final = frozenset({400, 404, 405})
_PATH_HINT: Final = (
    "check the URL's path (Streamable HTTP servers usually serve /mcp, legacy SSE servers /sse)"
)
# How much of a refusal's body the error shows.
_SAID_LIMIT: Final = 200
_plain = msgspec.json.Decoder()


def _is_json_rpc(body: bytes) -> bool:
    """Whether an error's body is a JSON-RPC message (or a batch of them): the refusal
    of a server that speaks MCP over this POST, never a reason to fall back."""
    try:
        value = _plain.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return False
    values = value if isinstance(value, list) else [value]
    return any(isinstance(v, dict) and v.get("jsonrpc") == "2.0" for v in values)


class Fallback:
    """Which carrier a transport uses: ``legacy`` once the legacy session carries the
    lines, None while Streamable HTTP does. ``proven`` turns true once a POST was
    answered 2xx (or the legacy session opened): the fallback is over, and a server
    lost afterwards is the connection's to reconnect to."""

    def __init__(
        self, core: HttpCore, start_soon: Callable[[Callable[[], Awaitable[None]]], None]
    ) -> None:
        self._core = core
        self._start_soon = start_soon  # a task in the transport's nursery
        self.legacy: LegacySession | None = None
        self.proven = False
        self._probed: LegacySession | NoStream | None = None  # the fallback's GET, once
        self._probing = trio.Lock()

    def applies(self, status: int, body: bytes, line: bytes) -> bool:
        """Whether the refusal ``status`` (with ``body``) of the POST of ``line`` sends
        the host to the legacy transport."""
        return (
            status in _FALLBACK_STATUSES
            and not self.proven
            and self._core.target.transport == "streamable-http"
            and not _is_json_rpc(body)
            # The specification's rule is for initialize; server/discover, asked
            # first by a dual-era host, is refused by Streamable HTTP servers too.
            and not any(m.method == "server/discover" for m in peek(line))
        )

    async def open_legacy(self) -> None:
        """Open the legacy session (an ``"sse"`` target): GET the URL and read its
        stream up to the endpoint event.

        Raises:
            TransportError: no connection (``reason="connect-failed"``), no event stream
                at the URL or no endpoint event in time (``"no-endpoint"``), an endpoint
                refused (``"endpoint-refused"``).
            AuthorizationRequired, AuthorizationError: the GET was not authorized.
        """
        found = await self._probe()
        if isinstance(found, NoStream):
            raise TransportError(
                f"GET {self._core.description} -> {found.describe()}: no SSE stream there; "
                "check the URL's path (legacy SSE servers usually serve /sse; for a "
                "Streamable HTTP server, usually at /mcp, drop the sse+ prefix)",
                reason="no-endpoint",
            )
        self._use(found)

    async def fall_back(self, status: int, body: bytes, line: bytes, waiting: set[Any]) -> None:
        """A POST (``initialize``, before any answer proved the transport) was refused
        with 400, 404 or 405: GET the URL for a legacy server's event stream (once), and
        send the message again over it when its endpoint event comes.

        Raises:
            TransportError: no event stream at the URL either (``reason="no-endpoint"``:
                the message names both answers, and a 400's body, which usually says
                what the server found wrong), or as :meth:`_probe`.
        """
        core = self._core
        core.log.info("POST refused: looking for a legacy SSE stream", status=status)
        found = await self._probe()
        if isinstance(found, NoStream):
            # A 400 is the server's objection to the request, not to the path: its
            # words, cut and redacted, say more than a hint about paths would.
            said = body.decode("utf-8", "replace").strip()
            why = (
                f"the server said {core.safe(said[:_SAID_LIMIT])!r}"
                if status == 400 and said
                else ""
            )
            raise TransportError(
                f"POST {core.description} -> {status_text(status)} and no SSE stream there "
                f"(GET -> {found.describe()}): {why or _PATH_HINT}",
                reason="no-endpoint",
            )
        if self.legacy is None:
            core.log.info(
                "legacy transport in use",
                transport="sse",
                reason=f"POST -> {status}; GET gave an SSE stream and its endpoint",
            )
            self._use(found)
        await found.exchange(line, waiting)

    async def _probe(self) -> LegacySession | NoStream:
        """GET the URL for a legacy server's event stream, once per transport: a
        message refused while the GET is under way waits for its outcome.

        Raises:
            TransportError: no connection (``reason="connect-failed"``), no answer or
                no endpoint event in time, an answer that broke off (``"no-endpoint"``),
                an endpoint refused (``"endpoint-refused"``).
            AuthorizationRequired, AuthorizationError: the GET was not authorized.
        """
        core = self._core
        async with self._probing:
            if self._probed is not None:
                return self._probed
            try:
                self._probed = await LegacySession.open(core)
            except ConnectError as exc:
                raise core.unreachable(exc) from None
            except trio.TooSlowError:
                raise TransportError(
                    f"GET {core.description}: no response within {core.target.timeout:g} s",
                    reason="no-endpoint",
                ) from None
            except HttpClientError as exc:
                raise TransportError(
                    f"GET {core.description}: the answer broke off ({type(exc).__name__})",
                    reason="no-endpoint",
                ) from None
            return self._probed

    def _use(self, session: LegacySession) -> None:
        self.legacy = session
        self.proven = True
        self._start_soon(session.listen)
