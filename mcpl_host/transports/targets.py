"""Where a server lives: a program to spawn, a TCP address or a Unix socket path.

Targets are plain frozen values, validated when built, so a bad configuration fails
before anything is spawned or dialled (and is never retried: :class:`ConfigurationError`
is permanent). Nothing here performs I/O.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from ..protocol.errors import ConfigurationError
from ..protocol.redact import REDACTION_MARK, Redactor, log_value

__all__ = [
    "StdioTarget",
    "Target",
    "TcpTarget",
    "UnixTarget",
    "describe",
    "parse_target",
    "redactor_for",
]

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_HOSTNAME: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?")
_PORT: Final = re.compile(r"[0-9]{1,5}")
_EXPECTED: Final = "expected tcp://HOST:PORT or unix:PATH"


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


Target = StdioTarget | TcpTarget | UnixTarget


def parse_target(text: str) -> TcpTarget | UnixTarget:
    """Parse ``tcp://HOST:PORT`` (``tcp://[::1]:PORT`` for IPv6) or ``unix:PATH``.

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
    return f"unix:{log_value(target.path, 120)}"


def redactor_for(target: Target, *, extra_secrets: Sequence[str] = ()) -> Redactor:
    """The redactor for one server: its configured credentials plus ``extra_secrets``.

    Build it once per connection and use it for every log line and error message about
    that server. Raises nothing.
    """
    if isinstance(target, StdioTarget):
        found = Redactor.from_config(env=target.env, args=target.argv)
        return Redactor([*found.secrets, *extra_secrets])
    return Redactor(extra_secrets)
