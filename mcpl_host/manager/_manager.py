"""ConnectionManager: many servers from one configuration, each supervised on its own."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import trio
from msgspec import UNSET

from .._log import get_logger
from ..client.connection import Connection, TransportFactory
from ..client.hooks import ElicitationHook, SamplingHook, as_roots
from ..client.pagination import DEFAULT_MAX_LIST_BYTES, DEFAULT_MAX_LIST_ITEMS
from ..client.types import Root
from ..config import CatalogueFilter, ServerConfig, read_config
from ..driver.core import (
    DEFAULT_INITIALIZE_TIMEOUT,
    DEFAULT_MAX_OWED_ANSWERS,
    DEFAULT_MAX_SERVER_REQUESTS,
    DEFAULT_REQUEST_TIMEOUT,
)
from ..driver.epoch import DEFAULT_WRITE_TIMEOUT
from ..driver.lifetime import OwnsNursery
from ..driver.reconnect import Reconnect
from ..driver.responder import Handler
from ..events import EventCallback
from ..protocol.batch import DEFAULT_MAX_BATCH_ENTRIES
from ..protocol.errors import ConfigurationError, RequestTimeout
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.profiles import validate_allowlist
from ..telemetry import Telemetry
from ..transports.targets import Target
from ._catalogue import CatalogueMethods
from ._server import ManagedServer, ManagerEventCallback
from ._specs import ServerSpec, managed_server
from .errors import ServerUnavailable, UnknownServer
from .naming import SEPARATOR
from .status import ServerStatus

if TYPE_CHECKING:
    from ..auth.flow import OAuth

__all__ = ["DEFAULT_RECONNECT", "ConnectionManager"]

_log = get_logger("mcpl_host.manager")

DEFAULT_RECONNECT: Final = Reconnect()


class ConnectionManager(OwnsNursery, CatalogueMethods):
    """Connections to many servers, each supervised in its own task.

    ``servers`` maps names to :data:`ServerSpec` values, or is the path of a config
    file in any client's format (:func:`mcpl_host.config.read_config`; its warnings
    are logged). Open it as an async context manager (it owns its nursery)::

        async with ConnectionManager("servers.json") as manager:
            listing = await manager.list_tools()

    or run it in a nursery of yours: ``manager = await nursery.start(ConnectionManager(
    ...).run)``, then ``await manager.aclose()``. Either returns at once, every server
    ``connecting`` (or ``disabled``, or ``failed`` for its configuration): to wait for
    them, :meth:`wait_ready`. Neither ever fails because a server does: that server's
    status says why (``failed``, ``retrying`` or not).

    ``reconnect`` is used twice per server: to retry the first connect, then as the
    Connection's own policy once ready (``None``: one attempt, and a lost transport
    ends the server). A permanent error (``error.permanent``) is never retried. The
    other options are the Connection's, given to every server.
    ``on_event(name, event)`` gets every connection event with its server's name;
    ``on_status(status)`` every change of a server's :class:`ServerStatus`. Both are
    called synchronously and must be quick; an exception from either is logged.
    ``on_wire(name, direction, line)`` is each connection's ``on_wire`` with its
    server's name (raw lines: a trace must escape, cut and redact them).
    ``separator`` joins a server's name and an item's own key in catalogue names
    (:mod:`mcpl_host.manager.naming`). ``filters`` maps server names to the
    :class:`~mcpl_host.config.CatalogueFilter` of what of theirs the catalogue shows,
    in place of their config entry's.
    """

    def __init__(
        self,
        servers: Mapping[str, ServerSpec] | str | os.PathLike[str],
        *,
        reconnect: Reconnect | None = DEFAULT_RECONNECT,
        versions: list[str] | tuple[str, ...] | None = None,
        client_info: Mapping[str, Any] | None = None,
        handlers: Mapping[str, Handler] | None = None,
        roots: Iterable[Root | str] | None = None,
        sampling: SamplingHook | None = None,
        elicitation: ElicitationHook | None = None,
        url_elicitation: bool = False,
        initialize_timeout: float = DEFAULT_INITIALIZE_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS,
        max_owed_answers: int = DEFAULT_MAX_OWED_ANSWERS,
        max_batch_entries: int = DEFAULT_MAX_BATCH_ENTRIES,
        max_list_items: int = DEFAULT_MAX_LIST_ITEMS,
        max_list_bytes: int = DEFAULT_MAX_LIST_BYTES,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        secrets: tuple[str, ...] = (),
        on_event: ManagerEventCallback | None = None,
        on_status: Callable[[ServerStatus], None] | None = None,
        on_wire: Callable[[str, str, bytes], None] | None = None,
        separator: str = SEPARATOR,
        filters: Mapping[str, CatalogueFilter] | None = None,
        auth: OAuth | None = None,
        telemetry: Telemetry | bool | None = None,
    ) -> None:
        """Raises :class:`~mcpl_host.ConfigurationError` when the config file cannot be
        read or is malformed as a whole, for an unknown revision in ``versions``, or an
        empty ``separator``, or ``filters`` naming a server not configured;
        ``TypeError`` for a server given as something else than a :data:`ServerSpec`,
        or a filter that is not a CatalogueFilter. A server's own trouble (a bad target string, a
        ``problem`` in its config entry) is not raised: that server is ``failed``."""
        if isinstance(servers, (str, os.PathLike)):
            loaded = read_config(servers)
            for warning in loaded.warnings:  # unknown keys and the like: said once
                _log.warning("config file warning", warning=warning)
            servers = loaded.servers
        validate_allowlist(versions)  # once for all: every server would refuse it
        if not separator:
            raise ConfigurationError("separator must not be empty")
        # Checked against Connection's signature here, once, rather than per attempt.
        self._new_connection = functools.partial(
            Connection,
            versions=versions,
            client_info=client_info,
            handlers=handlers,
            roots=roots,
            sampling=sampling,
            elicitation=elicitation,
            url_elicitation=url_elicitation,
            initialize_timeout=initialize_timeout,
            request_timeout=request_timeout,
            max_message_bytes=max_message_bytes,
            max_server_requests=max_server_requests,
            max_owed_answers=max_owed_answers,
            max_batch_entries=max_batch_entries,
            max_list_items=max_list_items,
            max_list_bytes=max_list_bytes,
            write_timeout=write_timeout,
            secrets=secrets,
            reconnect=reconnect,
            telemetry=telemetry,
        )
        self._on_wire = on_wire
        self._separator = separator
        # What a config entry's variables, inputs and files gave it (a token in its
        # args, say): masked in that server's logs as the manager's own secrets are.
        self._secrets = {
            name: (*secrets, *spec.secrets)
            for name, spec in servers.items()
            if isinstance(spec, ServerConfig) and spec.secrets
        }
        self._servers = {
            name: managed_server(
                name,
                spec,
                policy=reconnect,
                make_connection=self._connect,
                on_event=on_event,
                on_status=self._status_changed,
                separator=separator,
                auth=auth,
            )
            for name, spec in servers.items()
        }
        self._on_status = on_status
        self._changed = trio.Event()  # set and replaced on every status change
        self._init_catalogue(_filters(servers, filters or {}))
        self._running = False
        self._closing = False
        self._closed = trio.Event()

    def _connect(
        self, name: str, target: Target | str | TransportFactory, on_event: EventCallback
    ) -> Connection:
        options: dict[str, Any] = {}
        if name in self._secrets:
            options["secrets"] = self._secrets[name]
        if self._on_wire is not None:
            options["on_wire"] = functools.partial(self._on_wire, name)
        return self._new_connection(target, name=name, on_event=on_event, **options)

    # -- lifetime ------------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[ConnectionManager] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Supervise every server until :meth:`aclose`; use with ``nursery.start``.

        Reports started as soon as every server's supervisor has started, before any
        connect attempt: one server that hangs must not hold up the others (nor the
        caller); :meth:`wait_ready` waits for them. Never raises for a server's failure;
        raises ``RuntimeError`` when run a second time.
        """
        if self._running:
            raise RuntimeError("a ConnectionManager runs once")
        self._running = True
        async with trio.open_nursery() as nursery:
            for server in self._servers.values():
                await nursery.start(server.supervise)
            task_status.started(self)

    async def aclose(self) -> None:
        """Close every server, concurrently: connecting ones stop trying, ready and
        reconnecting ones are closed (pending requests fail with ConnectionClosed, stdio
        servers are stopped and reaped). Idempotent, safe from any task, never raises."""
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for server in self._servers.values():
                    nursery.start_soon(server.close)
        self._closed.set()

    async def close_server(self, name: str) -> None:
        """Close one server (as :meth:`aclose` does for all); its status becomes
        ``closed`` unless it is ``disabled``, or ``failed`` and not retrying. Idempotent.

        Raises :class:`UnknownServer` for a name that is not configured.
        """
        await self._server(name).close()

    # -- servers -------------------------------------------------------------------------

    def _status_changed(self, status: ServerStatus) -> None:
        self._changed.set()
        self._changed = trio.Event()
        if self._on_status is not None:
            self._on_status(status)  # ManagedServer logs what it raises

    async def wait_ready(
        self,
        *names: str,
        mode: Literal["all", "any"] = "all",
        timeout: float | None = None,
    ) -> dict[str, ServerStatus]:
        """Wait for the named servers (default: every one) and return their statuses.

        ``mode="all"``: until each is settled (:attr:`ServerStatus.settled`: ready, or
        ended: ``failed`` and not retrying, ``disabled``, ``closed``); ``"any"``: until
        one of them is ready, or all are settled. Returns
        when that holds or ``timeout`` seconds have passed, whichever comes first: the
        statuses say which. Raises :class:`UnknownServer` for a name not configured,
        ``ValueError`` for another ``mode``.
        """
        if mode not in ("all", "any"):
            raise ValueError(f"mode must be 'all' or 'any', not {mode!r}")
        servers = [self._server(name) for name in names] if names else list(self._servers.values())
        with trio.move_on_after(math.inf if timeout is None else timeout):
            while True:
                statuses = [server.status for server in servers]
                if all(status.settled for status in statuses) or (
                    mode == "any" and any(status.state == "ready" for status in statuses)
                ):
                    break
                await self._changed.wait()
        return {server.name: server.status for server in servers}

    async def wait_status_change(
        self, known: Mapping[str, ServerStatus] | None = None, *, timeout: float | None = None
    ) -> dict[str, ServerStatus]:
        """Every server's status, once it differs from ``known`` (default: the statuses
        now), or when ``timeout`` seconds have passed (then unchanged).

        Changes are coalesced, never queued: a caller that passes what it got last time
        misses no change of the final state, only steps it was too slow to see (each
        step reaches ``on_status``), and a server that flaps costs it nothing.
        """
        if known is None:
            known = self.status()
        with trio.move_on_after(math.inf if timeout is None else timeout):
            while self.status() == known:
                await self._changed.wait()
        return self.status()

    def status(self) -> dict[str, ServerStatus]:
        """Every server's status, by name, in configuration order."""
        return {name: server.status for name, server in self._servers.items()}

    def connection(self, name: str) -> Connection:
        """The server's Connection, when it is ``ready`` or ``reconnecting`` (a
        request made then waits, within its timeout, for the new transport). It is the
        raw way to the server: its lists and calls are not filtered by the catalogue.

        Raises :class:`UnknownServer`, or :class:`ServerUnavailable` (a
        :class:`~mcpl_host.ConnectionClosed`) carrying the state and the last error.
        """
        server = self._server(name)
        # Each read once: from the sync face this runs in the caller's thread.
        status, conn = server.status, server.connection
        if status.usable and conn is not None:
            return conn
        raise ServerUnavailable(name, status.state, status.error)

    async def request(
        self,
        name: str,
        method: str,
        params: Any = UNSET,
        *,
        timeout: float | None = None,
        on_progress: Any = None,
        progress_resets_timeout: bool = False,
        max_timeout: float | None = None,
        rebind: bool | None = None,
    ) -> Any:
        """``connection(name).request(method, params, ...)``: the result as plain JSON.

        Raises what :meth:`connection` raises, then what
        :meth:`mcpl_host.Connection.request` raises (RequestError, RequestTimeout,
        ConnectionClosed, ProtocolError).
        """
        return await self.connection(name).request(
            method,
            params,
            timeout=timeout,
            on_progress=on_progress,
            progress_resets_timeout=progress_resets_timeout,
            max_timeout=max_timeout,
            rebind=rebind,
        )

    async def set_roots(self, roots: Iterable[Root | str], *, timeout: float | None = None) -> None:
        """Replace the roots offered to every server: each ready one is told
        (``notifications/roots/list_changed``), all at once, and servers that connect
        later get them. A server that does not take the notice within ``timeout``
        (default: the request timeout) is logged, not raised: it has the new roots
        whenever it asks, and it must not keep the others from being told.

        Raises ``ValueError`` when the manager was made without ``roots``, ``TypeError``
        for a root that is neither a Root nor a string.
        """
        if self._new_connection.keywords.get("roots") is None:
            raise ValueError("this manager offers no roots: pass roots=[...] to ConnectionManager")
        chosen = as_roots(roots)
        self._new_connection = functools.partial(self._new_connection, roots=chosen)

        async def tell(name: str, connection: Connection) -> None:
            try:
                await connection.set_roots(chosen, timeout=timeout)
            except RequestTimeout:
                _log.warning("roots not told", server=name, reason="the server is not reading")

        async with trio.open_nursery() as nursery:
            for name, server in self._servers.items():
                if server.connection is not None:
                    nursery.start_soon(tell, name, server.connection)

    def _server(self, name: str) -> ManagedServer:
        try:
            return self._servers[name]
        except KeyError:
            raise UnknownServer(name) from None


def _filters(
    servers: Mapping[str, ServerSpec], given: Mapping[str, CatalogueFilter]
) -> dict[str, CatalogueFilter]:
    """Each server's catalogue filter: the one given for it, else its config entry's,
    else one that admits everything."""
    for name, value in given.items():
        if name not in servers:
            raise ConfigurationError(f"filters names {name!r}, which is not a configured server")
        if not isinstance(value, CatalogueFilter):
            raise TypeError(f"filters[{name!r}] must be a CatalogueFilter")
    return {
        name: given.get(name)
        or (spec.filter if isinstance(spec, ServerConfig) else CatalogueFilter())
        for name, spec in servers.items()
    }
