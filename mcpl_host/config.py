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
``http://`` or ``https://`` ``url`` and optionally ``headers`` and ``auth``, how the
host authorizes (:class:`AuthSpec`)::

    "auth": "oauth"          OAuth 2.1, tokens kept in the user's token store
    "auth": "none"           never authorize (a 401 is a failure)
    "auth": {"type": "oauth", "client_id": "...", "client_secret_env": "VAR", ...}
    "auth": {"type": "bearer", "token_env": "VAR"}   Authorization: Bearer $VAR

Every error names the file and the key, never a header value, a token or a secret.
An entry naming an environment variable that is not set is kept, with a ``problem``:
the host cannot reach that server, the others are unaffected. ``headers`` and ``auth``
are refused on a server that cannot carry them. Other keys clients add (``type``,
``timeout``, ``autoApprove``...) are ignored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple, NoReturn
from urllib.parse import urlsplit

import msgspec

from .protocol.errors import ConfigurationError
from .protocol.redact import Redactor
from .transports.targets import HttpTarget, StdioTarget, Target, WebSocketTarget, parse_target

__all__ = ["TOKEN_ENDPOINT_AUTH_METHODS", "AuthSpec", "ServerConfig", "load_config", "parse_config"]

_HTTP_SCHEMES = ("http", "https")
_WEBSOCKET_SCHEMES = ("ws", "wss")
TOKEN_ENDPOINT_AUTH_METHODS: Final = ("client_secret_basic", "client_secret_post", "none")
_AUTH_FORMS: Final = '"oauth", "none", or an object whose "type" is "oauth", "bearer" or "none"'
_OAUTH_KEYS: Final = (
    "type",
    "client_id",
    "client_secret",
    "client_secret_env",
    "token_endpoint_auth_method",
    "scopes",
    "client_metadata_url",
)
_BEARER_KEYS: Final = ("type", "token_env")
# A key is shown in a message only when it looks like a misspelt key, not pasted text.
_PLAIN_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")
_ENV_NAME: Final = re.compile(r"[^=\0]+")


@dataclass(frozen=True, slots=True)
class AuthSpec:
    """How the host authorizes to an HTTP server: an entry's ``auth``.

    ``kind`` is ``"oauth"`` (the OAuth 2.1 flow, with whatever client credentials are
    given here; none: a Client ID Metadata Document or dynamic registration),
    ``"bearer"`` (a static token, already in the target's ``Authorization`` header)
    or ``"none"`` (never authorize). ``client_secret`` (given, or read from the
    variable ``client_secret_env`` named) is a secret: left out of the ``repr``, masked
    wherever the server's text is written. ``scopes`` is space-separated;
    ``token_endpoint_auth_method`` is None to let the flow choose.
    """

    kind: Literal["oauth", "bearer", "none"]
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    scopes: str | None = None
    client_metadata_url: str | None = None

    def oauth_options(self) -> dict[str, Any]:
        """What the entry sets of an :class:`~mcpl_host.auth.OAuth`'s options (the
        client, the scope), for ``OAuth(**options)`` or ``oauth.replace(**options)``."""
        return {
            name: value
            for name in (
                "client_id",
                "client_secret",
                "token_endpoint_auth_method",
                "scopes",
                "client_metadata_url",
            )
            if (value := getattr(self, name)) is not None
        }


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One configured server: its name, its target, and where it was configured.

    ``target`` is None when ``problem`` says why the host cannot reach it (an
    environment variable the entry names is not set). ``auth`` is the entry's ``auth``
    (None when it has none).
    """

    name: str
    target: Target | None
    source: str
    problem: str | None = None
    disabled: bool = False
    auth: AuthSpec | None = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every credential value the entry holds (env values, header values, a token,
        a client secret), whatever its name or length: to be masked in everything
        written about this server. Raises nothing."""
        found: list[str] = []
        target = self.target
        if isinstance(target, StdioTarget):
            found += target.env.values()
        elif isinstance(target, (HttpTarget, WebSocketTarget)):
            found += target.headers.values()
            if isinstance(target, WebSocketTarget) and isinstance(target.token, str):
                found.append(target.token)
        if self.auth is not None and self.auth.client_secret is not None:
            found.append(self.auth.client_secret)
        return tuple(v for v in found if v)


def load_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> dict[str, ServerConfig]:
    """Read a config file; return its servers by name, in file order. ``environ``
    (default ``os.environ``) is where ``token_env`` and ``client_secret_env`` are read.

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
    return parse_config(data, source=file, environ=environ)


def parse_config(
    data: Any, *, source: str = "<config>", environ: Mapping[str, str] | None = None
) -> dict[str, ServerConfig]:
    """The servers of an already-decoded config object (see :func:`load_config`)."""
    if not isinstance(data, dict):
        raise ConfigurationError(f"{source}: the top level must be an object with mcpServers")
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        raise ConfigurationError(f"{source}: key 'mcpServers' must be an object of servers")
    env = os.environ if environ is None else environ
    return {name: _server(name, entry, source, env) for name, entry in servers.items()}


def _server(name: str, entry: Any, source: str, environ: Mapping[str, str]) -> ServerConfig:
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
            return _http(name, entry, url, where=where, at=at, disabled=disabled, environ=environ)
        _refuse_keys(entry, where, ("auth",), "http:// and https:// servers")
        if sep and scheme.lower() in _WEBSOCKET_SCHEMES:
            return ServerConfig(name, _websocket(entry, url, where), at, disabled=disabled)
        _refuse_keys(entry, where, ("headers",), "http(s):// and ws(s):// servers")
        try:
            return ServerConfig(name, parse_target(url), at, disabled=disabled)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}.url: {exc.message}") from None
    _refuse_keys(entry, where, ("headers", "auth"), "servers with a url")
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


def _refuse_keys(entry: dict[str, Any], where: str, keys: tuple[str, ...], only: str) -> None:
    for key in keys:
        if key in entry:
            # A credential configured where it would never be sent is refused, not ignored.
            raise ConfigurationError(f"{where}.{key} is only for {only}")


def _http(
    name: str,
    entry: dict[str, Any],
    url: str,
    *,
    where: str,
    at: str,
    disabled: bool,
    environ: Mapping[str, str],
) -> ServerConfig:
    headers = dict(_headers(entry, where))
    auth = _auth(entry, where, environ)
    sets_authorization = auth.spec is not None and auth.spec.kind != "none"
    if sets_authorization and any(n.lower() == "authorization" for n in headers):
        assert auth.spec is not None
        raise ConfigurationError(
            f"{where}: auth type {auth.spec.kind} sets Authorization itself: "
            "remove headers.Authorization or the auth"
        )
    try:
        target = HttpTarget(url, headers=headers)  # checked even when a variable is unset
    except ConfigurationError as exc:
        _refused(exc, where, url, headers, [])
    if auth.problem is not None:
        return ServerConfig(name, None, at, problem=auth.problem, disabled=disabled, auth=auth.spec)
    if auth.bearer is not None:
        # Checked to be printable ASCII without spaces: a valid header value.
        target = HttpTarget(url, headers={**headers, "Authorization": f"Bearer {auth.bearer}"})
    return ServerConfig(name, target, at, disabled=disabled, auth=auth.spec)


class _Auth(NamedTuple):
    spec: AuthSpec | None
    bearer: str | None = None  # the token of type bearer, read from its variable
    problem: str | None = None  # a variable named is not set: the server is unusable


def _auth(entry: dict[str, Any], where: str, environ: Mapping[str, str]) -> _Auth:
    """The entry's ``auth``, checked strictly. No message shows a value but ``type``'s
    and a misspelt key's."""
    if "auth" not in entry:
        return _Auth(None)
    value, at = entry["auth"], f"{where}.auth"
    if value == "oauth":
        return _Auth(AuthSpec("oauth"))
    if value == "none":
        return _Auth(AuthSpec("none"))
    if not isinstance(value, dict):
        raise ConfigurationError(f"{at} must be {_AUTH_FORMS}")
    kind = value.get("type")
    if kind not in ("oauth", "bearer", "none"):
        raise ConfigurationError(f'{at}.type must be "oauth", "bearer" or "none"')
    allowed = _OAUTH_KEYS if kind == "oauth" else _BEARER_KEYS if kind == "bearer" else ("type",)
    for key in value:
        if key not in allowed:
            shown = f" {key!r}" if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else ""
            raise ConfigurationError(
                f"{at} has an unknown key{shown} for type {kind} (known: {', '.join(allowed)})"
            )
    if kind == "none":
        return _Auth(AuthSpec("none"))
    if kind == "bearer":
        variable = _env_name(value, "token_env", at, required=True)
        assert variable is not None
        token = environ.get(variable, "")
        if not token:
            return _Auth(
                AuthSpec("bearer"),
                problem=f"auth.token_env: environment variable {variable} is not set or empty",
            )
        if not token.isascii() or any(ch.isspace() or not ch.isprintable() for ch in token):
            return _Auth(
                AuthSpec("bearer"),
                problem=f"auth.token_env: environment variable {variable} does not hold a "
                "token (printable ASCII without spaces; its value is not shown)",
            )
        return _Auth(AuthSpec("bearer"), bearer=token)
    return _oauth(value, at, environ)


def _oauth(value: dict[str, Any], at: str, environ: Mapping[str, str]) -> _Auth:
    client_id = _text(value, "client_id", at)
    secret = _text(value, "client_secret", at)
    secret_env = _env_name(value, "client_secret_env", at, required=False)
    method = value.get("token_endpoint_auth_method")
    if method is not None and method not in TOKEN_ENDPOINT_AUTH_METHODS:
        methods = ", ".join(TOKEN_ENDPOINT_AUTH_METHODS)
        raise ConfigurationError(f"{at}.token_endpoint_auth_method must be one of {methods}")
    scopes = _text(value, "scopes", at)
    if scopes is not None:
        scopes = " ".join(scopes.split())
        if not scopes:
            raise ConfigurationError(f"{at}.scopes must name at least one scope")
    metadata_url = _text(value, "client_metadata_url", at)
    if metadata_url is not None:
        _check_metadata_url(metadata_url, f"{at}.client_metadata_url")
    if secret is not None and secret_env is not None:
        raise ConfigurationError(f"{at}: give client_secret or client_secret_env, not both")
    has_secret = secret is not None or secret_env is not None
    if has_secret and client_id is None:
        raise ConfigurationError(f"{at}: a client secret needs its client_id")
    if has_secret and method == "none":
        raise ConfigurationError(
            f"{at}: token_endpoint_auth_method none sends no secret: remove the client secret"
        )
    if not has_secret and method in ("client_secret_basic", "client_secret_post"):
        raise ConfigurationError(
            f"{at}: token_endpoint_auth_method {method} needs client_secret or client_secret_env"
        )
    spec = AuthSpec(
        "oauth",
        client_id=client_id,
        client_secret=secret,
        token_endpoint_auth_method=method,
        scopes=scopes,
        client_metadata_url=metadata_url,
    )
    if secret_env is not None:
        secret = environ.get(secret_env, "")
        if not secret:
            return _Auth(
                spec,
                problem=f"auth.client_secret_env: environment variable {secret_env} "
                "is not set or empty",
            )
        spec = replace(spec, client_secret=secret)
    return _Auth(spec)


def _text(value: dict[str, Any], key: str, at: str) -> str | None:
    found = value.get(key)
    if found is not None and (not isinstance(found, str) or not found):
        raise ConfigurationError(f"{at}.{key} must be a non-empty string")
    return found


def _env_name(value: dict[str, Any], key: str, at: str, *, required: bool) -> str | None:
    name = value.get(key)
    if name is None and not required:
        return None
    if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
        raise ConfigurationError(
            f"{at}.{key} must be the name of an environment variable (not its value)"
        )
    return name


def _check_metadata_url(url: str, at: str) -> None:
    # A Client ID Metadata Document's URL is the client id: https, with a path
    # (draft-ietf-oauth-client-id-metadata-document). The URL is not shown.
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme != "https"
        or not parts.hostname
        or parts.path in ("", "/")
        or parts.fragment
        or parts.username is not None
        or parts.password is not None
        or not url.isascii()
        or any(ord(ch) <= 0x20 for ch in url)
    ):
        raise ConfigurationError(
            f"{at} must be an https:// URL with a path, without user info or a fragment"
        )
