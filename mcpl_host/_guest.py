"""trio as a guest of an asyncio loop, waiting for I/O on the loop itself.

trio's guest mode (``trio.lowlevel.start_guest_run``) runs trio's ticks as loop callbacks
but waits for I/O in a worker thread: every wake-up crosses threads (the worker's
``epoll_wait`` returns, ``call_soon_threadsafe`` writes the loop's self-pipe, the GIL
changes hands), and that crossing was most of the asyncio face's cost per call
(docs/performance.md). Where trio's I/O manager is itself a pollable descriptor (epoll on
Linux, kqueue on BSD and macOS) the loop can watch it instead: a ready descriptor or
trio's next deadline schedules the next tick, and no thread is involved.

The run is still started by ``start_guest_run`` (its set-up and checks stay trio's); the
first tick it hands the loop is taken over, and from then on :class:`_LoopDriver` drives
trio's guest state the way ``GuestState.guest_tick`` does, minus the thread. That state
is trio's, not public: where it is not what this module expects (another I/O manager, a
trio that renamed it, a loop without ``add_reader``) the run is left to trio's own ticks.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

import outcome
import sniffio
import trio

__all__ = ["Guest", "start_guest_run"]

# trio's ticks run back to back in one loop callback while trio has work: a tick per
# callback would cost the loop a poll of its own between each (a call run in a trio task
# is three or four ticks). Bounded, so that the loop's own callbacks and tasks still run.
_TICKS_PER_CALLBACK = 8


class Guest:
    """The started run, as its host sees it."""

    def __init__(self) -> None:
        self.driver: _LoopDriver | None = None

    def wake_soon(self) -> None:
        """Have trio's next tick run soon, from the loop's thread outside trio (before
        scheduling a trio task there): trio would otherwise wake itself through its
        wake-up socket, a write, a poll and a task to drain it."""
        if self.driver is not None:
            self.driver.wake_soon()


def start_guest_run(
    loop: asyncio.AbstractEventLoop,
    async_fn: Callable[..., Awaitable[object]],
    *args: object,
    done_callback: Callable[[outcome.Outcome[Any]], object],
) -> Guest:
    """``async_fn(*args)`` as trio's main task, a guest of ``loop`` (the running loop);
    ``done_callback(outcome)`` once it has ended."""
    guest = Guest()
    taken = False

    def first_tick(tick: Callable[[], object]) -> None:
        # Called by trio with its GuestState's bound guest_tick: once by start_guest_run,
        # and again after every tick of trio's own that needs no thread.
        nonlocal taken
        if not taken:
            taken = True
            driver = guest.driver = _LoopDriver.take(loop, getattr(tick, "__self__", None))
            if driver is not None:
                loop.call_soon(driver.tick)
                return
        loop.call_soon(tick)

    trio.lowlevel.start_guest_run(
        async_fn,
        *args,
        run_sync_soon_threadsafe=loop.call_soon_threadsafe,
        run_sync_soon_not_threadsafe=first_tick,
        done_callback=done_callback,
        # asyncio owns the wakeup fd (its signal handling); trio must not take it.
        host_uses_signal_set_wakeup_fd=True,
    )
    return guest


class _LoopDriver:
    """Runs trio's unrolled run loop on the asyncio loop: a tick, then either the next
    tick at once (runnable tasks, ready I/O) or a wait for trio's poller or deadline."""

    def __init__(self, loop: asyncio.AbstractEventLoop, state: Any, fd: int) -> None:
        self.loop = loop
        self.state = state
        self.runner = state.runner
        self.fd = fd  # a duplicate of trio's poller: trio closes its own when the run ends
        self.waiting = False
        self.timer: asyncio.TimerHandle | None = None

    @classmethod
    def take(cls, loop: asyncio.AbstractEventLoop, state: Any) -> _LoopDriver | None:
        """A driver for trio's guest ``state``, watching its poller on ``loop``; None
        when either is not what this module knows how to drive."""
        if not all(
            hasattr(state, name)
            for name in ("runner", "unrolled_run_gen", "unrolled_run_next_send", "done_callback")
        ):
            return None
        runner = state.runner
        manager = getattr(runner, "io_manager", None)
        poller = getattr(manager, "_epoll", None) or getattr(manager, "_kqueue", None)
        if poller is None or not hasattr(runner, "guest_tick_scheduled"):
            return None
        fd = os.dup(poller.fileno())
        driver = cls(loop, state, fd)
        try:
            loop.add_reader(fd, driver.wake)
        except (NotImplementedError, RuntimeError):  # a loop that cannot watch descriptors
            os.close(fd)
            return None
        return driver

    def tick(self) -> None:
        """trio's ticks while it has work (runnable tasks, ready I/O), up to
        :data:`_TICKS_PER_CALLBACK` in this callback; then the next soon, or a wait."""
        state, runner = self.state, self.runner
        for _ in range(_TICKS_PER_CALLBACK):
            previous, sniffio.thread_local.name = sniffio.thread_local.name, "trio"
            try:
                timeout = state.unrolled_run_next_send.send(state.unrolled_run_gen)
            except StopIteration:
                self.close()
                state.done_callback(runner.main_task_outcome)
                return
            except trio.TrioInternalError as exc:
                self.close()
                state.done_callback(outcome.Error(exc))
                return
            finally:
                sniffio.thread_local.name = previous
            if timeout <= 0:  # runnable tasks: the next tick at once, with what is ready
                state.unrolled_run_next_send = outcome.capture(runner.io_manager.get_events, 0)
                continue
            # Idle until the poller is ready (I/O, or a wake-up from another thread or
            # from a reschedule on this one) or the next deadline. Not polled first: the
            # loop polls next anyway, with the poller among its descriptors.
            runner.guest_tick_scheduled = False
            self.waiting = True
            when = self.loop.time() + timeout
            # A timer due sooner is kept (it wakes trio early, which then waits again):
            # most waits end in I/O, and a timer per wait is loop work.
            if self.timer is None or self.timer.when() > when:
                if self.timer is not None:
                    self.timer.cancel()
                self.timer = self.loop.call_at(when, self._timer_due)
            return
        self.loop.call_soon(self.tick)

    def wake(self) -> None:
        if self._stop_waiting():
            self._poll_and_tick()

    def _timer_due(self) -> None:
        self.timer = None
        self.wake()

    def wake_soon(self) -> None:
        if self._stop_waiting():
            self.loop.call_soon(self._poll_and_tick)

    def _stop_waiting(self) -> bool:
        if not self.waiting:
            return False  # a tick is scheduled already; it will take the events
        self.waiting = False
        self.runner.guest_tick_scheduled = True
        return True

    def _poll_and_tick(self) -> None:
        self.state.unrolled_run_next_send = outcome.capture(self.runner.io_manager.get_events, 0)
        self.tick()

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.loop.remove_reader(self.fd)
        os.close(self.fd)
