"""Runs the script player over trio streams: the memory and socket modes.

The player decides; this module only moves bytes and waits, with ``trio`` deadlines
only, so under trio's autojump clock every wait and timeout is instant. A listener
(one per mode) hands out the host's connections as :class:`Link` objects.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Final, Protocol

import trio

from ..protocol.framing import LineDecoder
from ._player import (
    CLOSED,
    EOF,
    TIMEOUT,
    Accept,
    Command,
    Done,
    Hangup,
    Outcome,
    Player,
    Receive,
    Refuse,
    Send,
    Sleep,
)
from .errors import ScriptFailed
from .record import Record
from .steps import ScriptData

__all__ = ["Link", "Listener", "drive"]

_CHUNK: Final = 64 * 1024
# What the host sends is small; a generous bound only guards the test process.
_MAX_LINE: Final = 64 * 1024 * 1024


class Link(Protocol):
    """One accepted connection, from the server's side."""

    @property
    def stream(self) -> trio.abc.Stream: ...

    async def hangup(self, *, abrupt: bool) -> None:
        """End the connection: cleanly (the host reads end of file) or abruptly."""
        ...


class Listener(Protocol):
    """Where the host's connection attempts arrive."""

    refusals: int
    """How many of the next attempts to turn away."""

    async def accept(self) -> Link:
        """The next attempt not turned away (turning away ``refusals`` first)."""
        ...

    async def stop(self) -> None:
        """Take no more connections: every later attempt fails."""
        ...


class _Connection:
    """The link in use, its number, and the host's lines read but not yet taken."""

    def __init__(self, link: Link, number: int) -> None:
        self.link = link
        self.number = number
        self.decoder = LineDecoder(_MAX_LINE)
        self.lines: deque[bytes] = deque()
        self.eof = False


async def drive(
    script: ScriptData,
    listener: Listener,
    record: Record,
    *,
    on_done: Callable[[], None],
    on_failed: Callable[[ScriptFailed], None],
) -> None:
    """Play ``script`` on the host's connections until it ends.

    When an expectation is not met, ``on_failed`` is told first, then the open
    connection is closed, so that the host sees the server go (rather than wait) only
    once the failure can be seen. Raises nothing else.
    """
    player = Player(script, clock=trio.current_time)
    play = player.play()
    current: _Connection | None = None

    async def perform(command: Command) -> Outcome:
        nonlocal current
        if isinstance(command, Receive):
            assert current is not None
            return await _receive(current, command.deadline, record)
        if isinstance(command, Send):
            assert current is not None
            if command.unplanned is not None:
                record.add_unplanned(current.number, command.unplanned, command.data)
            try:
                await current.link.stream.send_all(command.data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return CLOSED
            return None
        if isinstance(command, Accept):
            with trio.move_on_at(command.deadline):
                link = await listener.accept()
                record.connections += 1
                current = _Connection(link, record.connections)
                return True
            return TIMEOUT
        if isinstance(command, Hangup):
            assert current is not None
            await current.link.hangup(abrupt=command.abrupt)
            current = None
            return None
        if isinstance(command, Sleep):
            await trio.sleep(command.seconds)
            return None
        if isinstance(command, Refuse):
            listener.refusals += command.count
            return None
        assert isinstance(command, Done)
        on_done()
        await listener.stop()
        return None

    try:
        command = next(play)
        while True:
            command = play.send(await perform(command))
    except StopIteration:
        pass
    except ScriptFailed as failure:
        on_failed(failure)
    finally:
        with trio.CancelScope(shield=True):
            await listener.stop()
            if current is not None:
                await current.link.hangup(abrupt=False)


async def _receive(connection: _Connection, deadline: float, record: Record) -> Outcome:
    while not connection.lines:
        if connection.eof:
            return EOF
        with trio.move_on_at(deadline):
            try:
                chunk = await connection.link.stream.receive_some(_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                chunk = b""
            if chunk:
                items = connection.decoder.feed(chunk)
            else:
                connection.eof = True
                items = connection.decoder.close()
            connection.lines += [item for item in items if isinstance(item, bytes)]
            continue
        return TIMEOUT
    line = connection.lines.popleft()
    record.add_line(connection.number, line)
    return line
