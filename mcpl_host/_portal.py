"""One trio run that serves calls from outside it.

The asyncio face runs trio as a guest on the asyncio loop, the sync face runs it in a
thread of its own; both submit work here. Every connection and manager of a face runs
in the portal's nursery, so one trio run serves them all. A submitted call runs in a
task of its own under a cancel scope that the other side can cancel from any thread;
its outcome is handed to a callback in trio, which the face turns into its own result.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import outcome
import trio

from .auth import Grant, MemoryTokenStore, OAuth, TokenStore
from .mcpl.host import Mcpl, McplContext
from .transports.http_target import HttpTarget

__all__ = ["Call", "Facade", "Portal", "adapt_hooks"]

T = TypeVar("T")


class Call:
    """A call submitted to the portal; :meth:`cancel` may be called from any thread."""

    __slots__ = ("_cancelled", "_portal", "_scope")

    def __init__(self, portal: Portal) -> None:
        self._portal = portal
        self._scope: trio.CancelScope | None = None
        self._cancelled = False

    def cancel(self) -> None:
        self._portal.run_soon(self._cancel_now)

    def _cancel_now(self) -> None:
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()


class Portal:
    """The trio side: :meth:`serve` is the run's main task, until :meth:`stop`."""

    def __init__(self) -> None:
        self.token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None

    async def serve(self, on_ready: Callable[[], None]) -> None:
        """Run until stopped; ``on_ready()`` is called (in trio) once calls can be
        submitted. Stopping cancels whatever still runs: the faces close their
        connections first."""
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.token = trio.lowlevel.current_trio_token()
            on_ready()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def stop(self) -> None:
        """End the run (from any thread)."""
        self.run_soon(self._stop_now)

    def _stop_now(self) -> None:
        if self._stop is not None:
            self._stop.set()

    def run_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` in the trio run, from any thread; nothing once it has ended."""
        token = self.token
        if token is None:
            return
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(fn, *args)

    def submit(
        self,
        fn: Callable[[], Awaitable[T]],
        on_done: Callable[[outcome.Outcome[T]], None],
    ) -> Call:
        """Run ``fn()`` in a task of its own; ``on_done(outcome)`` gets how it ended (a
        ``trio.Cancelled`` error when it was cancelled). From any thread."""
        call = Call(self)
        self.run_soon(self._start, fn, on_done, call)
        return call

    def submit_here(
        self,
        fn: Callable[[], Awaitable[T]],
        on_done: Callable[[outcome.Outcome[T]], None],
    ) -> Call:
        """:meth:`submit` from the run's own thread, outside trio's tasks (a host loop's
        callback when trio is its guest): the task is started now, with no hop through
        trio's entry queue."""
        call = Call(self)
        self._start(fn, on_done, call)
        return call

    def _start(
        self,
        fn: Callable[[], Awaitable[T]],
        on_done: Callable[[outcome.Outcome[T]], None],
        call: Call,
    ) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._run, fn, on_done, call)

    @staticmethod
    async def _run(
        fn: Callable[[], Awaitable[T]], on_done: Callable[[outcome.Outcome[T]], None], call: Call
    ) -> None:
        with trio.CancelScope() as scope:
            call._scope = scope
            if call._cancelled:
                scope.cancel()
            result = await outcome.acapture(fn)
        on_done(result)

    async def start_service(self, service: Any) -> None:
        """Start a Connection or ConnectionManager (``service.run``) in the portal's
        nursery; return once it is up (its first-connect error propagates)."""
        assert self._nursery is not None
        await self._nursery.start(service.run)


class Facade:
    """The object seen from a face: its coroutine methods made the face's calls by
    ``wrap`` (awaitable from asyncio, blocking...), every other attribute its own."""

    __slots__ = ("_target", "_wrap", "_wrapped")

    def __init__(
        self, target: Any, wrap: Callable[[Callable[..., Awaitable[Any]]], Callable[..., Any]]
    ) -> None:
        self._target = target
        self._wrap = wrap
        self._wrapped: dict[str, Callable[..., Any]] = {}  # made once per method

    def __getattr__(self, name: str) -> Any:
        wrapped = self._wrapped.get(name)
        if wrapped is not None:
            return wrapped
        value = getattr(self._target, name)
        if not inspect.iscoroutinefunction(value):
            return value
        wrapped = self._wrapped[name] = functools.wraps(value)(self._wrap(value))
        return wrapped

    def __repr__(self) -> str:
        return f"<{self._wrap.__module__} face of {self._target!r}>"


# -- hooks -------------------------------------------------------------------------------

HookAdapter = Callable[[Callable[..., Any]], Callable[..., Awaitable[Any]]]


def adapt_hooks(options: Mapping[str, Any], adapt: HookAdapter) -> dict[str, Any]:
    """``options`` of a Connection or ConnectionManager with every server-to-host hook
    (``sampling``, ``elicitation``, raw ``handlers``, ``mcpl`` hooks, the manager's
    ``auth``) made a trio coroutine function by ``adapt``."""
    adapted = dict(options)
    for name in ("sampling", "elicitation"):
        if adapted.get(name) is not None:
            adapted[name] = adapt(adapted[name])
    if adapted.get("handlers"):
        adapted["handlers"] = {m: adapt(h) for m, h in adapted["handlers"].items()}
    if isinstance(adapted.get("auth"), OAuth):
        adapted["auth"] = adapt_oauth(adapted["auth"], adapt)
    mcpl = adapted.get("mcpl")
    if isinstance(mcpl, Mcpl) and mcpl.hooks:
        adapted["mcpl"] = replace(mcpl, hooks={m: adapt(h) for m, h in mcpl.hooks.items()})
    return adapted


def adapt_target(target: Any, adapt: HookAdapter) -> Any:
    """``target`` with its authorization's hooks made trio coroutine functions by
    ``adapt`` (an HTTP target's ``auth``); any other target as it is."""
    if isinstance(target, HttpTarget) and target.auth is not None:
        return replace(target, auth=adapt_oauth(target.auth, adapt))
    return target


def adapt_oauth(oauth: OAuth, adapt: HookAdapter) -> OAuth:
    """A new OAuth whose hooks (the person's ``authorize``, a grant's assertion or ID
    token source, a store of the embedder's) are made trio coroutine functions by
    ``adapt``. It starts with nothing learnt; it shares the store."""
    changes: dict[str, Any] = {"grant": _adapted_grant(oauth.grant, adapt)}
    store = oauth.store
    if not isinstance(store, MemoryTokenStore) and not getattr(store, "trio_native", False):
        changes["store"] = _AdaptedStore(store, adapt)
    return oauth.replace(**changes)


# The callables a grant is given by the embedder (never one it makes itself, such as
# ClientCredentials' signer).
_GRANT_HOOKS = frozenset({"authorize", "assertion", "id_token"})


def _adapted_grant(grant: Grant, adapt: HookAdapter) -> Grant:
    """A copy of ``grant`` with the embedder's callables adapted."""
    found = {k: v for k, v in vars(grant).items() if k in _GRANT_HOOKS and v is not None}
    if not found:
        return grant
    copy = object.__new__(type(grant))
    copy.__dict__.update(vars(grant))
    copy.__dict__.update({k: adapt(v) for k, v in found.items()})
    return copy


class _AdaptedStore:
    """An embedder's token store, each method through the face's adapter."""

    def __init__(self, store: TokenStore, adapt: HookAdapter) -> None:
        self.get_client = adapt(store.get_client)
        self.set_client = adapt(store.set_client)
        self.get_tokens = adapt(store.get_tokens)
        self.set_tokens = adapt(store.set_tokens)


def with_context(
    args: tuple[Any, ...], convert: Callable[[McplContext], McplContext]
) -> tuple[Any, ...]:
    """``args`` with an MCPL context's stream sender converted for the hook's side."""
    return tuple(convert(a) if isinstance(a, McplContext) and a.stream else a for a in args)
