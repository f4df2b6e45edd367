"""Server configuration files, in the format users already have.

The ``mcpServers`` object desktop MCP clients use::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@scope/server"], "env": {"TOKEN": "..."},
                  "cwd": "/srv"},
        "remote": {"url": "tcp://127.0.0.1:9000"}
    }}

A stdio server has ``command`` (and optionally ``args``, ``env``, ``cwd``); a socket
server has ``url`` (``tcp://HOST:PORT`` or ``unix:PATH``); a WebSocket server has a
``ws://`` or ``wss://`` ``url`` and optionally ``headers`` (names to values) and
``token`` (sent as the ``token`` query parameter); a Streamable HTTP server has an
``http://`` or ``https://`` ``url`` and optionally ``headers``. Every error names the
file and the key, never a header value or a token. Other keys clients add (``type``,
``timeout``, ``autoApprove``...) are ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import msgspec

from .protocol.errors import ConfigurationError
from .protocol.redact import Redactor
from .transports.targets import HttpTarget, StdioTarget, Target, WebSocketTarget, parse_target

__all__ = ["ServerConfig", "load_config", "parse_config"]

_HTTP_SCHEMES = ("http", "https")
_WEBSOCKET_SCHEMES = ("ws", "wss")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One configured server: its name, its target, and where it was configured.

    ``target`` is None when ``problem`` says why the host cannot reach it yet.
    """

    name: str
    target: Target | None
    source: str
    problem: str | None = None
    disabled: bool = False


def load_config(path: str | os.PathLike[str]) -> dict[str, ServerConfig]:
    """Read a config file; return its servers by name, in file order.

    Raises :class:`~mcpl_host.ConfigurationError` naming the file (and the key) when the
    file cannot be read, is not JSON, or holds a malformed entry.
    """
    file = str(path)
    try:
        raw = Path(file).read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"{file}: cannot read the config file ({exc.strerror})") from None
    try:
        data = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise ConfigurationError(f"{file}: not valid JSON ({exc})") from None
    return parse_config(data, source=file)


def parse_config(data: Any, *, source: str = "<config>") -> dict[str, ServerConfig]:
    """The servers of an already-decoded config object (see :func:`load_config`)."""
    if not isinstance(data, dict):
        raise ConfigurationError(f"{source}: the top level must be an object with mcpServers")
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        raise ConfigurationError(f"{source}: key 'mcpServers' must be an object of servers")
    return {name: _server(name, entry, source) for name, entry in servers.items()}


def _server(name: str, entry: Any, source: str) -> ServerConfig:
    key = f"mcpServers.{name}"
    where = f"{source}: key '{key}'"
    if not isinstance(entry, dict):
        raise ConfigurationError(f"{where} must be an object")
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        raise ConfigurationError(f"{where}.disabled must be true or false")
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise ConfigurationError(f"{where} needs exactly one of 'command' or 'url'")
    at = f"{source}:{key}"
    if has_url:
        url = entry["url"]
        if not isinstance(url, str):
            raise ConfigurationError(f"{where}.url must be a string")
        scheme, sep, _ = url.partition("://")
        if sep and scheme.lower() in _HTTP_SCHEMES:
            return ServerConfig(name, _http(entry, url, where), at, disabled=disabled)
        if sep and scheme.lower() in _WEBSOCKET_SCHEMES:
            return ServerConfig(name, _websocket(entry, url, where), at, disabled=disabled)
        try:
            return ServerConfig(name, parse_target(url), at, disabled=disabled)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}.url: {exc.message}") from None
    command, args = entry["command"], entry.get("args", [])
    if not isinstance(command, str) or not command:
        raise ConfigurationError(f"{where}.command must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigurationError(f"{where}.args must be a list of strings")
    env = entry.get("env", {})
    if not isinstance(env, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        # Name the key only: a value here is likely a credential.
        raise ConfigurationError(f"{where}.env must map names to string values")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigurationError(f"{where}.cwd must be a string")
    try:
        target = StdioTarget.of([command, *args], cwd=cwd, env=env)
    except ConfigurationError as exc:
        redactor = Redactor.from_config(env={**env, **_pasted(env, "=")}, args=args)
        raise ConfigurationError(f"{where}: {redactor.log_value(exc.message)}") from None
    return ServerConfig(name, target, at, disabled=disabled)


def _headers(entry: dict[str, Any], where: str) -> Mapping[str, str]:
    headers = entry.get("headers", {})
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        # Name the key only: header values are credentials.
        raise ConfigurationError(f"{where}.headers must map names to string values")
    return headers


def _pasted(names: Iterable[str], separator: str) -> dict[str, str]:
    """The values written into names (``TOKEN=x`` as an env name, a whole ``Name: value``
    header line as a header name), by the name before them: an error about a bad name
    shows the name, so what was pasted into it is masked as a value would be."""
    pasted: dict[str, str] = {}
    for name in names:
        before, found, value = name.partition(separator)
        if found:
            pasted[before.strip()] = value.strip()
    return pasted


def _refused(
    exc: ConfigurationError, where: str, url: str, headers: Mapping[str, str], secrets: list[str]
) -> NoReturn:
    redactor = Redactor.from_config(headers=_pasted(headers, ":"), urls=[url])
    masked = Redactor([*redactor.secrets, *headers.values(), *secrets]).log_value(exc.message)
    raise ConfigurationError(f"{where}: {masked}") from None


def _websocket(entry: dict[str, Any], url: str, where: str) -> WebSocketTarget:
    headers = _headers(entry, where)
    token = entry.get("token")
    if token is not None and (not isinstance(token, str) or not token):
        raise ConfigurationError(f"{where}.token must be a non-empty string")
    try:
        return WebSocketTarget(url, token=token, headers=headers)
    except ConfigurationError as exc:
        _refused(exc, where, url, headers, [token] if token else [])


def _http(entry: dict[str, Any], url: str, where: str) -> HttpTarget:
    headers = _headers(entry, where)
    try:
        return HttpTarget(url, headers=headers)
    except ConfigurationError as exc:
        _refused(exc, where, url, headers, [])
