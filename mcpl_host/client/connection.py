"""The public :class:`Connection`: the typed MCP client over the trio driver.

The driver (:mod:`mcpl_host.driver`) moves messages and knows nothing of MCP's typed
calls; this class is a driver plus what a client of MCP adds on top: the typed calls
(:class:`~mcpl_host.client.calls.ClientCalls`), the hooks that serve the server's
requests (roots, sampling, elicitation) and the capabilities they advertise, the list
caches and the routing of the server's notifications into events.

A subclass rather than a wrapper: every call goes straight to the driver's request
machinery, with no forwarding layer on the path each request takes.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from msgspec import Raw

from ..driver.core import (
    DEFAULT_INITIALIZE_TIMEOUT,
    DEFAULT_MAX_OWED_ANSWERS,
    DEFAULT_MAX_SERVER_REQUESTS,
    DEFAULT_REQUEST_TIMEOUT,
    Driver,
    TransportFactory,
)
from ..driver.epoch import DEFAULT_WRITE_TIMEOUT
from ..driver.negotiate import DEFAULT_DISCOVER_TIMEOUT
from ..driver.pending import Pending, ProgressCallback
from ..driver.reconnect import Reconnect
from ..driver.responder import Handler, ServerRequest
from ..events import EventCallback, RestoreFailed
from ..mcpl.host import Mcpl
from ..protocol.batch import DEFAULT_MAX_BATCH_ENTRIES
from ..protocol.capabilities import client_capabilities
from ..protocol.errors import ConnectionClosed, McplHostError, RequestError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.profiles import (
    PROFILES,
    Profile,
    handshake_era,
    stateless_era,
    validate_allowlist,
)
from ..protocol.results import INPUT_REQUIRED_METHODS, input_required
from ..protocol.subscriptions import LISTEN, Subscriptions
from ..telemetry import Telemetry
from ..transports.targets import Target
from .cache import ListCache
from .hooks import ElicitationHook, HookContext, InputHooks, SamplingHook, as_roots
from .listen import DEFAULT_MAX_RELISTENS, Listener
from .mrtr import DEFAULT_MAX_INPUT_REQUESTS, DEFAULT_MAX_INPUT_ROUNDS, InputLimits
from .notifications import NotificationRouter
from .pagination import DEFAULT_MAX_LIST_BYTES, DEFAULT_MAX_LIST_ITEMS, ListLimits
from .restore import DEFAULT_MAX_SUBSCRIPTIONS, Restore, SessionState
from .tasks import TaskBoard, TaskCalls
from .types import Root

__all__ = ["Connection", "ProgressCallback", "TransportFactory"]


class Connection(Driver, TaskCalls):
    """A connection to one MCP server.

    Open it as an async context manager (it owns its nursery)::

        async with Connection(StdioTarget.of(["python3", "server.py"])) as conn:
            result = await conn.request("tools/list")

    or run it in a nursery of yours: ``conn = await nursery.start(Connection(...).run)``
    and ``await conn.aclose()`` when done. Either way a failure to connect raises one
    typed exception (a :class:`~mcpl_host.McplHostError`), never an exception group.

    The typed MCP calls (``list_tools``, ``call_tool``, ``read_resource``, ...) are
    methods of the connection: see :class:`~mcpl_host.client.calls.ClientCalls`; so are
    the task calls (``start_task``, ``watch_task``, ...):
    :class:`~mcpl_host.client.tasks.TaskCalls`.

    What a server may ask of the host comes through hooks: ``roots`` (the roots to
    offer, :class:`~mcpl_host.Root` values or URIs; change them with :meth:`set_roots`),
    ``sampling`` (a :data:`~mcpl_host.SamplingHook`) and ``elicitation`` (an
    :data:`~mcpl_host.ElicitationHook`; ``url_elicitation=True`` if it also handles URL
    mode). A capability is advertised only for a hook given, in the shape the offered
    revision defines, and each request is served only on revisions that define it.
    ``handlers`` maps any other server-request method to a raw handler; ``ping`` is
    built in.
    """

    # The coroutine methods a task of the loop trio is the guest of may await itself,
    # with no trio task of its own (mcpl_host.driver.foreign): every wait in them is a
    # request's, and what waits on anything else (task polling, input rounds) runs in
    # trio. The asyncio face awaits these directly; the rest it runs in trio.
    HOST_LOOP_METHODS: ClassVar[frozenset[str]] = frozenset(
        {
            "request",
            "ping",
            "call_tool",
            "read_resource",
            "get_prompt",
            "complete",
            "list_tools",
            "list_resources",
            "list_resource_templates",
            "list_prompts",
        }
    )

    def __init__(
        self,
        target: Target | str | TransportFactory,
        *,
        name: str | None = None,
        versions: list[str] | tuple[str, ...] | None = None,
        client_info: Mapping[str, Any] | None = None,
        handlers: Mapping[str, Handler] | None = None,
        roots: Iterable[Root | str] | None = None,
        sampling: SamplingHook | None = None,
        elicitation: ElicitationHook | None = None,
        url_elicitation: bool = False,
        on_event: EventCallback | None = None,
        initialize_timeout: float = DEFAULT_INITIALIZE_TIMEOUT,
        discover_timeout: float = DEFAULT_DISCOVER_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS,
        max_owed_answers: int = DEFAULT_MAX_OWED_ANSWERS,
        max_batch_entries: int = DEFAULT_MAX_BATCH_ENTRIES,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        secrets: tuple[str, ...] = (),
        reconnect: Reconnect | None = None,
        on_wire: Callable[[str, bytes], None] | None = None,
        mcpl: Mcpl | None = None,
        telemetry: Telemetry | bool | None = None,
        max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS,
        max_list_items: int = DEFAULT_MAX_LIST_ITEMS,
        max_list_bytes: int = DEFAULT_MAX_LIST_BYTES,
        max_relistens: int = DEFAULT_MAX_RELISTENS,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        max_input_requests: int = DEFAULT_MAX_INPUT_REQUESTS,
    ) -> None:
        """Raises :class:`~mcpl_host.ConfigurationError` for a bad target or allowlist or
        ``max_subscriptions``, ``max_list_items`` or ``max_list_bytes`` below 1 or
        ``max_relistens`` below 0,
        ``TypeError`` for a root that is neither a Root nor a string.

        ``versions``: the revisions the host may speak (default: all). With 2026-07-28
        among them it asks ``server/discover`` first and falls back to ``initialize``
        when the server is of the handshake era (an error that is not a 2026-07-28 one,
        or no answer within ``discover_timeout``); the era found is remembered per
        target (docs/protocol.md).
        ``reconnect``: without a policy (the default) the connection ends with its
        transport; with one, a lost transport is replaced and pending requests rebound,
        after the new transport is asked again for the resource subscriptions and the
        logging level the server accepted (at most ``max_subscriptions`` URIs).
        On 2026-07-28 list changes and resource updates come on one
        ``subscriptions/listen`` the connection keeps open (docs/client.md,
        "Subscriptions"); after the server ends it, it is reopened at most
        ``max_relistens`` times in a row (0: never).
        ``max_list_items``, ``max_list_bytes``: the most items, and bytes of page JSON,
        one listing (``list_tools`` and the other lists) collects across its pages; past
        either it raises :class:`~mcpl_host.LimitExceeded` and keeps nothing.
        ``max_input_rounds``, ``max_input_requests``: on 2026-07-28, the most times one
        ``call_tool``, ``get_prompt`` or ``read_resource`` is sent again for the input
        its result asks for (MRTR), and the most inputs one result may ask for; past
        either it raises :class:`~mcpl_host.LimitExceeded` (docs/client.md).
        ``mcpl``: speak MCPL with a server that advertises it (docs/mcpl.md): the grant
        patterns and the hooks for the server's MCPL methods.
        ``telemetry``: spans, metrics and trace context for OpenTelemetry
        (docs/observability.md): on by default when ``opentelemetry-api`` is installed,
        off with False, configured with a :class:`~mcpl_host.telemetry.Telemetry`.
        ``on_wire(direction, line)``: called with every line read (``"in"``) and written
        (``"out"``), raw; a wire trace must escape, cut and redact it before showing it
        (``conn.redactor.log_value``).
        """
        allowlist = validate_allowlist(versions)
        self.list_limits = ListLimits(items=max_list_items, bytes=max_list_bytes)
        self.input_limits = InputLimits(rounds=max_input_rounds, requests=max_input_requests)
        self._roots = None if roots is None else as_roots(roots)
        self._url_elicitation = url_elicitation
        self._hooks = InputHooks(
            roots=None if self._roots is None else self._current_roots,
            sampling=sampling,
            elicitation=elicitation,
            url_mode=self._url_mode,
        )
        hooks = self._hooks.handlers(self._context)
        self._lists = ListCache()
        handshake, stateless = handshake_era(allowlist), stateless_era(allowlist)
        hooked = {
            "roots": self._roots is not None,
            "sampling": sampling is not None,
            "elicitation": elicitation is not None,
            "url_elicitation": url_elicitation,
        }
        super().__init__(
            target,
            name=name,
            versions=allowlist,
            client_info=client_info,
            handlers={**hooks, **(handlers or {})},
            # Capabilities go out before a revision is agreed: shaped for the one offered
            # in each era.
            capabilities=client_capabilities(PROFILES[handshake[0]], **hooked) if handshake else {},
            stateless_capabilities=(
                client_capabilities(PROFILES[stateless[0]], **hooked) if stateless else {}
            ),
            discover_timeout=discover_timeout,
            on_event=on_event,
            initialize_timeout=initialize_timeout,
            request_timeout=request_timeout,
            max_message_bytes=max_message_bytes,
            max_server_requests=max_server_requests,
            max_owed_answers=max_owed_answers,
            max_batch_entries=max_batch_entries,
            write_timeout=write_timeout,
            secrets=secrets,
            reconnect=reconnect,
            on_wire=on_wire,
            mcpl=mcpl,
            telemetry=telemetry,
        )
        self._tasks = TaskBoard(server=self.name, redactor=self.redactor)
        self._notifications = NotificationRouter(
            server=self.name,
            lists=self._lists,
            redactor=self.redactor,
            emit=self._emit,
            tasks=self._tasks,
        )
        self._session_state = SessionState(max_subscriptions=max_subscriptions, server=self.name)
        self._listener = Listener(
            server=self.name,
            state=self._session_state,
            route=self._notifications.handle,
            capabilities=lambda: self.server_capabilities,
            start=lambda params: self._request_now(LISTEN, params, timeout=math.inf),
            answer=lambda pending: self._answer(pending, timeout=math.inf),
            spawn=self._spawn,
            closing=lambda: self._closing,
            on_gap=self._lists.invalidate,
            log=self._log,
            redactor=self.redactor,
            max_relistens=max_relistens,
        )

    @property
    def acknowledged_subscriptions(self) -> Subscriptions | None:
        """On 2026-07-28, what the server's ``notifications/subscriptions/acknowledged``
        honours of the open ``subscriptions/listen`` (list changes by kind, resource
        URIs): only these are delivered. None in the handshake era, between transports,
        and while no listen is open or acknowledged."""
        return self._listener.acknowledged if self._listener.active else None

    async def set_roots(self, roots: Iterable[Root | str], *, timeout: float | None = None) -> None:
        """Replace the roots offered to the server and tell it they changed
        (``notifications/roots/list_changed``, when connected; after a reconnect the
        server asks anew).

        Raises ``ValueError`` when the connection was made without ``roots`` (the roots
        capability was not advertised), ``TypeError`` for a bad root, and
        :class:`~mcpl_host.RequestTimeout` when the notification could not be written
        within ``timeout`` (default: the connection's ``request_timeout``); the new roots
        are in force either way.
        """
        if self._roots is None:
            raise ValueError("this connection offers no roots: pass roots=[...] to Connection")
        self._roots = as_roots(roots)
        # Closed, between transports, or lost meanwhile: the next server asks for them.
        with contextlib.suppress(ConnectionClosed):
            await self.notify("notifications/roots/list_changed", timeout=timeout)

    # -- what the typed calls and the hooks need of the driver -------------------------

    async def _request_raw(
        self,
        method: str,
        params: Any,
        *,
        timeout: float | None,
        on_progress: ProgressCallback | None = None,
        progress_resets_timeout: bool = False,
        max_timeout: float | None = None,
        rebind: bool | None = None,
    ) -> Raw:
        result: Raw = await self.request(
            method,
            params,
            result_type=Raw,
            timeout=timeout,
            on_progress=on_progress,
            progress_resets_timeout=progress_resets_timeout,
            max_timeout=max_timeout,
            rebind=rebind,
        )
        profile = self._result_profile()
        if profile is not None and profile.stateless and method not in INPUT_REQUIRED_METHODS:
            # Every 2026-07-28 result says what it is; the three that may ask for input
            # are read by the rounds (client/mrtr.py), the rest must be complete.
            input_required(result, method, server=self.name, safe=self.redactor.log_value)
        return result

    def _result_profile(self) -> Profile | None:
        # The transport the answer just came on: the current one, or, when it was lost
        # meanwhile, the one that ended (a closed epoch keeps its profile).
        epoch = self._epoch
        return epoch.profile if epoch is not None else None

    def _on_notification(self, method: str, params: Raw | None) -> None:
        if method == "notifications/cancelled":
            # One naming none of the server's requests: it may end the listen.
            if self._listener.active:
                self._listener.server_cancelled(params)
            return
        if self._listener.active and self._listener.take(method, params):
            return  # 2026-07-28: a listen's notification, routed when it is the open one's
        self._notifications.handle(method, params)

    def _stateless(self) -> bool:
        profile = self.profile
        return profile is not None and profile.stateless

    def _transport_up(self) -> None:
        if self._stateless():
            self._listener.start()

    def _transport_replaced(self) -> None:
        self._lists.invalidate()  # the new transport may reach a changed server
        stateless = self._stateless()
        # The server forgot what the last one was told. Asked for ahead of the rebound
        # requests: a rebound read then follows the subscription (no update between the
        # two is missed) and a rebound call logs at the level the embedder chose.
        for item in self._session_state.restore():
            # 2026-07-28 has neither: the listen carries the subscriptions and each
            # request's _meta the level.
            if stateless and item.method in ("resources/subscribe", "logging/setLevel"):
                continue
            pending = self._request_now(item.method, item.params)
            if pending is None:
                break  # already gone: the next transport is asked
            self._spawn(self._restored, item, pending)
        if stateless:
            self._listener.start()
        else:
            self._listener.stop()

    async def _restored(self, item: Restore, pending: Pending) -> None:
        """Wait for one restore's answer; a failure is logged and reported, never raised."""
        try:
            await self._answer(pending)
        except ConnectionClosed as exc:
            # Its transport went too (Disconnected says so): the next one is asked again.
            self._log.debug("state not restored", method=item.method, reason=exc.reason)
        except McplHostError as exc:
            if isinstance(exc, RequestError):
                self._session_state.refused(item)  # the server said no: stop asking
            self._log.warning(
                "state not restored",
                method=item.method,
                params=self.redactor.log_json(item.params),
                error=self.redactor.log_value(str(exc)),
            )
            self._emit(RestoreFailed(item.method, dict(item.params), exc))
        else:
            self._log.debug("state restored", method=item.method)

    def _current_roots(self) -> tuple[Root, ...]:
        return self._roots or ()

    def _context(self, request: ServerRequest) -> HookContext:
        return HookContext(self.name, request.id, self.protocol_version)

    def _url_mode(self) -> bool:
        profile = self.profile
        return self._url_elicitation and profile is not None and profile.url_elicitation
