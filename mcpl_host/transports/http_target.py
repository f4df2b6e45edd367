"""The target of a Streamable HTTP server: its URL and what to send with every request."""

from __future__ import annotations

import math
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal
from urllib.parse import urlsplit

from ..protocol.errors import ConfigurationError
from ..protocol.redact import Redactor, log_value

if TYPE_CHECKING:
    from ..auth.flow import OAuth

__all__ = [
    "SSE_PREFIX",
    "HttpTarget",
    "HttpTransportKind",
    "describe_http",
    "has_authorization",
    "http_redactor",
]

# How a TARGET names the legacy HTTP+SSE transport: ``sse+https://host/sse``.
SSE_PREFIX: Final = "sse+"
HttpTransportKind = Literal["streamable-http", "sse"]

_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Set by the transport on every request: configuring them would break the protocol.
_OWN_HEADERS: Final = frozenset(
    {"accept", "content-type", "content-length", "host", "mcp-session-id", "mcp-protocol-version"}
)


def _no_headers() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class HttpTarget:
    """An MCP server over HTTP at ``url`` (``http://`` or ``https://``).

    ``transport`` is ``"streamable-http"`` (2025-03-26 on; when the server refuses the
    initialize POST with 400, 404 or 405 the host falls back to the legacy transport,
    as the specification's backwards-compatibility section says) or ``"sse"`` (the
    2024-11-05 HTTP+SSE transport only: GET ``url`` for the event stream, POST to the
    endpoint it names).

    ``headers`` go with every request (``Authorization: Bearer ...``, say); their values
    are secrets: never logged, masked wherever they could show. ``timeout`` bounds
    connecting and the wait for an answer's headers (a stream, once open, may stay
    quiet as long as the server likes; docs/http.md, "Bounds"); ``ssl_context``
    replaces the default TLS verification for ``https://``. ``auth`` runs MCP
    authorization for the server (an :class:`~mcpl_host.auth.OAuth`; docs/auth.md): its
    tokens go in ``Authorization`` on every request, and a 401 or 403 is its to answer.

    Raises:
        ConfigurationError: a URL that is not http/https, has no host, has user info
            (put credentials in ``headers``) or a fragment; a header with a bad name, one
            the transport sets itself, or a value holding CR, LF or NUL; a timeout that
            is not positive.
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=_no_headers, hash=False)
    timeout: float = 30.0
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False, hash=False)
    auth: OAuth | None = field(default=None, compare=False, hash=False)
    transport: HttpTransportKind = "streamable-http"

    def __post_init__(self) -> None:
        if self.transport not in ("streamable-http", "sse"):
            raise ConfigurationError('an HTTP transport is "streamable-http" or "sse"')
        if not isinstance(self.url, str):
            raise ConfigurationError("an HTTP target needs a URL")
        try:
            parts = urlsplit(self.url)
            parts.port  # noqa: B018 - validates the port
        except ValueError:
            raise ConfigurationError("an HTTP target URL has a bad port") from None
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ConfigurationError("an HTTP target is an http:// or https:// URL with a host")
        if parts.username is not None or parts.password is not None:
            raise ConfigurationError(
                "an HTTP target URL must not carry user info: put credentials in headers"
            )
        if parts.fragment:
            raise ConfigurationError("an HTTP target URL must not have a fragment")
        if not self.url.isascii() or any(ord(ch) < 0x21 for ch in self.url):
            raise ConfigurationError("an HTTP target URL must be printable ASCII")
        if not isinstance(self.headers, Mapping):
            raise ConfigurationError("HTTP headers must be a mapping of names to values")
        copied: dict[str, str] = {}
        for name, value in self.headers.items():
            if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
                raise ConfigurationError(f"invalid HTTP header name {log_value(str(name))!r}")
            if name.lower() in _OWN_HEADERS:
                raise ConfigurationError(f"HTTP header {name} is set by the transport")
            # httpx sends header values as ASCII: anything else would fail every POST.
            if (
                not isinstance(value, str)
                or not value.isascii()
                or any(ch in value for ch in "\r\n\0")
            ):
                raise ConfigurationError(
                    f"HTTP header {name} must be an ASCII string without CR, LF or NUL"
                )
            copied[name] = value
        object.__setattr__(self, "headers", MappingProxyType(copied))
        timeout: object = self.timeout
        if not (
            isinstance(timeout, (int, float))
            and not isinstance(timeout, bool)
            and math.isfinite(timeout)
            and timeout > 0
        ):
            raise ConfigurationError("an HTTP timeout must be a positive number")
        if self.ssl_context is not None and not isinstance(self.ssl_context, ssl.SSLContext):
            raise ConfigurationError("an HTTP ssl_context must be an ssl.SSLContext")
        if self.auth is not None and not _is_oauth(self.auth):
            raise ConfigurationError("an HTTP target's auth must be an mcpl_host.auth.OAuth")
        if self.auth is not None and has_authorization(copied):
            raise ConfigurationError(
                "an HTTP target with auth sets Authorization itself: remove the header"
            )

    def __repr__(self) -> str:
        return f"HttpTarget({describe_http(self)!r}, headers={sorted(self.headers)!r})"


def _is_oauth(value: object) -> bool:
    # Imported here: the authorization machinery (httpx, PyJWT, cryptography) loads only
    # for a target that is given an ``auth``, never for a stdio-only host.
    from ..auth.flow import OAuth  # noqa: PLC0415

    return isinstance(value, OAuth)


def has_authorization(headers: Mapping[str, str]) -> bool:
    """Whether configured headers authorize on their own (a static token): then no
    OAuth is given to the target, and none may be."""
    return any(name.lower() == "authorization" for name in headers)


def describe_http(target: HttpTarget) -> str:
    """Scheme, host, port and path: the query may hold credentials."""
    parts = urlsplit(target.url)
    prefix = SSE_PREFIX if target.transport == "sse" else ""
    where = f"{log_value(parts.netloc, 80)}{log_value(parts.path, 120)}"
    return f"{prefix}{parts.scheme.lower()}://{where}"


def http_redactor(target: HttpTarget, extra_secrets: tuple[str, ...] | list[str]) -> Redactor:
    found = Redactor.from_config(headers=target.headers, urls=[target.url])
    values = [v for v in target.headers.values() if v]
    bearer = [v.partition(" ")[2] for v in values if " " in v]  # "Bearer TOKEN": TOKEN too
    configured = target.auth.secrets() if target.auth is not None else []
    return Redactor([*found.secrets, *values, *bearer, *configured, *extra_secrets])
