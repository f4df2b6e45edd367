"""An entry's ``auth``: how the host authorizes to an HTTP server (:class:`AuthSpec`).

The forms (docs/cli.md, "Config files")::

    "auth": "oauth"          OAuth 2.1, tokens kept in the user's token store
    "auth": "none"           never authorize (a 401 is a failure)
    "auth": {"type": "oauth", "client_id": "...", "client_secret_env": "VAR", ...}
    "auth": {"type": "bearer", "token_env": "VAR"}   Authorization: Bearer $VAR
    "auth": {"CLIENT_ID": "...", "CLIENT_SECRET": "...", "scopes": [...]}   Cursor's form

No message shows a value but ``type``'s and a misspelt key's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, NamedTuple
from urllib.parse import urlsplit

from ..protocol.errors import ConfigurationError

__all__ = ["PLAIN_KEY", "TOKEN_ENDPOINT_AUTH_METHODS", "AuthSpec", "ParsedAuth", "parse_auth"]

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
# Cursor writes a pre-registered OAuth client so (its docs, "Static OAuth").
_CURSOR_KEYS: Final = {
    "CLIENT_ID": "client_id",
    "CLIENT_SECRET": "client_secret",
    "scopes": "scopes",
}
# A key is shown in a message only when it looks like a misspelt key, not pasted text.
PLAIN_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")
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


class ParsedAuth(NamedTuple):
    spec: AuthSpec | None
    bearer: str | None = None  # the token of type bearer, read from its variable
    problem: str | None = None  # a variable named is not set: the server is unusable


def parse_auth(entry: Mapping[str, Any], where: str, environ: Mapping[str, str]) -> ParsedAuth:
    """The entry's ``auth`` (variables already expanded), checked strictly.

    Raises ConfigurationError naming the key, never a value but ``type``'s and a
    misspelt key's. A variable it names that is unset is the returned ``problem``.
    """
    if "auth" not in entry:
        return ParsedAuth(None)
    value, at = entry["auth"], f"{where}.auth"
    if isinstance(value, dict) and "type" not in value and "CLIENT_ID" in value:
        value = _from_cursor(value, at)
    if value == "oauth":
        return ParsedAuth(AuthSpec("oauth"))
    if value == "none":
        return ParsedAuth(AuthSpec("none"))
    if not isinstance(value, dict):
        raise ConfigurationError(f"{at} must be {_AUTH_FORMS}")
    kind = value.get("type")
    if kind not in ("oauth", "bearer", "none"):
        raise ConfigurationError(f'{at}.type must be "oauth", "bearer" or "none"')
    allowed = _OAUTH_KEYS if kind == "oauth" else _BEARER_KEYS if kind == "bearer" else ("type",)
    for key in value:
        if key not in allowed:
            shown = f" {key!r}" if isinstance(key, str) and PLAIN_KEY.fullmatch(key) else ""
            raise ConfigurationError(
                f"{at} has an unknown key{shown} for type {kind} (known: {', '.join(allowed)})"
            )
    if kind == "none":
        return ParsedAuth(AuthSpec("none"))
    if kind == "bearer":
        variable = _env_name(value, "token_env", at, required=True)
        assert variable is not None
        token = environ.get(variable, "")
        if not token:
            return ParsedAuth(
                AuthSpec("bearer"),
                problem=f"auth.token_env: environment variable {variable} is not set or empty",
            )
        if not token.isascii() or any(ch.isspace() or not ch.isprintable() for ch in token):
            return ParsedAuth(
                AuthSpec("bearer"),
                problem=f"auth.token_env: environment variable {variable} does not hold a "
                "token (printable ASCII without spaces; its value is not shown)",
            )
        return ParsedAuth(AuthSpec("bearer"), bearer=token)
    return _oauth(value, at, environ)


def _oauth(value: dict[str, Any], at: str, environ: Mapping[str, str]) -> ParsedAuth:
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
            return ParsedAuth(
                spec,
                problem=f"auth.client_secret_env: environment variable {secret_env} "
                "is not set or empty",
            )
        spec = replace(spec, client_secret=secret)
    return ParsedAuth(spec)


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


def _from_cursor(value: dict[str, Any], at: str) -> dict[str, Any]:
    """Cursor's static OAuth client, as the ``oauth`` form."""
    converted: dict[str, Any] = {"type": "oauth"}
    for key, found in value.items():
        ours = _CURSOR_KEYS.get(key) if isinstance(key, str) else None
        if ours is None:
            shown = f" {key!r}" if isinstance(key, str) and PLAIN_KEY.fullmatch(key) else ""
            raise ConfigurationError(
                f"{at} has an unknown key{shown} (known: {', '.join(_CURSOR_KEYS)})"
            )
        if ours == "scopes" and isinstance(found, list):
            if not all(isinstance(scope, str) for scope in found):
                raise ConfigurationError(f"{at}.scopes must be a list of strings")
            converted[ours] = " ".join(found)
        else:
            converted[ours] = found
    return converted
