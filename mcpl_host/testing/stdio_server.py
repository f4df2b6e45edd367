"""The stdio mode's server process: ``python -m mcpl_host.testing.stdio_server SCRIPT JOURNAL``.

A small synchronous runner (stdlib and msgspec only, no trio): each process is one
connection. It plays the script from where the previous process left it, reading the
host on stdin and writing on stdout, and appends what it reads and does to the journal
(one flushed JSON line each) for the test process to read back. What carries over
from one process to the next (the step to resume at, the connections so far, pending
refusals) is kept in ``JOURNAL.state``.

Exit status: 0 after a clean end (``drop()``, the host closing), 1 for a refused
connection (``refuse_connections()``, or any attempt after the script has ended or
failed), 3 when the script failed (the failure is also written to stderr). ``crash()``
ends the process with SIGKILL.
"""

from __future__ import annotations

import enum
import os
import select
import signal
import sys
import time
from pathlib import Path
from typing import Final

import msgspec

from ..protocol.framing import LineDecoder
from . import _journal as journal
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
from .steps import ScriptData

__all__ = ["main"]

_STDIN: Final = 0
_STDOUT: Final = 1
_CHUNK: Final = 64 * 1024
_MAX_LINE: Final = 64 * 1024 * 1024
EXIT_REFUSED: Final = 1
EXIT_FAILED: Final = 3


class _State(msgspec.Struct, kw_only=True):
    """What one process leaves for the next."""

    resume: int = 0
    connections: int = 0
    refusals: int = 0
    done: bool = False
    failed: bool = False


class _Phase(enum.Enum):
    WAITING = "waiting"  # this process has not yet become the host's connection
    CONNECTED = "connected"
    OVER = "over"  # refused, or hung up: only steps needing no connection may run


class _Stop(Exception):
    """The next command needs a connection or time this process no longer has."""


class _Process:
    def __init__(
        self, script: ScriptData, state: _State, state_path: Path, log: journal.Journal
    ) -> None:
        self.script = script
        self.state = state
        self.state_path = state_path
        self.log = log
        self.phase = _Phase.WAITING
        self.status = 0
        self.crash = False
        self.how = "end"
        self.decoder = LineDecoder(_MAX_LINE)
        self.lines: list[bytes] = []
        self.eof = False
        self.player = Player(
            script, clock=time.monotonic, start=state.resume, connections=state.connections
        )

    def run(self) -> int:
        play = self.player.play()
        at = -1
        try:
            command = next(play)
            while True:
                if self.player.index != at and self.player.index < len(self.script.steps):
                    # So that the test process can name the step if this process dies.
                    at = self.player.index
                    self.log.write(journal.At(step=at))
                command = play.send(self.perform(command))
        except (StopIteration, _Stop):
            pass
        except ScriptFailed as failure:
            return self.fail(failure)
        self.state.resume = self.player.index
        self.state.connections = self.player.connection
        _save(self.state_path, self.state)
        self.log.write(
            journal.Ended(connection=self.state.connections, resume=self.player.index, how=self.how)
        )
        if self.crash:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.status

    def perform(self, command: Command) -> Outcome:
        if isinstance(command, Receive):
            return self.receive(command.deadline)
        if isinstance(command, Send):
            if command.unplanned is not None:
                self.log.write(
                    journal.Unplanned(
                        connection=self.player.connection,
                        line=command.unplanned,
                        answer=command.data.rstrip(b"\n").decode(),
                    )
                )
            return self.send(command.data)
        if isinstance(command, Accept):
            if self.phase is not _Phase.WAITING:
                raise _Stop
            self.phase = _Phase.CONNECTED
            number = self.player.connection + 1
            self.log.write(journal.Connected(connection=number, pid=os.getpid()))
            return True
        if isinstance(command, Sleep):
            if self.phase is _Phase.OVER:
                raise _Stop
            time.sleep(command.seconds)
            return None
        if isinstance(command, Hangup):
            # The host sees the end only when the process exits, after the state for the
            # next process is saved: the host may start that one as soon as it sees it.
            self.phase = _Phase.OVER
            self.how = "crash" if command.abrupt else "drop"
            self.crash = command.abrupt
            return None
        if isinstance(command, Refuse):
            self.state.refusals += command.count
            if self.phase is _Phase.WAITING:
                self.refuse_self()
            return None
        assert isinstance(command, Done)
        if not self.state.done:
            self.state.done = True
            self.log.write(journal.Done())
        if self.phase is _Phase.WAITING:
            self.refuse_self()
        return None

    def refuse_self(self) -> None:
        """This process is a connection attempt the script turns away."""
        if self.state.refusals > 0:
            self.state.refusals -= 1
        self.log.write(journal.Refused())
        self.phase = _Phase.OVER
        self.how = "refused"
        self.status = EXIT_REFUSED

    def receive(self, deadline: float) -> Outcome:
        while not self.lines:
            if self.eof:
                return EOF
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return TIMEOUT
            ready, _, _ = select.select([_STDIN], [], [], min(remaining, 3600.0))
            if not ready:
                continue
            try:
                chunk = os.read(_STDIN, _CHUNK)
            except OSError:
                chunk = b""
            if chunk:
                items = self.decoder.feed(chunk)
            else:
                self.eof = True
                items = self.decoder.close()
            self.lines += [item for item in items if isinstance(item, bytes)]
        line = self.lines.pop(0)
        self.log.line(self.player.connection, line)
        return line

    def send(self, data: bytes) -> Outcome:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(_STDOUT, view) :]
        except OSError:  # BrokenPipeError: the host has closed our stdout
            return CLOSED
        return None

    def fail(self, failure: ScriptFailed) -> int:
        self.state.failed = True
        _save(self.state_path, self.state)
        self.log.write(
            journal.Failed(
                detail=failure.detail,
                step_number=failure.step_number,
                step=failure.step,
                connection=failure.connection,
            )
        )
        sys.stderr.write(f"{failure}\n")
        sys.stderr.flush()
        return EXIT_FAILED


def _load(path: Path) -> _State:
    try:
        return msgspec.json.decode(path.read_bytes(), type=_State)
    except FileNotFoundError:
        return _State()


def _save(path: Path, state: _State) -> None:
    temporary = path.with_name(path.name + ".new")
    temporary.write_bytes(msgspec.json.encode(state))
    os.replace(temporary, path)


def main(argv: list[str] | None = None) -> int:
    """Run one connection's worth of the script; return the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        sys.stderr.write("usage: python -m mcpl_host.testing.stdio_server SCRIPT JOURNAL\n")
        return 2
    script = msgspec.json.decode(Path(args[0]).read_bytes(), type=ScriptData)
    journal_path = Path(args[1])
    state_path = journal_path.with_name(journal_path.name + ".state")
    state = _load(state_path)
    log = journal.Journal(journal_path)
    log.write(journal.Started(pid=os.getpid(), resume=state.resume))
    if state.failed or state.refusals > 0:
        # Turned away before reading anything: the host sees the process exit at once.
        state.refusals = max(state.refusals - 1, 0)
        _save(state_path, state)
        log.write(journal.Refused())
        log.write(journal.Ended(connection=state.connections, resume=state.resume, how="refused"))
        return EXIT_REFUSED
    return _Process(script, state, state_path, log).run()


if __name__ == "__main__":
    sys.exit(main())
