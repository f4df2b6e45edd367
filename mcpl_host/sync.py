"""mcpl_host from synchronous code: scripts, notebooks, threads.

    import sys

    from mcpl_host import StdioTarget, sync

    demo = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])
    with sync.Connection(demo) as conn:
        print(conn.call_tool("echo", {"text": "hi"}).text)

trio runs in a background thread (one per process, started by the first connection or
manager entered, stopped and joined when the last one leaves); every coroutine method
of the object (``call_tool``, ``list_tools``, ``request``...) becomes a plain blocking
call that returns what it returns under trio, with the same typed exceptions. Other
attributes are the object's own. What the object hands out is seen the same way: a
service it returns (``manager.connection(name)``; any object with coroutine methods)
has blocking methods too; data (statuses, listings, results) is as it is
(:class:`mcpl_host._portal.Face`). Calls may come from any thread but trio's own; once
the ``with`` block was left, a call on the object or on anything it handed out raises
:class:`~mcpl_host.ConnectionClosed` (``reason="closed"``) at once. Async generator
methods and async iteration are not offered (``NotImplementedError``).

Leaving the ``with`` block always shuts the servers down, on an exception and on
KeyboardInterrupt too: a Ctrl-C while a call blocks cancels that call in trio (the
server gets ``notifications/cancelled``), and a Ctrl-C during the shutdown does not cut
it short (it is raised once the servers are down).

Server-to-host hooks (``sampling``, ``elicitation``, raw ``handlers``, the hooks of
``mcpl``) are plain callables, or coroutine functions (each run with ``asyncio.run``);
either runs in a worker thread, so a slow hook holds up nothing else. An MCPL context's
``stream`` is a plain blocking callable there. ``on_event``, ``on_status`` and
``on_progress`` callbacks run in trio's thread and must be quick: plain reads
(``status()``, ``connection(name)``) work there, but a blocking call would wait for the
thread that runs it, so it raises ``RuntimeError`` at once; hand such work to a thread.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import Any, TypeVar

import outcome
import trio

from ._portal import Call, Face, Portal, adapt_hooks, adapt_target, with_context
from .client import connection as _connection
from .manager import _manager
from .mcpl.host import McplContext

__all__ = ["Connection", "ConnectionManager"]

T = TypeVar("T")

_LOCK = threading.Lock()
# How long an interrupted call waits for trio to take its cancellation (one scheduling
# round, normally).
_CANCEL_SETTLE = 5.0


class _TrioThread:
    """The process's trio run for this face, in a thread of its own."""

    current: _TrioThread | None = None

    def __init__(self) -> None:
        self.portal = Portal()
        self.users = 0
        ready = threading.Event()
        self.thread = threading.Thread(
            target=trio.run, args=(self.portal.serve, ready.set), name="mcpl_host trio", daemon=True
        )
        self.thread.start()
        ready.wait()

    @classmethod
    def acquire(cls) -> _TrioThread:
        with _LOCK:
            run = cls.current
            if run is None:
                run = cls.current = _TrioThread()
            run.users += 1
            return run

    def release(self) -> None:
        with _LOCK:
            self.users -= 1
            if self.users:
                return
            if _TrioThread.current is self:
                _TrioThread.current = None
        self.portal.stop()
        self.thread.join()


class _Result:
    """The outcome of a call submitted to the trio thread, for the thread waiting on it
    (a bare lock: a call's hand-over is the face's main cost)."""

    __slots__ = ("_unset", "outcome")

    def __init__(self) -> None:
        self.outcome: outcome.Outcome[Any] | None = None
        self._unset = threading.Lock()
        self._unset.acquire()

    def set(self, result: outcome.Outcome[Any]) -> None:
        """From trio's thread."""
        self.outcome = result
        self._unset.release()

    def wait(self, timeout: float | None = None) -> bool:
        """Until set (interruptible: Ctrl-C raises KeyboardInterrupt here)."""
        if not self._unset.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self._unset.release()
        return True


def _refuse_in_trio_thread(run: _TrioThread | None, what: str) -> None:
    if run is not None and threading.current_thread() is run.thread:
        raise RuntimeError(
            f"{what} of mcpl_host.sync was made in trio's thread (from an on_event,"
            " on_status or progress callback?), where it would wait for itself forever:"
            " make it from another thread"
        )


def _call(run: _TrioThread, fn: Callable[[], Awaitable[T]]) -> T:
    """``fn()`` in the trio run, waited for here; an interrupt while waiting (Ctrl-C)
    cancels it there. Raises ``RuntimeError`` in trio's own thread."""
    _refuse_in_trio_thread(run, "a blocking call")
    result = _Result()
    call = Call(run.portal, result.set)  # before the try: an interrupt may come anywhere in it
    try:
        run.portal.start(fn, call)
        result.wait()
    except BaseException:
        if result.outcome is None:
            call.cancel()
            # Until trio has taken the cancellation (and queued notifications/cancelled):
            # a shutdown right after must not overtake it.
            result.wait(_CANCEL_SETTLE)
        raise
    assert result.outcome is not None
    value: T = result.outcome.unwrap()
    return value


def _finish(run: _TrioThread, fn: Callable[[], Awaitable[None]]) -> None:
    """``fn()`` in the trio run, waited for to the end: an interrupt meanwhile is raised
    afterwards."""
    result = _Result()
    run.portal.submit(fn, result.set)
    interrupted: BaseException | None = None
    while True:
        try:
            result.wait()
        except (KeyboardInterrupt, SystemExit) as exc:
            if result.outcome is None:
                interrupted = exc
                continue
            raise
        break
    if interrupted is not None:
        raise interrupted
    assert result.outcome is not None
    result.outcome.unwrap()


class _SyncFace(Face):
    """What one entered object hands out, seen from synchronous code: blocking calls,
    from any thread but trio's own."""

    face_name = "sync"

    def __init__(self, service: Any, run: _TrioThread) -> None:
        super().__init__(service)
        self.run = run

    def check(self, target: Any) -> None:
        """Raise before a call that cannot work: ``ConnectionClosed`` once the object
        entered was left, ``RuntimeError`` in trio's own thread (a callback: the call
        would wait for the thread that is waiting for it)."""
        self.check_open(target)
        _refuse_in_trio_thread(self.run, f"a blocking call of a {type(target).__name__}")

    def call(self, target: Any, method: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        run, check, value, unwrapped = self.run, self.check, self.value, self.unwrapped

        def call(*args: Any, **kwargs: Any) -> Any:
            check(target)
            args = unwrapped(args, kwargs)
            return value(_call(run, functools.partial(method, *args, **kwargs)))

        return call


class _Service:
    """``with`` runs the object in the trio thread; the object it gives has blocking
    methods (typed ``Any``: every coroutine method returns its result directly), and so
    has everything it hands out (see :class:`mcpl_host._portal.Face`)."""

    def __init__(self, service: Any) -> None:
        self._service = service
        self._run: _TrioThread | None = None
        self._face: _SyncFace | None = None

    def __enter__(self) -> Any:
        if self._run is not None:
            raise RuntimeError("already entered")
        _refuse_in_trio_thread(_TrioThread.current, "entering a with block")
        run = _TrioThread.acquire()
        try:
            _call(run, functools.partial(run.portal.start_service, self._service))
        except BaseException:
            run.release()
            raise
        self._run = run
        self._face = _SyncFace(self._service, run)
        return self._face.facade(self._service)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Refused before anything changes: the servers would be closed by nobody.
        _refuse_in_trio_thread(self._run, "leaving a with block")
        run, self._run = self._run, None
        if run is None:
            return
        assert self._face is not None
        self._face.closed = True  # what it handed out stops here, not in a hang
        try:
            _finish(run, self._service.aclose)
        finally:
            run.release()


class Connection(_Service):
    """:class:`mcpl_host.Connection` for synchronous code: the same arguments, hooks as
    plain callables (see the module)."""

    def __init__(self, target: Any, **options: Any) -> None:
        super().__init__(
            _connection.Connection(
                adapt_target(target, threaded_hook), **adapt_hooks(options, threaded_hook)
            )
        )


class ConnectionManager(_Service):
    """:class:`mcpl_host.ConnectionManager` for synchronous code: the same arguments,
    hooks as plain callables (see the module)."""

    def __init__(self, servers: Mapping[str, Any] | str, **options: Any) -> None:
        super().__init__(_manager.ConnectionManager(servers, **adapt_hooks(options, threaded_hook)))


def threaded_hook(hook: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """A plain (or asyncio coroutine) hook as the trio coroutine function a connection
    awaits: run in a worker thread, trio going on meanwhile."""

    def in_thread(*args: Any) -> Any:
        value = hook(*args)
        if inspect.isawaitable(value):
            return asyncio.run(_awaited(value))
        return value

    async def in_trio(*args: Any) -> Any:
        args = with_context(args, _blocking_context)
        return await trio.to_thread.run_sync(in_thread, *args, abandon_on_cancel=True)

    return in_trio


async def _awaited(value: Awaitable[T]) -> T:
    return await value


def _blocking_context(context: McplContext) -> McplContext:
    send = context.stream
    assert send is not None
    token = trio.lowlevel.current_trio_token()

    def stream(chunk: Any) -> None:
        trio.from_thread.run(send, chunk, trio_token=token)

    return replace(context, stream=stream)  # type: ignore[arg-type]
