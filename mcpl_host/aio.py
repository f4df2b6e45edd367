"""mcpl_host from asyncio: the same Connection and ConnectionManager, awaitable.

    import asyncio
    import sys

    from mcpl_host import StdioTarget, aio

    demo = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])

    async def main():
        async with aio.Connection(demo) as conn:
            print((await conn.call_tool("echo", {"text": "hi"})).text)

    asyncio.run(main())

trio runs as a guest on the running asyncio loop, on its thread, its I/O polled by the
loop itself (``mcpl_host._guest``): one trio run per loop, started by the first
connection or manager entered and ended when the last one leaves, serves them all.
Every coroutine method of the object (``call_tool``, ``list_tools``, ``request``,
``notify``, ``set_roots``...) is awaitable from asyncio and returns what it returns
under trio; every other attribute is the object's own. Errors are the same typed
exceptions. What the object hands out is seen from asyncio too: a service it returns
(``manager.connection(name)``; any object with coroutine methods) is awaitable the same
way, in the same trio run; data (statuses, listings, results) is as it is
(:class:`mcpl_host._portal.Face`). A connection's requests
(``Connection.HOST_LOOP_METHODS``) run in the awaiting asyncio task itself, parked on
an asyncio future the reader settles (``mcpl_host.driver.foreign``); the other methods
run in a trio task. Cancelling the asyncio task that awaits a call cancels the call,
which sends ``notifications/cancelled`` as a cancelled trio caller would.

Once the ``async with`` was left, a call on the object or on anything it handed out
raises :class:`~mcpl_host.ConnectionClosed` (``reason="closed"``); awaited from
another loop or thread, or outside asyncio, ``RuntimeError``: trio is the guest of the
loop it was entered on. Async generator methods, ``async for`` and ``async with`` on
what it hands out are not offered (``NotImplementedError``).

Server-to-host hooks (``sampling``, ``elicitation``, raw ``handlers``, the hooks of
``mcpl``) may be asyncio coroutine functions, run as asyncio tasks on the loop, or plain
callables, called on the loop's thread; a hook cancelled in trio (the server cancelled
the request, the transport ended) has its asyncio task cancelled. An MCPL context's
``stream`` is awaitable from asyncio. ``on_event``, ``on_status`` and ``on_progress``
callbacks run on the loop's thread, inside trio's tick: they cannot await, but may
start asyncio tasks that use the face.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import Any, Generic, TypeVar, cast

import outcome
import trio

from ._guest import start_guest_run
from ._portal import Face, Portal, adapt_hooks, adapt_target, with_context
from .client import connection as _connection
from .driver.foreign import HOST, Parked, in_trio_task
from .driver.lifetime import OwnsNursery
from .manager import _manager
from .mcpl.host import McplContext

__all__ = ["Connection", "ConnectionManager"]

T = TypeVar("T")
S = TypeVar("S", bound=OwnsNursery)


class _GuestRun:
    """The trio run hosted by one asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.portal = Portal()
        self.users = 0
        self.stopping = False
        self.ready: asyncio.Future[None] = loop.create_future()
        self.done: asyncio.Future[None] = loop.create_future()
        self.host = _LoopHost(self)
        self.guest = start_guest_run(
            loop, self.portal.serve, self._ready, done_callback=self._finished
        )

    def _ready(self) -> None:
        if not self.ready.done():
            self.ready.set_result(None)

    def _finished(self, result: outcome.Outcome[None]) -> None:
        if _RUNS.get(self.loop) is self:
            del _RUNS[self.loop]
        if not self.ready.done():
            self.ready.set_exception(RuntimeError("the trio run ended before it started"))
        if not self.done.done():
            self.done.set_result(None)
        if isinstance(result, outcome.Error):  # pragma: no cover - serve() raises nothing
            raise result.error


_RUNS: dict[asyncio.AbstractEventLoop, _GuestRun] = {}


async def _acquire() -> _GuestRun:
    loop = asyncio.get_running_loop()
    run = _RUNS.get(loop)
    while run is not None and run.stopping:
        await asyncio.shield(run.done)  # one trio run at a time on a loop
        run = _RUNS.get(loop)
    if run is None:
        run = _RUNS[loop] = _GuestRun(loop)
    run.users += 1
    try:
        await asyncio.shield(run.ready)
    except BaseException:
        await _release(run)
        raise
    return run


async def _release(run: _GuestRun) -> None:
    run.users -= 1
    if run.users == 0:
        run.stopping = True
        run.portal.stop()
        await _uncancellable(run.done)


async def _in_trio(run: _GuestRun, fn: Callable[[], Awaitable[T]]) -> T:
    """``await fn()`` in the trio run; cancelling the awaiting task cancels it there."""
    future: asyncio.Future[T] = run.loop.create_future()
    ended: asyncio.Future[None] = run.loop.create_future()

    def done(result: outcome.Outcome[T]) -> None:
        ended.set_result(None)
        if future.done():
            return
        if isinstance(result, outcome.Error):
            if isinstance(result.error, trio.Cancelled):
                future.cancel()
            else:
                future.set_exception(result.error)
        else:
            future.set_result(result.unwrap())

    run.guest.wake_soon()
    call = run.portal.submit_here(fn, done)
    try:
        return await future
    except asyncio.CancelledError:
        call.cancel()
        # Until trio has taken the cancellation (and queued notifications/cancelled):
        # leaving an ``async with`` right after must not overtake it.
        await _uncancellable(ended)
        raise


class _LoopHost:
    """How an asyncio task of the loop awaits a request itself (driver/foreign.py): it
    parks on a future of the loop, which trio's reader settles in its tick."""

    def __init__(self, run: _GuestRun) -> None:
        self._run = run

    async def park(self, pending: Parked) -> None:
        if pending.finished:
            return
        future: asyncio.Future[None] = self._run.loop.create_future()
        pending.waiter = functools.partial(_wake, future)
        try:
            await future
        except asyncio.CancelledError:
            if not pending.finished:
                raise
            # The answer came in the loop iteration the task was cancelled in. As for a
            # trio caller, the call takes its answer and the cancellation comes at the
            # task's next wait (where a task the server made for the call is then
            # cancelled too): the cancel is given back to the task, its count unchanged.
            task = asyncio.current_task()
            assert task is not None
            task.uncancel()
            task.cancel()
        finally:
            pending.waiter = None

    async def run(self, fn: Callable[[], Awaitable[T]]) -> T:
        return await _in_trio(self._run, fn)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():  # not if the awaiting task was cancelled meanwhile
        future.set_result(None)


async def _uncancellable(awaitable: Awaitable[T]) -> T:
    """Wait for ``awaitable`` to the end even if this task is cancelled meanwhile (the
    cancellation is raised afterwards)."""
    task = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
            continue
        if cancelled:
            raise asyncio.CancelledError
        return result


class _AioFace(Face):
    """What one entered object hands out, seen from asyncio: awaitable on the loop the
    object was entered on."""

    face_name = "asyncio"

    def __init__(self, service: Any, run: _GuestRun) -> None:
        super().__init__(service)
        self.run = run

    def check(self, target: Any) -> None:
        """Raise before a call that cannot work: ``ConnectionClosed`` once the object
        entered was left, ``RuntimeError`` outside its loop (trio is that loop's guest:
        another loop or thread cannot reach it) or in one of trio's own tasks."""
        self.check_open(target)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not self.run.loop or in_trio_task():
            where = (
                "outside any asyncio loop"
                if loop is None
                else "on another asyncio loop"
                if loop is not self.run.loop
                else "in a trio task (use the trio object there)"
            )
            raise RuntimeError(
                f"a {type(target).__name__} of mcpl_host.aio was awaited {where}: await it"
                " on the loop it was entered on"
            )

    def call(self, target: Any, method: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        run, check, value, unwrapped = self.run, self.check, self.value, self.unwrapped
        direct: frozenset[str] = getattr(target, "HOST_LOOP_METHODS", frozenset())
        if method.__name__ in direct:

            async def awaited_here(*args: Any, **kwargs: Any) -> Any:
                check(target)
                args = unwrapped(args, kwargs)
                token = HOST.set(run.host)
                try:
                    return value(await method(*args, **kwargs))
                finally:
                    HOST.reset(token)

            return awaited_here

        async def call(*args: Any, **kwargs: Any) -> Any:
            check(target)
            args = unwrapped(args, kwargs)
            return value(await _in_trio(run, functools.partial(method, *args, **kwargs)))

        return call


class _Service(Generic[S]):
    """``async with`` runs the object in the shared trio run; the object it gives is
    awaitable from asyncio (typed as the object: its coroutine methods' results are the
    same), and so is everything it hands out (see :class:`mcpl_host._portal.Face`)."""

    def __init__(self, service: S) -> None:
        self._service = service
        self._run: _GuestRun | None = None
        self._face: _AioFace | None = None

    async def __aenter__(self) -> S:
        if self._run is not None:
            raise RuntimeError("already entered")
        run = await _acquire()
        try:
            await _in_trio(run, functools.partial(run.portal.start_service, self._service))
        except BaseException:
            await _release(run)
            raise
        self._run = run
        self._face = _AioFace(self._service, run)
        return cast(S, self._face.facade(self._service))

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        run, self._run = self._run, None
        if run is None:
            return
        assert self._face is not None
        self._face.closed = True  # what it handed out stops here, not in trio's internals
        try:
            await _uncancellable(_in_trio(run, self._service.aclose))
        finally:
            await _release(run)


class Connection(_Service[_connection.Connection]):
    """:class:`mcpl_host.Connection` for asyncio: the same arguments, hooks written for
    asyncio (see the module)."""

    def __init__(self, target: Any, **options: Any) -> None:
        super().__init__(
            _connection.Connection(
                adapt_target(target, asyncio_hook), **adapt_hooks(options, asyncio_hook)
            )
        )


class ConnectionManager(_Service[_manager.ConnectionManager]):
    """:class:`mcpl_host.ConnectionManager` for asyncio: the same arguments, hooks
    written for asyncio (see the module)."""

    def __init__(self, servers: Mapping[str, Any] | str, **options: Any) -> None:
        super().__init__(_manager.ConnectionManager(servers, **adapt_hooks(options, asyncio_hook)))


def asyncio_hook(hook: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """A hook written for asyncio (or a plain callable) as the trio coroutine function a
    connection awaits. trio is the loop's guest, so this runs on the loop's thread."""

    async def in_trio(*args: Any) -> Any:
        value = hook(*with_context(args, _asyncio_context))
        if not inspect.isawaitable(value):
            return value
        task = asyncio.ensure_future(value)
        finished = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def wake(_: object) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(finished.set)

        task.add_done_callback(wake)
        try:
            await finished.wait()
        except BaseException:
            task.cancel()  # the server cancelled, or the transport ended
            raise
        return task.result()

    return in_trio


def _asyncio_context(context: McplContext) -> McplContext:
    send = context.stream
    assert send is not None
    run = _RUNS[asyncio.get_running_loop()]

    async def stream(chunk: Any) -> None:
        await _in_trio(run, functools.partial(send, chunk))

    return replace(context, stream=stream)
