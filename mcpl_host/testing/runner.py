"""What every scripted server offers, whatever the mode it runs in.

A runner is an async context manager: entering starts the server in the background
and makes ``target`` usable with ``Connection``; ``record`` shows what the host sent;
``wait_done()`` waits until every step has run and raises :class:`ScriptFailed` when
one was not followed (``error`` holds that failure, or ``None``). A failure that
nobody looked at (through ``wait_done()`` or ``error``) is raised when the runner
exits, so a test cannot pass over a script its host did not follow.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, ClassVar, Self, TypeAlias

import trio

from ..transports import Transport
from ..transports.targets import StdioTarget, TcpTarget
from ._trio_driver import Listener, drive
from .errors import ScriptFailed
from .record import Record
from .script import Script
from .steps import ScriptData

__all__ = ["BackgroundServer", "ScriptedServer", "ServerTarget"]

ServerTarget: TypeAlias = StdioTarget | TcpTarget | Callable[[], Awaitable[Transport]]
"""What ``Connection`` is given to reach a scripted server."""


class ScriptedServer(abc.ABC):
    """A scripted server in one mode (``memory``, ``stdio`` or ``tcp``)."""

    mode: ClassVar[str]

    def __init__(self, script: Script | ScriptData) -> None:
        self.script: ScriptData = script.data() if isinstance(script, Script) else script
        self._target: ServerTarget | None = None
        self._reported = False

    @property
    def target(self) -> ServerTarget:
        """What to give ``Connection``. Raises ``RuntimeError`` before the runner is
        entered."""
        if self._target is None:
            raise RuntimeError(f"enter the {self.mode} server first: async with ... as server")
        return self._target

    @property
    @abc.abstractmethod
    def record(self) -> Record:
        """What the host has sent so far."""

    @property
    def error(self) -> ScriptFailed | None:
        """The script's failure, or ``None`` (so far)."""
        failure = self._failure()
        if failure is not None:
            self._reported = True
        return failure

    @abc.abstractmethod
    async def wait_done(self) -> None:
        """Wait until every step has run. Raises :class:`ScriptFailed` when one was not
        followed; never waits unbounded on the host (each step's timeout applies), but a
        ``serve_forever()`` step lasts until the host closes the connection."""

    @abc.abstractmethod
    def _failure(self) -> ScriptFailed | None: ...

    @abc.abstractmethod
    async def _start(self) -> None: ...

    @abc.abstractmethod
    async def _stop(self) -> None: ...

    async def __aenter__(self) -> Self:
        await self._start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        await self._stop()
        failure = self._failure()
        if failure is not None and not self._reported and exc_type is None:
            self._reported = True
            raise failure
        return False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {len(self.script.steps)} steps>"


class BackgroundServer(ScriptedServer):
    """A server run by a trio task of the test process (the memory and tcp modes)."""

    def __init__(self, script: Script | ScriptData) -> None:
        super().__init__(script)
        self._record = Record()
        self._settled = trio.Event()
        self._failed: ScriptFailed | None = None
        self._nursery_manager: Any = None
        self._nursery: trio.Nursery | None = None

    @property
    def record(self) -> Record:
        return self._record

    async def wait_done(self) -> None:
        await self._settled.wait()
        if self._failed is not None:
            self._reported = True
            raise self._failed

    def _failure(self) -> ScriptFailed | None:
        return self._failed

    @abc.abstractmethod
    async def _open_listener(self) -> Listener:
        """Open where connections arrive, and set ``_target``."""

    def _count_refused(self) -> None:
        self._record.refused += 1

    async def _start(self) -> None:
        listener = await self._open_listener()
        self._nursery_manager = trio.open_nursery()
        self._nursery = await self._nursery_manager.__aenter__()
        self._nursery.start_soon(self._serve, listener)

    async def _serve(self, listener: Listener) -> None:
        await drive(
            self.script,
            listener,
            self._record,
            on_done=self._settled.set,
            on_failed=self._on_failed,
        )

    def _on_failed(self, failure: ScriptFailed) -> None:
        self._failed = failure
        self._settled.set()

    async def _stop(self) -> None:
        if self._nursery is None:
            return
        self._nursery.cancel_scope.cancel()
        # The server task never raises, so the nursery has nothing to report; a body's
        # exception then leaves the runner as itself, not in an exception group.
        await self._nursery_manager.__aexit__(None, None, None)
        self._nursery = None
