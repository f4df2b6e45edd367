"""The keys of a server entry: those the host uses, those the clients define for
themselves (read quietly), the ``type`` names, and the JSON type each used key must
have. Anything else is warned about by name (when it looks like a key)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..protocol.errors import ConfigurationError
from ._auth import PLAIN_KEY
from ._filter import FILTER_KEYS

__all__ = [
    "IGNORED_KEYS",
    "STDIO_ONLY",
    "USED_KEYS",
    "check_shapes",
    "declared_type",
    "ignored",
    "unknown_keys",
]

USED_KEYS: Final = (
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "url",
    "serverUrl",
    "type",
    "headers",
    "token",
    "auth",
    "disabled",
    *FILTER_KEYS,
)
# Keys the clients define for themselves (tool approval, timeouts, their UI, sandboxing,
# their own OAuth settings): read quietly, not used.
IGNORED_KEYS: Final = frozenset(
    {
        "alwaysAllow",
        "autoApprove",
        "description",
        "dev",
        "disabledTools",
        "enabledTools",
        "gallery",
        "name",
        "oauth",
        "sandbox",
        "sandboxEnabled",
        "timeout",
        "trust",
        "version",
    }
)
STDIO_ONLY: Final = ("args", "env", "envFile", "cwd")
# type, lower-cased without - and _, to the kind of server it means.
_TYPES: Final = {
    "stdio": "stdio",
    "http": "http",
    "streamablehttp": "http",
    "sse": "sse",
    "ws": "ws",
    "websocket": "ws",
}
_TYPE_NAMES: Final = "stdio, http (or streamable-http), sse, ws"


def unknown_keys(entry: dict[str, Any], source: str, key: str) -> list[str]:
    """A warning for each key of ``entry`` that is neither used nor known."""
    warnings: list[str] = []
    for name in entry:
        if name in USED_KEYS or name in IGNORED_KEYS:
            continue
        if isinstance(name, str) and PLAIN_KEY.fullmatch(name):
            warnings.append(f"{source}: key '{key}.{name}' is not one mcpl-host knows: ignored")
        else:
            warnings.append(f"{source}: key '{key}' has a key mcpl-host does not know: ignored")
    return warnings


def ignored(
    entry: dict[str, Any], source: str, key: str, keys: Iterable[str], only: str
) -> list[str]:
    return [
        f"{source}: key '{key}.{name}' is only for {only}: ignored"
        for name in keys
        if name in entry
    ]


def declared_type(entry: dict[str, Any], where: str) -> str | None:
    """What the entry's ``type`` means (``stdio``, ``http``, ``sse``, ``ws``), None
    without one. Raises ConfigurationError for a type not known."""
    if "type" not in entry:
        return None
    given = entry["type"]
    kind = (
        _TYPES.get(given.lower().replace("-", "").replace("_", ""))
        if isinstance(given, str)
        else None
    )
    if kind is None:
        raise ConfigurationError(f"{where}.type must be one of {_TYPE_NAMES}")
    return kind


def check_shapes(entry: dict[str, Any], where: str, url_key: str) -> None:
    """The JSON types of the keys used, before any variable is expanded. Raises
    ConfigurationError naming the key, never a value."""
    if "command" in entry:
        command = entry["command"]
        if not isinstance(command, str) or not command:
            raise ConfigurationError(f"{where}.command must be a non-empty string")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigurationError(f"{where}.args must be a list of strings")
    for name in ("env", "headers"):
        value = entry.get(name, {})
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            # Name the key only: a value here is likely a credential.
            raise ConfigurationError(f"{where}.{name} must map names to string values")
    for name in ("cwd", "envFile", url_key):
        if name in entry and not isinstance(entry[name], str):
            raise ConfigurationError(f"{where}.{name} must be a string")
    token = entry.get("token")
    if token is not None and (not isinstance(token, str) or not token):
        raise ConfigurationError(f"{where}.token must be a non-empty string")
