"""The flow's own HTTP exchanges with authorization and resource servers: each bounded
in time and in bytes, reported to the wire watch as an HTTP exchange (never as a
JSON-RPC line), and turned into a typed :class:`AuthorizationError` when they fail."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from ..protocol.errors import AuthorizationError
from ..protocol.redact import Redactor

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_DOCUMENT", "Answer", "Exchanges"]

# Metadata documents, registrations and token answers are small; a server that sends
# more is not read further.
MAX_DOCUMENT: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP answer: its status, headers and body (at most :data:`MAX_DOCUMENT`)."""

    status: int
    headers: httpx.Headers
    body: bytes

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return msgspec.json.decode(self.body)
        except (msgspec.DecodeError, RecursionError):
            return None


class Exchanges:
    """Sends the flow's requests on ``client`` (redirects are never followed: a 3xx is
    an answer), each within ``timeout`` seconds; ``on_http`` sees one line per exchange
    (method, URL without its query, status), redacted."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        timeout: float,
        redactor: Redactor,
        on_http: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self.timeout = timeout
        self.redactor = redactor
        self.on_http = on_http

    async def send(
        self,
        method: str,
        url: str,
        *,
        step: str,
        headers: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        json: Any = None,
    ) -> Answer:
        """One exchange.

        Raises:
            AuthorizationError: no answer within the timeout, or the server could not
                be reached (``step`` names the step of the flow).
        """
        import httpx  # noqa: PLC0415 - loaded already: ``client`` is httpx's

        try:
            with trio.fail_after(self.timeout):
                request = self.client.build_request(
                    method,
                    url,
                    # The body is read raw, bounded in bytes as sent: a compressed one
                    # would be neither readable nor bounded by what it inflates to.
                    headers={"Accept-Encoding": "identity", **(headers or {})},
                    data=dict(form) if form is not None else None,
                    json=json,
                )
                response = await self.client.send(request, stream=True)
                try:
                    body = await _bounded_body(response)
                finally:
                    await response.aclose()
        except trio.TooSlowError:
            self._report(method, url, f"no answer within {self.timeout:g} s")
            raise _transient(
                f"{step}: no answer from {self._where(url)} within {self.timeout:g} s", step
            ) from None
        except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
            self._report(method, url, type(exc).__name__)
            raise _transient(
                f"{step}: {self._where(url)} could not be reached ({type(exc).__name__})", step
            ) from None
        self._report(method, url, str(response.status_code))
        if len(body) > MAX_DOCUMENT:
            raise AuthorizationError(
                f"{step}: the answer from {self._where(url)} is over {MAX_DOCUMENT} bytes",
                step=step,
            )
        return Answer(response.status_code, response.headers, bytes(body))

    def _where(self, url: str) -> str:
        return self.redactor.log_value(url.partition("?")[0], 160)

    def _report(self, method: str, url: str, outcome: str) -> None:
        if self.on_http is not None:
            self.on_http(f"HTTP {method} {self._where(url)} -> {outcome}")


def _transient(message: str, step: str) -> AuthorizationError:
    """A server that did not answer may answer later: unlike a refusal, a reconnect
    tries again."""
    error = AuthorizationError(message, step=step)
    error.permanent = False
    return error


async def _bounded_body(response: httpx.Response) -> bytearray:
    """The body, read no further than just past :data:`MAX_DOCUMENT`. Reading stops by a
    cancel, not a ``break``: the cancel runs out through httpx's chain of stream
    iterators and ends each of them, where a ``break`` would leave them to the garbage
    collector (and trio's warning that they were never closed)."""
    body = bytearray()
    with trio.CancelScope() as reading:
        async for chunk in response.aiter_raw():
            if len(body) <= MAX_DOCUMENT:  # chunks already buffered come without a read
                body += chunk
            if len(body) > MAX_DOCUMENT:
                reading.cancel()
    return body
