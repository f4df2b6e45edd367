"""One trio run that serves calls from outside it.

The asyncio face runs trio as a guest on the asyncio loop, the sync face runs it in a
thread of its own; both submit work here. Every connection and manager of a face runs
in the portal's nursery, so one trio run serves them all. A submitted call runs in a
task of its own under a cancel scope that the other side can cancel from any thread;
its outcome is handed to a callback in trio, which the face turns into its own result.
What an entered object hands out is seen through the same face (:class:`Face`).
"""

from __future__ import annotations

import abc
import functools
import inspect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, ClassVar, Final, TypeVar

import outcome
import trio

from .auth import Grant, MemoryTokenStore, OAuth, TokenStore
from .mcpl.host import Mcpl, McplContext
from .protocol.errors import ConnectionClosed
from .telemetry import attach_context, capture_context, detach_context
from .transports.http_target import HttpTarget

__all__ = ["Call", "Facade", "Face", "Portal", "adapt_hooks"]

T = TypeVar("T")


class Call:
    """A call for the portal: made first, then :meth:`Portal.start`-ed; :meth:`cancel`
    may be called from any thread at any moment after it is made.

    Made before it is started so that a face whose thread can be interrupted anywhere
    (a Ctrl-C lands between any two bytecodes) always holds something to cancel: an
    interrupt just after trio queued the call must still cancel it there.

    Made in the caller's thread or task, it also takes the caller's OpenTelemetry
    context along: the trio task that runs the call does not see the caller's context
    variables, and a request made there must still be a child of the caller's span.
    """

    __slots__ = ("_cancelled", "_context", "_on_done", "_portal", "_scope", "_started")

    def __init__(self, portal: Portal, on_done: Callable[[outcome.Outcome[Any]], None]) -> None:
        self._portal = portal
        self._on_done = on_done
        self._context = capture_context()  # None (a dict lookup) without OpenTelemetry
        self._scope: trio.CancelScope | None = None
        self._cancelled = False
        self._started = False  # in trio's hands: it calls on_done

    def cancel(self) -> None:
        self._portal.run_soon(self._cancel_now)

    def _cancel_now(self) -> None:
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()
        elif not self._started:
            # Never queued (trio takes its jobs in order, so a start queued before this
            # cancel has run already): it never runs, and ends here.
            self._started = True
            self._on_done(outcome.Error(_run_ended()))


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

    def run_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        """``fn(*args)`` in the trio run, from any thread; false (and nothing done) once
        the run has ended."""
        token = self.token
        if token is None:
            return False
        try:
            token.run_sync_soon(fn, *args)
        except trio.RunFinishedError:
            return False
        return True

    def submit(
        self,
        fn: Callable[[], Awaitable[T]],
        on_done: Callable[[outcome.Outcome[T]], None],
    ) -> Call:
        """Run ``fn()`` in a task of its own; ``on_done(outcome)`` gets how it ended (a
        ``trio.Cancelled`` error when it was cancelled; :class:`ConnectionClosed` when
        the run has ended or is ending: from this thread then). From any thread."""
        call = Call(self, on_done)
        self.start(fn, call)
        return call

    def start(self, fn: Callable[[], Awaitable[Any]], call: Call) -> None:
        """:meth:`submit` with the call made beforehand (see :class:`Call`)."""
        if not self.run_soon(self._start, fn, call):
            call._started = True
            call._on_done(outcome.Error(_run_ended()))

    def submit_here(
        self,
        fn: Callable[[], Awaitable[T]],
        on_done: Callable[[outcome.Outcome[T]], None],
    ) -> Call:
        """:meth:`submit` from the run's own thread, outside trio's tasks (a host loop's
        callback when trio is its guest): the task is started now, with no hop through
        trio's entry queue."""
        call = Call(self, on_done)
        self._start(fn, call)
        return call

    def _start(self, fn: Callable[[], Awaitable[Any]], call: Call) -> None:
        assert self._nursery is not None
        assert self._stop is not None
        if call._started:  # cancelled before it was queued
            return
        call._started = True
        if self._stop.is_set():  # the run is ending: the task would only be cancelled
            call._on_done(outcome.Error(_run_ended()))
            return
        self._nursery.start_soon(self._run, fn, call)

    @staticmethod
    async def _run(fn: Callable[[], Awaitable[Any]], call: Call) -> None:
        with trio.CancelScope() as scope:
            call._scope = scope
            if call._cancelled:
                scope.cancel()
            if call._context is None:
                result = await outcome.acapture(fn)
            else:
                token = attach_context(call._context)
                try:
                    result = await outcome.acapture(fn)
                finally:
                    detach_context(token)
        if (
            isinstance(result, outcome.Error)
            and isinstance(result.error, trio.Cancelled)
            and not call._cancelled
        ):
            # Not the caller's cancellation but the run's end: a face's caller must see
            # a typed error, not trio's Cancelled.
            result = outcome.Error(_run_ended())
        call._on_done(result)

    async def start_service(self, service: Any) -> None:
        """Start a Connection or ConnectionManager (``service.run``) in the portal's
        nursery; return once it is up (its first-connect error propagates)."""
        assert self._nursery is not None
        await self._nursery.start(service.run)


class Face(abc.ABC):
    """One entered Connection or ConnectionManager as a face shows it, and everything it
    hands out: the same rule for the object entered, for a connection the manager gives,
    for whatever a method of either returns.

    A value is a *service* when its class has a public coroutine or async generator
    method, or is an async iterator or context manager (a Connection, a manager): it is
    handed out as a :class:`Facade` of this face, its coroutine methods the face's calls
    (:meth:`call`). Anything else is data (statuses, listings, results, events) and is
    handed out as it is; so are the items of a list, tuple or dict unless one of them
    is a service. Once the object entered was left (:attr:`closed`), every face call on
    it or on anything it handed out raises :class:`~mcpl_host.ConnectionClosed`.
    """

    face_name: ClassVar[str]

    def __init__(self, service: Any) -> None:
        self.label = type(service).__name__
        self.closed = False
        # By id: a Facade holds its target, so while it is kept the id is the target's.
        # The last few handed out are kept (a caller writing
        # ``manager.connection(name).call_tool(...)`` each time must not pay for a new
        # Facade and its wrapped methods per call); older ones live as long as held.
        self._recent: OrderedDict[int, Facade] = OrderedDict()
        self._lock = threading.Lock()
        self._facades: weakref.WeakValueDictionary[int, Facade] = weakref.WeakValueDictionary()

    @abc.abstractmethod
    def call(self, target: Any, method: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        """The face's own call of ``target``'s coroutine method ``method``; it passes
        what the method returns through :meth:`value`."""

    def facade(self, target: Any) -> Facade:
        """``target`` seen from this face: the same Facade every time it is handed out
        (while one is held, or it is among the last few handed out)."""
        key = id(target)
        with self._lock:  # the sync face hands out from its callers' threads
            found = self._recent.get(key)
            if found is not None:
                self._recent.move_to_end(key)
                return found
            found = self._facades.get(key)
            if found is None:
                found = self._facades[key] = Facade(target, self)
            self._recent[key] = found
            if len(self._recent) > _RECENT_FACADES:
                self._recent.popitem(last=False)
        return found

    @staticmethod
    def unwrapped(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """``args`` with a Facade given back as its trio-side object (``kwargs`` is
        changed in place): a method of the trio side gets what it handed out."""
        for key, item in kwargs.items():
            if type(item) is Facade:
                kwargs[key] = item._target
        if any(type(item) is Facade for item in args):
            return tuple(item._target if type(item) is Facade else item for item in args)
        return args

    def value(self, value: Any) -> Any:
        """``value`` as this face hands it out (see the class)."""
        kind = type(value)
        if kind in _LEAVES:
            return value
        if kind is list or kind is tuple:
            if any(_is_service(type(item)) for item in value):
                return kind(self.value(item) for item in value)
            return value
        if kind is dict:
            if any(_is_service(type(item)) for item in value.values()):
                return {key: self.value(item) for key, item in value.items()}
            return value
        if _is_service(kind):
            return self.facade(value)
        return value

    def check_open(self, target: Any) -> None:
        """Raise :class:`~mcpl_host.ConnectionClosed` once the object entered was left."""
        if self.closed:
            name = getattr(target, "name", None)
            raise ConnectionClosed(
                f"the {self.label} was closed: its {self.face_name} face is gone",
                reason="closed",
                server=name if isinstance(name, str) else None,
            )

    def not_offered(self, target: Any, what: str) -> NotImplementedError:
        return NotImplementedError(
            f"{what} of a {type(target).__name__} is not offered on the {self.face_name} face"
        )


_RECENT_FACADES: Final = 32
_LEAVES: Final = frozenset({type(None), bool, int, float, str, bytes})
_ASYNC_PROTOCOLS: Final = ("__aenter__", "__aiter__", "__anext__")


_SERVICE_TYPES: dict[type, bool] = {}  # a face call's result is checked: once per type


def _is_service(kind: type) -> bool:
    """Whether values of ``kind`` are trio-side services a face must wrap (see Face)."""
    known = _SERVICE_TYPES.get(kind)
    if known is None:
        known = _SERVICE_TYPES[kind] = not issubclass(kind, (BaseException, type, Facade)) and (
            any(hasattr(kind, name) for name in _ASYNC_PROTOCOLS)
            or any(
                inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member)
                for name, member in inspect.getmembers_static(kind)
                if not name.startswith("_")
            )
        )
    return known


def _run_ended() -> ConnectionClosed:
    return ConnectionClosed("the face's trio run has ended: everything in it is closed")


class Facade:
    """A trio-side object seen from a face: its coroutine methods are the face's calls
    (awaitable from asyncio, blocking...), its other methods and attributes its own,
    with what they give passed through :meth:`Face.value` (a connection the manager
    hands out is a Facade too). Async generator methods, ``async with`` and ``async
    for`` are not offered: they raise ``NotImplementedError``."""

    __slots__ = ("__weakref__", "_face", "_target", "_wrapped")

    def __init__(self, target: Any, face: Face) -> None:
        self._target = target
        self._face = face
        self._wrapped: dict[str, Callable[..., Any]] = {}  # made once per method

    def __getattr__(self, name: str) -> Any:
        wrapped = self._wrapped.get(name)
        if wrapped is not None:
            return wrapped
        value = getattr(self._target, name)
        face = self._face
        if inspect.iscoroutinefunction(value):
            wrapped = face.call(self._target, value)
        elif inspect.isasyncgenfunction(value):
            wrapped = _refuse(face, self._target, f"the async generator {name}()")
        elif inspect.ismethod(value) or inspect.isfunction(value):
            wrapped = _passing(value, face)
        else:  # data, or a property's value: read afresh every time
            return face.value(value)
        wrapped = self._wrapped[name] = functools.wraps(value)(wrapped)
        return wrapped

    def __aiter__(self) -> Any:
        raise self._face.not_offered(self._target, "async iteration")

    async def __aenter__(self) -> Any:
        raise self._face.not_offered(self._target, "async with")

    async def __aexit__(self, *exc_info: object) -> None:  # pragma: no cover - never entered
        return None

    def __repr__(self) -> str:
        return f"<{self._face.face_name} face of {self._target!r}>"


def _passing(method: Callable[..., Any], face: Face) -> Callable[..., Any]:
    """A plain method of a service, called on the spot, what it returns through the
    face (``manager.connection(name)`` gives the face's connection)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return face.value(method(*face.unwrapped(args, kwargs), **kwargs))

    return call


def _refuse(face: Face, target: Any, what: str) -> Callable[..., Any]:
    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise face.not_offered(target, what)

    return refused


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
