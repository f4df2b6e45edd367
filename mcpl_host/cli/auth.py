"""``mcpl-host auth login|status|logout``, and the login ``connect`` and ``call`` run on
a terminal when a server needs one.

A login is the authorization code flow with a person: a browser opens on the
authorization server (its URL is printed too, for when none can), the redirect comes
back to a :class:`~mcpl_host.auth.LoopbackRedirect` on 127.0.0.1 within a bounded
time, and the tokens go to the user's token file. ``status`` and ``logout`` read and
change that file; neither shows a token, nor does anything else here.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TextIO

from ..auth import FileTokenStore, LoopbackRedirect, StoredEntry, TokenStore
from ..config import AuthSpec, InputResolver, read_config
from ..protocol.errors import ConfigurationError, McplHostError
from ..protocol.redact import Redactor, log_value
from ..transports.targets import HttpTarget, describe
from .args import AuthOptions
from .credentials import CALLBACK_PATH, Recording, entries_for, oauth_for, registered_port
from .failure import CONFIG_ERROR, describe_failure, error_object
from .parser import DEFAULT_TIMEOUT, LOGIN_TIMEOUT
from .render import Style
from .trace import WireWatch

__all__ = [
    "AuthTarget",
    "LoginSettings",
    "auth_target",
    "interactive",
    "login",
    "login_command",
    "logout",
    "render_auth",
    "status",
]


@dataclass(frozen=True, slots=True)
class AuthTarget:
    """The server an ``auth`` command concerns: its URL, how reports name it, its
    config ``auth`` (None: the defaults), the secrets its config holds."""

    url: str
    label: str
    spec: AuthSpec | None = None
    secrets: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LoginSettings:
    """How a login runs: the wait for the browser, whether to open one, the loopback
    port (0: the one registered before, else any), whether stored tokens are ignored,
    and where ``--trace`` lines go."""

    timeout: float = LOGIN_TIMEOUT
    open_browser: bool = True
    port: int = 0
    force: bool = False
    trace: TextIO | None = None
    started: float = 0.0


def interactive() -> bool:
    """Whether a person is at the terminal to log in: stdin and stderr are both one
    (stdout may be a pipe: ``--json | jq``). Raises nothing."""
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed streams
        return False


def login_command(
    url: str | None = None, *, config: str | None = None, server: str | None = None
) -> str:
    """The command line a person runs to log in to the server. Raises nothing."""
    if config is not None and server is not None:
        return f"mcpl-host auth login --config {shlex.quote(config)} --server {shlex.quote(server)}"
    return f"mcpl-host auth login {shlex.quote(url or 'URL')}"


def auth_target(options: AuthOptions, inputs: InputResolver | None = None) -> AuthTarget | None:
    """The server ``options`` name, None when they name none (status and logout of
    every entry). ``inputs`` answers the ``${input:ID}`` of a config file's entry.

    Raises ConfigurationError: a config file that cannot be used, a server it does not
    have, one that is not an http(s):// server, or (for a login) one whose ``auth`` is
    not OAuth. No message shows a secret.
    """
    if options.url is not None:
        target = HttpTarget(options.url)
        return AuthTarget(target.url, describe(target))
    if options.config is None or options.server is None:
        return None
    loaded = read_config(options.config, inputs=inputs)
    servers = loaded.servers
    config = servers.get(options.server)
    if config is None:
        have = ", ".join(repr(name) for name in servers) or "none"
        raise ConfigurationError(
            f"{options.config}: key '{loaded.servers_key}.{options.server}' not found "
            f"(servers: {have})"
        )
    if config.problem is not None:
        raise ConfigurationError(f"{config.source}: {config.problem}")
    if not isinstance(config.target, HttpTarget):
        raise ConfigurationError(f"{config.source}: auth is for http:// and https:// servers")
    spec = config.auth
    if options.action == "login" and spec is not None and spec.kind != "oauth":
        raise ConfigurationError(
            f"{config.source}: its auth is {spec.kind}, not oauth: there is nothing to log in to"
        )
    return AuthTarget(config.target.url, config.source, spec, config.secrets)


async def login(
    target: AuthTarget, store: TokenStore, settings: LoginSettings, redactor: Redactor
) -> dict[str, Any]:
    """Run the authorization code flow for ``target`` with a browser and a loopback
    redirect; the report (never a token). Secrets the flow obtains are learnt by
    ``redactor``. Raises nothing but cancellation."""
    recording = Recording(store, ignore_stored=settings.force)
    watch = WireWatch(stream=settings.trace, started=settings.started, label=None)
    watch.redactor = redactor
    try:
        async with _listener(store, target.url, settings) as browser:
            oauth = oauth_for(
                target.spec,
                recording,
                redirect_uri=browser.redirect_uri,
                authorize=browser.authorize,
            )
            tokens = await oauth.login(
                target.url,
                redactor=redactor,
                timeout=DEFAULT_TIMEOUT,
                on_http=lambda text: watch("http", text.encode()),
            )
            if recording.key is not None:
                await _drop_stale(store, recording.key)
    except McplHostError as exc:
        return _failed(target, describe_failure(exc, redactor))
    except OSError as exc:  # the token file (the store's only I/O)
        where = _file(store) or "the token store"
        message = f"cannot write {where}: {exc.strerror or type(exc).__name__}"
        return _failed(target, error_object(CONFIG_ERROR, redactor.log_value(message)))
    issuer, client_id, resource = recording.key or (None, None, None)
    return {
        "ok": True,
        "target": target.label,
        "outcome": recording.outcome,
        "issuer": issuer,
        "client_id": client_id,
        "resource": resource,
        "token_type": tokens.token_type,
        "expires_at": tokens.expires_at,
        "scope": tokens.scope,
        "file": _file(store),
    }


@contextlib.asynccontextmanager
async def _listener(
    store: TokenStore, url: str, settings: LoginSettings
) -> AsyncIterator[LoopbackRedirect]:
    """The loopback listener on the port asked for, else the one registered before
    (when it is free), else any. Raises ConfigurationError when it cannot listen (an
    asked-for port is taken)."""
    announce = _announcer(settings)
    port = settings.port
    if not port and isinstance(store, FileTokenStore):
        port = await registered_port(store, url) or 0
    redirect = _redirect(port, settings, announce)
    try:
        try:
            await redirect.__aenter__()
        except OSError:
            if settings.port or not port:
                raise
            redirect = _redirect(0, settings, announce)  # taken since: register anew
            await redirect.__aenter__()
    except OSError as exc:
        raise ConfigurationError(
            f"cannot listen for the redirect on 127.0.0.1:{port}: "
            f"{exc.strerror or type(exc).__name__}"
        ) from None
    try:
        yield redirect
    finally:
        await redirect.__aexit__(None, None, None)


def _redirect(
    port: int, settings: LoginSettings, announce: Callable[[str], None]
) -> LoopbackRedirect:
    return LoopbackRedirect(
        port=port,
        path=CALLBACK_PATH,
        open_browser=settings.open_browser,
        timeout=settings.timeout,
        announce=announce,
    )


def _announcer(settings: LoginSettings) -> Callable[[str], None]:
    def announce(url: str) -> None:
        # Escaped (the URL is built from an authorization server's metadata) but not cut:
        # a person must be able to copy it whole.
        how = (
            "a browser opens on the authorization server; if none does, open"
            if settings.open_browser
            else "open"
        )
        with contextlib.suppress(OSError):
            sys.stderr.write(
                f"mcpl-host: to authorize, {how} this URL on this machine (waiting up to "
                f"{settings.timeout:g} s):\n  {log_value(url, sys.maxsize)}\n"
            )
            sys.stderr.flush()

    return announce


async def _drop_stale(store: TokenStore, key: tuple[str, str, str]) -> None:
    """Tokens kept for the same issuer and resource under another client (an earlier
    login's registration) can no longer be used: forget them."""
    if not isinstance(store, FileTokenStore):
        return
    issuer, client_id, resource = key
    for entry in store.entries():
        if (entry.issuer, entry.resource) == (issuer, resource) and entry.client_id != client_id:
            await store.set_tokens(entry.issuer, entry.client_id, entry.resource, None)


def status(target: AuthTarget | None, store: FileTokenStore) -> dict[str, Any]:
    """The stored entries (for ``target``, or all): issuer, client id, resource, token
    type, expiry, scope, whether a refresh token is kept; never a token.

    Raises ConfigurationError for a token file written by a newer mcpl_host.
    """
    now = time.time()
    entries = [_entry(entry, now) for entry in entries_for(store, _url(target))]
    return {
        "ok": True,
        "target": None if target is None else target.label,
        "file": str(store.path),
        "entries": entries,
    }


def logout(target: AuthTarget | None, store: FileTokenStore) -> dict[str, Any]:
    """Forget the stored tokens for ``target``; without one, every token and client
    registration. Nothing is revoked at the authorization server.

    Raises ConfigurationError for a token file written by a newer mcpl_host, OSError
    when it cannot be written.
    """
    if target is None:
        removed = store.forget()
    else:
        resources = dict.fromkeys(entry.resource for entry in entries_for(store, target.url))
        removed = sum(store.forget(resource=resource) for resource in resources)
    return {
        "ok": True,
        "target": None if target is None else target.label,
        "file": str(store.path),
        "removed": removed,
    }


def _url(target: AuthTarget | None) -> str | None:
    return None if target is None else target.url


def _entry(entry: StoredEntry, now: float) -> dict[str, Any]:
    return {
        "issuer": entry.issuer,
        "client_id": entry.client_id,
        "resource": entry.resource,
        "token_type": entry.token_type,
        "expires_at": entry.expires_at,
        "expired": entry.expires_at is not None and entry.expires_at <= now,
        "scope": entry.scope,
        "refresh_token": entry.has_refresh_token,
    }


def _failed(target: AuthTarget, error: dict[str, Any]) -> dict[str, Any]:
    return {"ok": False, "target": target.label, "error": error}


def _file(store: TokenStore) -> str | None:
    """The token file, None for a store in memory."""
    return str(store.path) if isinstance(store, FileTokenStore) else None


# -- the readable reports ------------------------------------------------------------


def render_auth(report: dict[str, Any], action: str, redactor: Redactor, style: Style) -> str:
    """An ``auth`` command's report as text (failures too). Raises nothing."""
    lines: list[str] = []

    def field(name: str, value: Any) -> None:
        shown = "-" if value is None else redactor.log_value(str(value), 400)
        lines.append(f"{style.bold(f'{name:<12}')} {shown}")

    if report.get("target") is not None:
        field("target", report["target"])
    if not report.get("ok"):
        error = report.get("error") or {}
        field("failed", error.get("kind"))
        field("message", error.get("message"))
        for key in ("status", "step", "rule", "oauth_error"):
            if error.get(key) is not None:
                field(key, error[key])
        if error.get("challenge"):
            field("challenge", ", ".join(f"{k}={v}" for k, v in error["challenge"].items()))
        return "\n".join(lines) + "\n"
    if action == "login":
        field("logged in", report["outcome"].replace("-", " "))
        for key in ("issuer", "client_id", "resource", "scope"):
            field(key.replace("_", " "), report.get(key))
        field("expires", _when(report.get("expires_at"), time.time()))
        field("stored in", report.get("file") or "memory (this command only)")
    elif action == "status":
        field("file", report["file"])
        entries = report.get("entries") or []
        if not entries:
            lines.append("no stored logins" + ("" if report.get("target") is None else " for it"))
        for entry in entries:
            lines.append("")
            for key in ("issuer", "client_id", "resource", "scope"):
                field(key.replace("_", " "), entry.get(key))
            field("expires", _when(entry.get("expires_at"), time.time()))
            field("refreshable", "yes" if entry.get("refresh_token") else "no")
    else:
        field("file", report["file"])
        removed = report.get("removed", 0)
        lines.append(f"forgot {removed} stored login{'' if removed == 1 else 's'}")
    return "\n".join(lines) + "\n"


def _when(expires_at: Any, now: float) -> str:
    if not isinstance(expires_at, (int, float)):
        return "not said by the server"
    left = expires_at - now
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(expires_at))
    return f"{stamp} ({_span(left)} left)" if left > 0 else f"{stamp} (expired {_span(-left)} ago)"


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
