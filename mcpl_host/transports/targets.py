"""Where a server lives: a program to spawn, a TCP address, a Unix socket path, a
WebSocket URL or an HTTP URL (Streamable HTTP, or the legacy HTTP+SSE transport).

Targets are plain frozen values, validated when built, so a bad configuration fails
before anything is spawned or dialled (and is never retried: :class:`ConfigurationError`
is permanent). Nothing here performs I/O.
"""

from __future__ import annotations

import base64
import ipaddress
import math
import os
import re
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, NamedTuple, TypeAlias
from urllib.parse import quote, unquote, urlsplit

from ..protocol.errors import ConfigurationError
from ..protocol.redact import REDACTION_MARK, Redactor, log_value
from .http_target import SSE_PREFIX, HttpTarget, describe_http, http_redactor

__all__ = [
    "DialRedactor",
    "HttpTarget",
    "StdioTarget",
    "Target",
    "TcpTarget",
    "TokenProvider",
    "UnixTarget",
    "WebSocketTarget",
    "describe",
    "parse_target",
    "redactor_for",
]

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_HOSTNAME: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?")
_PORT: Final = re.compile(r"[0-9]{1,5}")
_EXPECTED: Final = (
    "expected tcp://HOST:PORT, unix:PATH, ws(s)://HOST[:PORT][/PATH], "
    "http(s)://HOST[:PORT][/PATH] or sse+http(s)://HOST[:PORT][/PATH]"
)
# RFC 9110 token characters: what a header name may be made of.
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Set by the WebSocket handshake itself; a second copy would break or confuse it.
_HANDSHAKE_HEADERS: Final = frozenset(
    {"host", "connection", "upgrade", "content-length", "transfer-encoding"}
)


def _empty_env() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class StdioTarget:
    """A server run as a child process speaking over its stdin and stdout.

    ``argv`` is the program and its arguments, never a shell command line: nothing is
    split or interpreted. ``env`` is added to the child's allowlisted environment (see
    :mod:`mcpl_host.transports.environment`); ``inherit_env`` passes the host's whole
    environment instead of the allowlist.

    Raises:
        ConfigurationError: ``argv`` is a string, empty, or holds a non-string or an
            empty program name; an argument or env entry holds a NUL; an env name or
            value is not a string.
    """

    argv: tuple[str, ...]
    cwd: str | None = None
    # A read-only mapping is not hashable: hashing leaves it out, equality does not.
    env: Mapping[str, str] = field(default_factory=_empty_env, hash=False)
    inherit_env: bool = False

    def __post_init__(self) -> None:
        argv: object = self.argv
        if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
            raise ConfigurationError(
                "a stdio command must be a list of program and arguments, not a shell string"
            )
        items = tuple(argv)
        if not items:
            raise ConfigurationError("a stdio command needs at least the program to run")
        for index, item in enumerate(items):
            if not isinstance(item, str):
                raise ConfigurationError(
                    f"stdio argument {index} is a {type(item).__name__}, not a string"
                )
            if "\0" in item:
                raise ConfigurationError(f"stdio argument {index} holds a NUL character")
        if not items[0]:
            raise ConfigurationError("a stdio command's program name is empty")
        cwd: object = self.cwd
        if cwd is not None and (not isinstance(cwd, str) or not cwd or "\0" in cwd):
            raise ConfigurationError("a stdio working directory must be a non-empty path")
        env: object = self.env
        if not isinstance(env, Mapping):
            raise ConfigurationError("a stdio env must be a mapping of names to values")
        copied: dict[str, str] = {}
        for name, value in env.items():
            # Only names are shown: values are where the credentials are.
            if not isinstance(name, str) or not name or "=" in name or "\0" in name:
                raise ConfigurationError(f"invalid environment variable name {name!r}")
            if not isinstance(value, str) or "\0" in value:
                raise ConfigurationError(f"environment variable {name} must be a string")
            copied[name] = value
        if not isinstance(self.inherit_env, bool):
            raise ConfigurationError("inherit_env must be true or false")
        # A caller's list or dict must not change the target after validation.
        object.__setattr__(self, "argv", items)
        object.__setattr__(self, "env", MappingProxyType(copied))

    def __repr__(self) -> str:
        # Targets end up in logs and tracebacks: show env names only, argv redacted.
        redactor = redactor_for(self)
        argv = tuple(redactor.redact(arg) for arg in self.argv)
        env = dict.fromkeys(self.env, REDACTION_MARK)
        return (
            f"StdioTarget(argv={argv!r}, cwd={self.cwd!r}, env={env!r}, "
            f"inherit_env={self.inherit_env!r})"
        )

    @classmethod
    def of(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
    ) -> StdioTarget:
        """A validated target from a configuration's command list.

        Raises:
            ConfigurationError: as for the constructor (a shell string is refused).
        """
        if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
            raise ConfigurationError(
                "a stdio command must be a list of program and arguments, not a shell string"
            )
        return cls(
            argv=tuple(argv),
            cwd=None if cwd is None else os.fspath(cwd),
            env=MappingProxyType(dict(env or {})),
            inherit_env=inherit_env,
        )


@dataclass(frozen=True, slots=True)
class TcpTarget:
    """A server listening on a TCP address. ``host`` holds IPv6 without brackets.

    Raises:
        ConfigurationError: empty host, or a port outside 1..65535.
    """

    host: str
    port: int

    def __post_init__(self) -> None:
        if not isinstance(self.host, str) or not self.host:
            raise ConfigurationError("a tcp target needs a host")
        if isinstance(self.port, bool) or not isinstance(self.port, int):
            raise ConfigurationError("a tcp port must be an integer")
        if not 1 <= self.port <= 65535:
            raise ConfigurationError(f"tcp port {self.port} is outside 1..65535")


@dataclass(frozen=True, slots=True)
class UnixTarget:
    """A server listening on a Unix domain socket at ``path``.

    Raises:
        ConfigurationError: empty path, or a path holding a NUL.
    """

    path: str

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path or "\0" in self.path:
            raise ConfigurationError("a unix target needs a socket path")


TokenProvider: TypeAlias = Callable[[], str | Awaitable[str]]
"""Called at each dial for the token to send: returns it, or an awaitable of it."""


class WebSocketURL(NamedTuple):
    """The parts of a validated ``ws://`` or ``wss://`` URL."""

    secure: bool
    host: str  # IPv6 without brackets
    port: int  # the scheme's default when the URL has none
    authority: str  # host[:port] as written, without user info: the Host header
    path: str  # never empty
    query: str
    username: str | None  # percent-decoded
    password: str | None


@dataclass(frozen=True, slots=True)
class WebSocketTarget:
    """A server reached over a WebSocket at ``url`` (``ws://`` or ``wss://``).

    ``token`` is sent at each dial as the ``token`` query parameter (appended to the
    URL's own query): a string, or a :data:`TokenProvider` called at every dial, so a
    reconnect sends a fresh token. ``headers`` go with the upgrade request; their values
    are treated as secrets. User info in the URL is sent as HTTP Basic authorization
    (unless ``headers`` has an ``Authorization``). ``open_timeout`` bounds the TCP, TLS
    and WebSocket handshakes (the connection's initialize timeout bounds them anyway).
    ``max_message_bytes`` bounds one incoming frame; None takes the opener's bound.
    ``ssl_context`` replaces the default TLS context for ``wss://``.

    None of the secrets (token, header values, user info, a secret-looking query
    parameter) shows in the ``repr``, in :func:`describe` or in any error message.

    Raises:
        ConfigurationError: a URL that is not ws/wss, has no valid host, has a bad port,
            a fragment, or characters outside printable ASCII; a token that is neither
            a non-empty string nor callable; a header with a bad name, one the
            handshake sets itself, or a value holding CR, LF or NUL; a timeout or bound
            that is not positive.
    """

    url: str
    token: str | TokenProvider | None = None
    headers: Mapping[str, str] = field(default_factory=_empty_env, hash=False)
    open_timeout: float | None = None
    max_message_bytes: int | None = None
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        split_websocket_url(self.url)  # validates
        token: object = self.token
        if token is not None and not callable(token) and (not isinstance(token, str) or not token):
            raise ConfigurationError(
                "a WebSocket token must be a non-empty string or a callable returning one"
            )
        headers: object = self.headers
        if not isinstance(headers, Mapping):
            raise ConfigurationError("WebSocket headers must be a mapping of names to values")
        copied: dict[str, str] = {}
        for name, value in headers.items():
            # Only names are shown: values are where the credentials are.
            if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
                raise ConfigurationError(f"invalid WebSocket header name {log_value(str(name))!r}")
            lowered = name.lower()
            if lowered in _HANDSHAKE_HEADERS or lowered.startswith("sec-websocket-"):
                raise ConfigurationError(
                    f"WebSocket header {name} is set by the handshake and cannot be configured"
                )
            if not isinstance(value, str) or any(ch in value for ch in "\r\n\0"):
                raise ConfigurationError(
                    f"WebSocket header {name} must be a string without CR, LF or NUL"
                )
            copied[name] = value
        timeout: object = self.open_timeout
        if timeout is not None and not (
            isinstance(timeout, (int, float))
            and not isinstance(timeout, bool)
            and math.isfinite(timeout)
            and timeout > 0
        ):
            raise ConfigurationError("a WebSocket open_timeout must be a positive number")
        limit: object = self.max_message_bytes
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ConfigurationError("a WebSocket max_message_bytes must be a positive integer")
        context: object = self.ssl_context
        if context is not None and not isinstance(context, ssl.SSLContext):
            raise ConfigurationError("a WebSocket ssl_context must be an ssl.SSLContext")
        # A caller's dict must not change the target after validation.
        object.__setattr__(self, "headers", MappingProxyType(copied))

    def __repr__(self) -> str:
        # Targets end up in logs and tracebacks: no token, no header value, no query.
        token = (
            None if self.token is None else "<provider>" if callable(self.token) else REDACTION_MARK
        )
        headers = dict.fromkeys(self.headers, REDACTION_MARK)
        return (
            f"WebSocketTarget(url={describe(self)!r}, token={token!r}, headers={headers!r}, "
            f"open_timeout={self.open_timeout!r}, max_message_bytes={self.max_message_bytes!r})"
        )


Target = StdioTarget | TcpTarget | UnixTarget | WebSocketTarget | HttpTarget


def split_websocket_url(url: str) -> WebSocketURL:
    """The parts of a ``ws://`` or ``wss://`` URL, validated.

    Raises:
        ConfigurationError: as for :class:`WebSocketTarget`; the message never repeats
            user info or a query.
    """
    if not isinstance(url, str):
        raise ConfigurationError("a WebSocket URL must be text")
    scheme, _, rest = url.partition(":")
    kind = scheme.lower()
    if kind not in ("ws", "wss") or not rest.startswith("//"):
        raise ConfigurationError(
            f"a WebSocket URL is written ws://HOST[:PORT][/PATH] or wss://..., not {_shown(url)}"
        )
    if any(not " " < ch < "\x7f" for ch in url):
        raise ConfigurationError(
            "a WebSocket URL must be printable ASCII without spaces (percent-encode the rest)"
        )
    if "#" in url:
        raise ConfigurationError(f"a WebSocket URL takes no fragment: {_shown(url)}")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ConfigurationError(f"not a valid WebSocket URL: {_shown(url)}") from None
    userinfo, at, authority = parts.netloc.rpartition("@")
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise ConfigurationError(f"unclosed '[' in WebSocket URL {_shown(url)}")
        host, after = authority[1:close], authority[close + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ConfigurationError(
                f"not an IPv6 address inside [...] in WebSocket URL {_shown(url)}"
            ) from None
    else:
        host, colon, port_text = authority.partition(":")
        after = colon + port_text
        if not _HOSTNAME.fullmatch(host):
            raise ConfigurationError(f"not a valid host in WebSocket URL {_shown(url)}")
    secure = kind == "wss"
    port = 443 if secure else 80
    if after:
        port_text = after[1:] if after.startswith(":") else ""
        if (
            not after.startswith(":")
            or not _PORT.fullmatch(port_text)
            or not 1 <= int(port_text) <= 65535
        ):
            raise ConfigurationError(
                f"a WebSocket port must be a number in 1..65535: {_shown(url)}"
            )
        port = int(port_text)
    username = password = None
    if at:
        name, colon, secret = userinfo.partition(":")
        username = unquote(name)
        password = unquote(secret) if colon else None
    return WebSocketURL(
        secure=secure,
        host=host,
        port=port,
        authority=authority,
        path=parts.path or "/",
        query=parts.query,
        username=username,
        password=password,
    )


def websocket_resource(url: WebSocketURL, token: str | None) -> str:
    """The request target to dial: the URL's path and query, plus ``token=`` if any."""
    query = url.query
    if token is not None:
        pair = "token=" + quote(token, safe="")
        query = f"{query}&{pair}" if query else pair
    return f"{url.path}?{query}" if query else url.path


def basic_credentials(url: WebSocketURL) -> str | None:
    """The ``Authorization`` value for the URL's user info, or None without any."""
    if url.username is None:
        return None
    pair = f"{url.username}:{url.password or ''}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


def token_secrets(token: str) -> list[str]:
    """How a token can appear: as given, and as sent in the query."""
    return [token, quote(token, safe="")]


def parse_target(text: str) -> TcpTarget | UnixTarget | WebSocketTarget | HttpTarget:
    """Parse ``tcp://HOST:PORT`` (``tcp://[::1]:PORT`` for IPv6), ``unix:PATH``, a
    ``ws://`` / ``wss://`` URL (a :class:`WebSocketTarget` without token or headers) or an
    ``http://`` / ``https://`` URL (an :class:`HttpTarget` without headers; with
    ``sse+`` before the scheme, one on the legacy HTTP+SSE transport).

    ``unix:///abs/path`` gives ``/abs/path``; the path is taken literally (no
    percent-decoding). User info, paths, queries and fragments are refused on tcp.

    Raises:
        ConfigurationError: anything else. The message never repeats user info or a
            query, where credentials would be.
    """
    if not isinstance(text, str):
        raise ConfigurationError(f"a target must be text; {_EXPECTED}")
    scheme, colon, rest = text.partition(":")
    if not colon or not _SCHEME.fullmatch(scheme):
        raise ConfigurationError(f"not a server address; {_EXPECTED}")
    kind = scheme.lower()
    if kind == "tcp":
        return _parse_tcp(text, rest)
    if kind == "unix":
        return _parse_unix(text, rest)
    if kind in ("ws", "wss"):
        return WebSocketTarget(text)
    if kind in ("http", "https"):
        return HttpTarget(text)
    if kind in ("sse+http", "sse+https"):
        return HttpTarget(text[len(SSE_PREFIX) :], transport="sse")
    raise ConfigurationError(f"unsupported target scheme {log_value(scheme, 32)!r}; {_EXPECTED}")


def _shown(text: str) -> str:
    """The target as an error message may show it."""
    if any(ch in text for ch in "@?#"):
        return text.partition(":")[0] + ":…"  # user info or a query: show none of it
    return Redactor.from_config(urls=[text]).log_value(text, 120)


def _parse_tcp(text: str, rest: str) -> TcpTarget:
    if not rest.startswith("//"):
        raise ConfigurationError(f"a tcp target is written tcp://HOST:PORT, not {_shown(text)}")
    authority = rest[2:]
    if authority.endswith("/"):
        authority = authority[:-1]
    if "@" in authority:
        raise ConfigurationError("a tcp target must not carry user info (credentials)")
    if any(ch in authority for ch in "/?#"):
        raise ConfigurationError(f"a tcp target takes no path, query or fragment: {_shown(text)}")
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise ConfigurationError(f"unclosed '[' in tcp target {_shown(text)}")
        host, after = authority[1:close], authority[close + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ConfigurationError(
                f"not an IPv6 address inside [...] in tcp target {_shown(text)}"
            ) from None
        if not after.startswith(":"):
            raise ConfigurationError(f"a tcp target needs a port: {_shown(text)}")
        port_text = after[1:]
    else:
        host, colon, port_text = authority.rpartition(":")
        if not colon:
            raise ConfigurationError(f"a tcp target needs a port: {_shown(text)}")
        if ":" in host:
            raise ConfigurationError(
                f"an IPv6 address must be written in brackets, tcp://[ADDR]:PORT: {_shown(text)}"
            )
        if not _HOSTNAME.fullmatch(host):
            raise ConfigurationError(f"not a valid host in tcp target {_shown(text)}")
    if not _PORT.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise ConfigurationError(f"a tcp port must be a number in 1..65535: {_shown(text)}")
    return TcpTarget(host, int(port_text))


def _parse_unix(text: str, rest: str) -> UnixTarget:
    path = rest
    if rest.startswith("//"):
        # The URL form: only an empty authority makes sense for a local socket.
        path = rest[2:]
        if not path.startswith("/"):
            raise ConfigurationError(
                f"a unix URL is written unix:///ABSOLUTE/PATH, not {_shown(text)}"
            )
    if not path:
        raise ConfigurationError("a unix target needs a socket path: unix:PATH")
    if "\0" in path:
        raise ConfigurationError("a unix socket path must not hold a NUL character")
    return UnixTarget(path)


def describe(target: Target) -> str:
    """A short label for ``target``, safe for logs and error messages.

    A stdio target shows only its program's name and how many arguments follow:
    arguments are where tokens are passed, and not every token looks like one.
    Raises nothing.
    """
    if isinstance(target, StdioTarget):
        program = os.path.basename(target.argv[0].rstrip("/\\")) or target.argv[0]
        label = redactor_for(target).log_value(program, 64)
        count = len(target.argv) - 1
        return f"stdio:{label} (+{count} arg{'' if count == 1 else 's'})"
    if isinstance(target, TcpTarget):
        host = f"[{target.host}]" if ":" in target.host else target.host
        return f"tcp://{log_value(host, 80)}:{target.port}"
    if isinstance(target, WebSocketTarget):
        # Scheme, host, port and path only: user info and the query hold credentials.
        url = split_websocket_url(target.url)
        scheme = "wss" if url.secure else "ws"
        return f"{scheme}://{log_value(url.authority, 80)}{log_value(url.path, 120)}"
    if isinstance(target, HttpTarget):
        return describe_http(target)
    return f"unix:{log_value(target.path, 120)}"


def redactor_for(target: Target, *, extra_secrets: Sequence[str] = ()) -> Redactor:
    """The redactor for one server: its configured credentials plus ``extra_secrets``.

    Build it once per connection and use it for every log line and error message about
    that server. Raises nothing.
    """
    if isinstance(target, StdioTarget):
        found = Redactor.from_config(env=target.env, args=target.argv)
        return Redactor([*found.secrets, *extra_secrets])
    if isinstance(target, WebSocketTarget):
        found = Redactor.from_config(headers=target.headers, urls=[target.url])
        secrets = [*found.secrets, *target.headers.values(), *extra_secrets]
        if isinstance(target.token, str):
            secrets += token_secrets(target.token)
        url = split_websocket_url(target.url)
        if url.password is not None:
            secrets.append(url.password)
        elif url.username is not None:
            secrets.append(url.username)  # wss://TOKEN@host/ puts the token here
        basic = basic_credentials(url)
        if basic is not None:
            secrets += [basic, basic.partition(" ")[2]]
        # A token provider's value is known only at each dial: the transport adds it.
        return DialRedactor(secrets)
    if isinstance(target, HttpTarget):
        return http_redactor(target, list(extra_secrets))
    return Redactor(extra_secrets)


class DialRedactor(Redactor):
    """A redactor that also learns secrets only known when dialling (a WebSocket token
    provider's value), so the connection's log lines and errors mask those too."""

    __slots__ = ()

    def learn(self, secrets: Sequence[str]) -> None:
        """Mask ``secrets`` from now on, as well as everything masked before."""
        if all(s in self.secrets for s in secrets):
            return
        grown = Redactor([*self.secrets, *secrets])
        self.secrets = grown.secrets
        self._pattern = grown._pattern
