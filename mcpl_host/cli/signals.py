"""The signals that end the command: SIGINT (Ctrl-C), SIGTERM and SIGHUP.

The first one cancels the work: each server is closed as on any other end (a stdio
server's stdin closed, then SIGTERM and SIGKILL to its process group after their
graces, everything reaped), the report says ``cancelled`` and the command exits 128+N.
A second one, while that shutdown runs, kills every stdio server's process group at
once (:func:`~mcpl_host.transports.stdio.kill_stdio_servers`); the report and the exit
status stay the first signal's.

Where a signal lands decides how it is taken (Python runs a handler between two
bytecodes of the main thread, wherever that is):

- before trio runs (the command line, the config file, a prompt): the handler raises
  :class:`Signalled`; nothing has been started, so nothing needs shutting down.
- while trio runs: the handler only notes it (an exception raised inside trio's own
  machinery would break the run); :func:`trio.open_signal_receiver` hands it to a task
  that cancels the work's scopes (:meth:`Interrupts.cancellable`), so the servers are
  shut down by the code that opened them, in order.
- once the run is over (the report made, ``--output`` saving what it holds): noted only.
- while the report is written: the first one that comes then is noted and the report is
  written whole, its exit status kept (the work was done); a second one then stops the
  writing, for a reader that stopped reading. Signals of the run do not count here: two
  quick Ctrl-Cs during a call never cost the report.

A signal ignored when the command started (``nohup``, a background job of a
non-interactive shell) stays ignored.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import Any, Final, Literal, TypeVar

import trio

from ..transports.stdio import kill_stdio_servers
from .failure import cancelled_error, signal_status

__all__ = ["HANDLED", "Interrupts", "Signalled"]

# By name: a platform without SIGHUP (Windows) handles the other two.
HANDLED: Final[tuple[signal.Signals, ...]] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

_T = TypeVar("_T")
_Phase = Literal["start", "trio", "made", "write"]


class Signalled(BaseException):
    """A handled signal where there is no trio run to tell (before it, or a second one
    while the report is written). Not an Exception, as KeyboardInterrupt is not: no
    ``except Exception`` on its way may take it for a failure of its own."""


class Interrupts:
    """The signals one command received, and the work the first one cancels.

    ``first`` is the signal that ended the command (None while none did); ``forced``
    whether a second one killed stdio servers at once (it has nothing to kill once they
    are gone, or when there are none: HTTP and socket servers close within bounds).
    """

    def __init__(self) -> None:
        self.first: signal.Signals | None = None
        self.forced = False
        self.phase: _Phase = "start"
        self._count = 0
        self._written = 0  # signals while the report is written
        self._handled: tuple[signal.Signals, ...] = ()
        self._scopes: set[trio.CancelScope] = set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """This object's handler for each signal of :data:`HANDLED` not ignored, the
        previous handlers put back after. Only the main thread can have handlers: in
        another, nothing is installed and the signals keep their effect."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        saved: dict[signal.Signals, Any] = {}
        for sig in HANDLED:
            previous = signal.getsignal(sig)
            if previous is signal.SIG_IGN:
                continue
            saved[sig] = signal.SIG_DFL if previous is None else previous
            signal.signal(sig, self._on_signal)
        self._handled = tuple(saved)
        try:
            yield
        finally:
            for sig, previous in saved.items():
                signal.signal(sig, previous)

    def status(self) -> int:
        """The exit status the first signal means (128+N). Only once there was one."""
        assert self.first is not None
        return signal_status(self.first.name)

    def error(self) -> dict[str, Any]:
        """The report's ``error`` for the first signal. Only once there was one."""
        assert self.first is not None
        return cancelled_error(self.first, forced=self.forced)

    def writing(self) -> None:
        """The report is made: the command's first signal now lets it be written whole;
        its second stops the writing (a reader that stopped reading is not waited on)."""
        self.phase = "write"
        self._written = 0

    def run(self, fn: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """``trio.run(fn, *args)`` with the signals handed to a task of the run."""
        self.phase = "trio"
        try:
            return trio.run(self._guarded, fn, *args)
        finally:
            self.phase = "made"  # what the run returns is the report

    @contextlib.contextmanager
    def cancellable(self) -> Iterator[trio.CancelScope]:
        """A cancel scope the first signal cancels (at once when it already came)."""
        with trio.CancelScope() as scope:
            if self.first is not None:
                scope.cancel()
            self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)

    async def _guarded(self, fn: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        async with trio.open_nursery() as nursery:
            await nursery.start(self._watch)
            try:
                return await fn(*args)
            finally:
                nursery.cancel_scope.cancel()

    async def _watch(self, *, task_status: trio.TaskStatus[None]) -> None:
        if not self._handled:
            task_status.started()
            return
        with trio.open_signal_receiver(*self._handled) as received:
            task_status.started()
            # What the handler noted before this task listened.
            if self._count:
                self._cancel()
            if self._count > 1:
                self._force()
            async for signum in received:
                self._note(signal.Signals(signum))
                if self._count == 1:
                    self._cancel()
                else:
                    self._force()

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._note(signal.Signals(signum))
        if self.phase == "write":
            self._written += 1
        if self.phase == "start" or self._written > 1:
            raise Signalled(self.first)

    def _note(self, sig: signal.Signals) -> None:
        self._count += 1
        if self.first is None:
            self.first = sig

    def _cancel(self) -> None:
        for scope in list(self._scopes):
            scope.cancel()

    def _force(self) -> None:
        if kill_stdio_servers():
            self.forced = True
