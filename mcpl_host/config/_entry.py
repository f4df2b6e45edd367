"""One server entry of a config file, as any of the clients writes it: its keys, its
``type``, its variables and ``envFile``, checked into a :class:`ServerConfig`.

:func:`parse_entry` raises for an entry of the wrong shape: a key of the wrong type, a
``type`` contradicting the url or command, a credential configured where it would never
be sent; what only this machine lacks (an unset variable, an unanswered input, a missing
``envFile``) is the entry's ``problem``. The file's reader makes either the entry's
problem: the other servers of the file stay usable. No message shows a
value a variable gave, an env value, a header value or a token.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, NoReturn

from ..protocol.errors import ConfigurationError
from ..protocol.redact import Redactor, log_value
from ..transports.http_target import SSE_PREFIX, HttpTransportKind
from ..transports.targets import HttpTarget, StdioTarget, Target, WebSocketTarget, parse_target
from ._auth import AuthSpec, parse_auth
from ._envfile import MAX_ENV_FILE_BYTES, parse_env_file
from ._expand import Expander, Unresolved
from ._filter import ADMITS_ALL, CatalogueFilter, parse_filter
from ._keys import STDIO_ONLY, check_shapes, declared_type, ignored, unknown_keys

__all__ = ["EntryContext", "ServerConfig", "parse_entry"]

_HTTP_SCHEMES: Final = ("http", "https")
_WEBSOCKET_SCHEMES: Final = ("ws", "wss")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One configured server: its name, its target, and where it was configured.

    ``target`` is None when ``problem`` says why the host cannot reach it (a variable
    the entry uses has no value, its ``envFile`` cannot be read). ``auth`` is the
    entry's ``auth`` (None when it has none). ``kind`` is what the entry is: ``stdio``,
    ``http``, ``sse``, ``ws``, ``tcp`` or ``unix`` (None when a problem hides it).
    ``filter`` is what of its tools, resources and prompts the manager's catalogue
    shows (the entry's ``includeTools``, ``excludeTools``, ... keys).
    """

    name: str
    target: Target | None
    source: str
    problem: str | None = None
    disabled: bool = False
    auth: AuthSpec | None = None
    kind: str | None = None
    expanded_secrets: tuple[str, ...] = field(default=(), repr=False)
    filter: CatalogueFilter = ADMITS_ALL

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every credential value the entry holds (env values, header values, a token,
        a client secret, what variables gave it outside ``command``, ``cwd`` and
        ``envFile``, every input's answer), whatever its name or length: to be masked in
        everything written about this server. Raises nothing."""
        found: list[str] = list(self.expanded_secrets)
        target = self.target
        if isinstance(target, StdioTarget):
            found += target.env.values()
        elif isinstance(target, (HttpTarget, WebSocketTarget)):
            found += target.headers.values()
            if isinstance(target, WebSocketTarget) and isinstance(target.token, str):
                found.append(target.token)
        if self.auth is not None and self.auth.client_secret is not None:
            found.append(self.auth.client_secret)
        return tuple(dict.fromkeys(v for v in found if v))


@dataclass(frozen=True, slots=True)
class EntryContext:
    """What every entry of one file shares: the file, the environment ``auth`` reads,
    the workspace folder, and how to make the :class:`Expander` of a server (given its
    name and whether it is disabled: a disabled entry asks nobody for an input)."""

    source: str
    environ: Mapping[str, str]
    workspace: str
    expander: Callable[[str, bool], Expander]


def parse_entry(
    name: str, entry: Any, key: str, ctx: EntryContext
) -> tuple[ServerConfig, list[str]]:
    """The server of ``entry`` (at ``key`` in the file) and the warnings it earns.

    Raises ConfigurationError naming the file and the key for an entry of the wrong
    shape (see the module's docstring).
    """
    where = f"{ctx.source}: key '{key}'"
    at = f"{ctx.source}:{key}"
    if not isinstance(entry, dict):
        raise ConfigurationError(f"{where} must be an object")
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        raise ConfigurationError(f"{where}.disabled must be true or false")
    warnings = unknown_keys(entry, ctx.source, key)
    if "url" in entry and "serverUrl" in entry:
        raise ConfigurationError(f"{where} has both url and serverUrl: give one")
    url_key = "serverUrl" if "serverUrl" in entry else "url"
    has_command, has_url = "command" in entry, url_key in entry
    if has_command == has_url:
        raise ConfigurationError(f"{where} needs exactly one of 'command' or 'url'")
    declared = declared_type(entry, where)
    if declared == "stdio" and has_url:
        raise ConfigurationError(f"{where}: type stdio needs a command, not a {url_key}")
    if declared not in (None, "stdio") and has_command:
        raise ConfigurationError(f"{where}: type {entry['type']} needs a url, not a command")
    check_shapes(entry, where, url_key)
    catalogue_filter = parse_filter(entry, where)
    if has_command:
        _refuse_keys(entry, where, ("headers", "auth"), "servers with a url")
        warnings += ignored(entry, ctx.source, key, ("token",), "ws(s):// servers")
    else:
        warnings += ignored(entry, ctx.source, key, STDIO_ONLY, "stdio servers")
    expander = ctx.expander(name, disabled)
    if has_command:
        used: tuple[str, ...] = ("command", "args", "env", "envFile", "cwd")
    else:
        # Keys ignored for this kind are not expanded: their variables cannot fail it.
        raw_url = entry[url_key].lower()
        websocket = declared == "ws" or raw_url.startswith(("ws://", "wss://"))
        used = (url_key, "headers", "auth", *(("token",) if websocket else ()))
    try:
        expanded = _expanded(entry, expander, used)
    except _Problem as problem:
        kind = "stdio" if has_command else declared
        partial = tuple(expander.secrets)  # an input answered before the problem, say
        return ServerConfig(
            name, None, at, problem.message, disabled, kind=kind, expanded_secrets=partial
        ), warnings
    secrets = tuple(expander.secrets)
    if has_command:
        config, more = _stdio(name, expanded, where, at, ctx, secrets)
        return _with(config, disabled, catalogue_filter), warnings + more
    config = _remote(name, expanded, expanded[url_key], declared, where, at, ctx, secrets)
    if config.kind != "ws":
        warnings += ignored(entry, ctx.source, key, ("token",), "ws(s):// servers")
    return _with(config, disabled, catalogue_filter), warnings


def _with(config: ServerConfig, disabled: bool, catalogue_filter: CatalogueFilter) -> ServerConfig:
    if disabled:
        config = replace(config, disabled=True)
    return config if catalogue_filter.admits_all else replace(config, filter=catalogue_filter)


class _Problem(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# auth's values a variable may give, and whether what it gives is a secret.
_AUTH_VALUES: Final = {
    "client_id": False,
    "client_secret": True,
    "scopes": False,
    "client_metadata_url": False,
    "CLIENT_ID": False,
    "CLIENT_SECRET": True,
}


# Paths, not credentials: what a variable gives them is not masked.
_PATH_KEYS: Final = frozenset({"command", "cwd", "envFile"})


def _expanded(entry: dict[str, Any], expander: Expander, used: tuple[str, ...]) -> dict[str, Any]:
    """A copy of ``entry`` with the variables of the keys ``used`` expanded (their shapes
    already checked). Raises _Problem naming the key and the variable."""
    out = dict(entry)
    for key in used:
        value = out.get(key)
        secret = key not in _PATH_KEYS
        try:
            if isinstance(value, str):
                out[key] = expander.expand(value, secret=secret)
            elif isinstance(value, list):
                out[key] = [expander.expand(item, secret=secret) for item in value]
            elif isinstance(value, Mapping) and key == "auth":
                out[key] = {
                    name: expander.expand(item, secret=_AUTH_VALUES[name])
                    if name in _AUTH_VALUES and isinstance(item, str)
                    else item
                    for name, item in value.items()
                }
            elif isinstance(value, Mapping):
                out[key] = {
                    name: expander.expand(item, secret=secret) for name, item in value.items()
                }
        except Unresolved as exc:
            raise _Problem(f"{key}: {exc.message}") from None
    return out


def _stdio(  # noqa: PLR0917 - one call site
    name: str,
    entry: dict[str, Any],
    where: str,
    at: str,
    ctx: EntryContext,
    secrets: tuple[str, ...],
) -> tuple[ServerConfig, list[str]]:
    command, args = entry["command"], entry.get("args", [])
    env: dict[str, str] = dict(entry.get("env", {}))
    warnings: list[str] = []
    if "envFile" in entry:
        path = _in_workspace(entry["envFile"], ctx.workspace)
        shown = log_value(path, 160)
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_ENV_FILE_BYTES + 1)
        except OSError as exc:
            problem = f"envFile: cannot read {shown} ({exc.strerror or type(exc).__name__})"
            return ServerConfig(name, None, at, problem, kind="stdio"), warnings
        if len(data) > MAX_ENV_FILE_BYTES:
            problem = f"envFile: {shown} is over {MAX_ENV_FILE_BYTES} bytes"
            return ServerConfig(name, None, at, problem, kind="stdio"), warnings
        parsed = parse_env_file(data.decode("utf-8", "replace"))
        warnings += [
            f"{where}.envFile: line {n} of {shown} is not KEY=VALUE: skipped"
            for n in parsed.bad_lines
        ]
        # The entry's own env wins over the file's.
        env = {**parsed.values, **env}
    cwd = entry.get("cwd")
    if cwd is not None:
        cwd = _in_workspace(cwd, ctx.workspace)
    try:
        target = StdioTarget.of([command, *args], cwd=cwd, env=env)
    except ConfigurationError as exc:
        redactor = Redactor.from_config(env={**env, **_pasted(env, "=")}, args=args)
        masked = Redactor([*redactor.secrets, *secrets]).log_value(exc.message)
        raise ConfigurationError(f"{where}: {masked}") from None
    return ServerConfig(name, target, at, kind="stdio", expanded_secrets=secrets), warnings


def _in_workspace(path: str, workspace: str) -> str:
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) else str(Path(workspace) / path)


def _remote(  # noqa: PLR0917 - one call site
    name: str,
    entry: dict[str, Any],
    url: str,
    declared: str | None,
    where: str,
    at: str,
    ctx: EntryContext,
    secrets: tuple[str, ...],
) -> ServerConfig:
    sse_prefixed = url[: len(SSE_PREFIX)].lower() == SSE_PREFIX
    bare = url[len(SSE_PREFIX) :] if sse_prefixed else url
    scheme, sep, _ = bare.partition("://")
    scheme = scheme.lower() if sep else ""
    if scheme in _HTTP_SCHEMES:
        kind = "sse" if sse_prefixed or declared == "sse" else "http"
        if declared not in (None, kind):
            _contradiction(where, declared, "sse+http(s)://" if sse_prefixed else "http(s)://")
        return _http(name, entry, bare, kind, where=where, at=at, ctx=ctx, secrets=secrets)
    if sse_prefixed:
        raise ConfigurationError(f"{where}.url: sse+ goes before http:// or https:// only")
    _refuse_keys(entry, where, ("auth",), "http:// and https:// servers")
    if scheme in _WEBSOCKET_SCHEMES:
        if declared not in (None, "ws"):
            _contradiction(where, declared, "ws(s)://")
        target = _websocket(entry, url, where, secrets)
        return ServerConfig(name, target, at, kind="ws", expanded_secrets=secrets)
    _refuse_keys(entry, where, ("headers",), "http(s):// and ws(s):// servers")
    try:
        parsed = parse_target(url)
    except ConfigurationError as exc:
        masked = Redactor([*secrets]).log_value(exc.message)
        raise ConfigurationError(f"{where}.url: {masked}") from None
    kind = "tcp" if url.lower().startswith("tcp:") else "unix"
    if declared is not None:
        _contradiction(where, declared, f"{kind}:")
    return ServerConfig(name, parsed, at, kind=kind, expanded_secrets=secrets)


def _contradiction(where: str, declared: str, url_kind: str) -> NoReturn:
    raise ConfigurationError(
        f"{where}: type {declared} does not match its {url_kind} url: fix the type or the url"
    )


def _pasted(names: Iterable[str], separator: str) -> dict[str, str]:
    """The values written into names (``TOKEN=x`` as an env name, a whole ``Name: value``
    header line as a header name), by the name before them: an error about a bad name
    shows the name, so what was pasted into it is masked as a value would be."""
    pasted: dict[str, str] = {}
    for name in names:
        before, found, value = name.partition(separator)
        if not found and separator == ":":
            # "Authorization Bearer TOKEN": the line pasted without its colon.
            before, found, value = name.strip().partition(" ")
        if found:
            pasted[before.strip()] = value.strip()
    return pasted


def _refused(
    exc: ConfigurationError, where: str, url: str, headers: Mapping[str, str], secrets: list[str]
) -> NoReturn:
    redactor = Redactor.from_config(headers=_pasted(headers, ":"), urls=[url])
    masked = Redactor([*redactor.secrets, *headers.values(), *secrets]).log_value(exc.message)
    raise ConfigurationError(f"{where}: {masked}") from None


def _websocket(
    entry: dict[str, Any], url: str, where: str, secrets: tuple[str, ...]
) -> WebSocketTarget:
    headers: Mapping[str, str] = entry.get("headers", {})
    token = entry.get("token")
    if token is not None and not token:
        raise ConfigurationError(f"{where}.token must be a non-empty string")
    try:
        return WebSocketTarget(url, token=token, headers=headers)
    except ConfigurationError as exc:
        _refused(exc, where, url, headers, [*secrets, *([token] if token else [])])


def _refuse_keys(entry: dict[str, Any], where: str, keys: tuple[str, ...], only: str) -> None:
    for key in keys:
        if key in entry:
            # A credential configured where it would never be sent is refused, not ignored.
            raise ConfigurationError(f"{where}.{key} is only for {only}")


def _http(
    name: str,
    entry: dict[str, Any],
    url: str,
    kind: str,
    *,
    where: str,
    at: str,
    ctx: EntryContext,
    secrets: tuple[str, ...],
) -> ServerConfig:
    headers: dict[str, str] = dict(entry.get("headers", {}))
    auth = parse_auth(entry, where, ctx.environ)
    transport: HttpTransportKind = "sse" if kind == "sse" else "streamable-http"
    sets_authorization = auth.spec is not None and auth.spec.kind != "none"
    if sets_authorization and any(n.lower() == "authorization" for n in headers):
        assert auth.spec is not None
        raise ConfigurationError(
            f"{where}: auth type {auth.spec.kind} sets Authorization itself: "
            "remove headers.Authorization or the auth"
        )
    try:
        # Checked even when a variable is unset.
        target = HttpTarget(url, headers=headers, transport=transport)
    except ConfigurationError as exc:
        _refused(exc, where, url, headers, list(secrets))
    if auth.problem is not None:
        return ServerConfig(
            name, None, at, auth.problem, auth=auth.spec, kind=kind, expanded_secrets=secrets
        )
    if auth.bearer is not None:
        # Checked to be printable ASCII without spaces: a valid header value.
        target = HttpTarget(
            url, headers={**headers, "Authorization": f"Bearer {auth.bearer}"}, transport=transport
        )
    return ServerConfig(name, target, at, auth=auth.spec, kind=kind, expanded_secrets=secrets)
