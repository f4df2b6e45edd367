"""How servers are given to the manager, and the supervisor each one gets."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from ..client.connection import TransportFactory
from ..config import AuthSpec, ServerConfig
from ..driver.reconnect import Reconnect
from ..protocol.errors import ConfigurationError
from ..transports.http_target import has_authorization
from ..transports.targets import (
    HttpTarget,
    StdioTarget,
    Target,
    TcpTarget,
    UnixTarget,
    WebSocketTarget,
)
from ._server import ConnectionMaker, ManagedServer, ManagerEventCallback
from .naming import name_problem
from .status import ServerStatus

if TYPE_CHECKING:
    from ..auth.flow import OAuth

__all__ = ["ServerSpec", "managed_server"]

ServerSpec: TypeAlias = ServerConfig | Target | str | TransportFactory
"""How a server is given: a config entry, a target (``"tcp://HOST:PORT"`` and
``"unix:PATH"`` strings too), or an async callable opening a transport (what
``mcpl_host.testing``'s memory mode gives, which a ServerConfig cannot hold)."""


def managed_server(
    name: str,
    spec: ServerSpec,
    *,
    policy: Reconnect | None,
    make_connection: ConnectionMaker,
    on_event: ManagerEventCallback | None,
    on_status: Callable[[ServerStatus], None] | None,
    separator: str,
    auth: OAuth | None = None,
) -> ManagedServer:
    """The supervisor for one named server (disabled, failed for its config's
    ``problem`` or a name catalogue names cannot hold, or to be connected).

    Raises ``TypeError`` when ``spec`` is not a :data:`ServerSpec`.
    """
    target: Target | str | TransportFactory | None
    problem: ConfigurationError | None = None
    disabled = False
    if isinstance(spec, ServerConfig):
        target, disabled = spec.target, spec.disabled
        if spec.problem is not None or target is None:
            problem = ConfigurationError(
                f"{spec.source}: {spec.problem or 'no target'}", server=name
            )
    elif isinstance(
        spec, (StdioTarget, TcpTarget, UnixTarget, HttpTarget, WebSocketTarget, str)
    ) or callable(spec):
        target = spec
    else:
        raise TypeError(
            f"server {name!r}: expected a ServerConfig, a target or a transport factory,"
            f" not {type(spec).__name__}"
        )
    unnamable = name_problem(name, separator)
    if problem is None and unnamable is not None:
        problem = ConfigurationError(unnamable, server=name)
    target = _with_auth(target, auth, spec.auth if isinstance(spec, ServerConfig) else None)
    return ManagedServer(
        name,
        target,
        problem=problem,
        disabled=disabled,
        policy=policy,
        make_connection=make_connection,
        on_event=on_event,
        on_status=on_status,
    )


def _with_auth(
    target: Target | str | TransportFactory | None, auth: OAuth | None, spec: AuthSpec | None
) -> Target | str | TransportFactory | None:
    """The OAuth of an HTTP server that has none on its target: none when its config
    entry says ``bearer`` or ``none``; the manager's ``auth`` with the entry's client
    and scope, if it gives any (one OAuth serves many servers: it keeps what it learns
    per server URL); for an entry's ``"oauth"`` without a manager ``auth``, one over the
    user's token file that never asks a person (what ``mcpl-host auth login`` stored)."""
    if spec is not None and spec.kind != "oauth":
        return target
    if isinstance(target, str) and target.lower().startswith(("http://", "https://")):
        target = HttpTarget(target)
    if not isinstance(target, HttpTarget) or target.auth is not None:
        return target
    if has_authorization(target.headers):
        return target  # a static token authorizes it
    options = spec.oauth_options() if spec is not None else {}
    if auth is not None:
        oauth = auth.replace(**options) if options else auth
    elif spec is not None:
        # The authorization machinery (httpx, PyJWT, cryptography) loads only for a
        # server that uses it: a stdio-only host never pays for it.
        from ..auth import OAuth, user_store  # noqa: PLC0415

        oauth = OAuth(store=user_store(), **options)
    else:
        return target
    return dataclasses.replace(target, auth=oauth)
