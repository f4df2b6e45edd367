"""The stdio mode: the scripted server is a real subprocess, one per connection.

``target`` is a :class:`~mcpl_host.StdioTarget` running
``python -m mcpl_host.testing.stdio_server SCRIPT JOURNAL`` (see that module); the
host starts, talks to and reaps each process as it would any server. The processes
journal what they read and do; this side reads the journal back. Real processes run
in real time: use this mode without trio's autojump clock.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

import msgspec
import trio

import mcpl_host

from ..transports.targets import StdioTarget
from . import _journal as journal
from .errors import ScriptFailed
from .record import Record
from .runner import ScriptedServer
from .script import Script
from .steps import ScriptData, describe

__all__ = ["StdioServer"]

_POLL: Final = 0.01
# The child must import this very copy of mcpl_host: `python -m` looks in its working
# directory first.
_PACKAGE_ROOT: Final = Path(mcpl_host.__file__).resolve().parent.parent


class StdioServer(ScriptedServer):
    """The script run by subprocesses; ``target`` starts one per connection.

    Its files (``script.json``, the journal ``record.jsonl`` and its ``.state``) go in
    ``workdir`` when given, and are kept; otherwise in a temporary directory removed
    on exit, after the record has been read one last time.
    """

    mode = "stdio"

    def __init__(
        self, script: Script | ScriptData, *, workdir: str | os.PathLike[str] | None = None
    ) -> None:
        super().__init__(script)
        self._workdir = None if workdir is None else Path(workdir)
        self._temporary: Path | None = None
        self._journal_path: Path | None = None
        self._final: list[journal.Entry] | None = None

    @property
    def record(self) -> Record:
        return journal.record_of(self._entries())

    async def wait_done(self) -> None:
        """Wait until every step has run. Raises :class:`ScriptFailed` for a step not
        followed, a server process that vanished mid-script (killed from outside), or
        no process started within the waiting step's timeout."""
        quiet_since = time.monotonic()
        seen = -1
        while True:
            entries = self._entries()
            failure = _failure_in(entries)
            if failure is not None:
                self._reported = True
                raise failure
            if any(isinstance(entry, journal.Done) for entry in entries):
                return
            started = _running(entries)
            if started is not None and not _alive(started.pid):
                entries = self._entries()  # it may have said its last words meanwhile
                if _running(entries) == started and _failure_in(entries) is None:
                    raise self._vanished(started, entries)
            if len(entries) != seen or started is not None:
                seen, quiet_since = len(entries), time.monotonic()
            else:
                resume = _resume(entries)
                timeout = self.script.timeout_of(resume)
                if time.monotonic() - quiet_since > timeout:
                    self._reported = True
                    raise ScriptFailed(
                        f"the host started no server process within {timeout:g} s",
                        step_number=resume + 1,
                        step=self._step(resume),
                        connection=None,
                    )
            await trio.sleep(_POLL)

    def _failure(self) -> ScriptFailed | None:
        return _failure_in(self._entries())

    async def _start(self) -> None:
        directory = self._workdir
        if directory is None:
            directory = self._temporary = Path(tempfile.mkdtemp(prefix="mcpl-script-"))
        directory.mkdir(parents=True, exist_ok=True)
        script_path = directory / "script.json"
        script_path.write_bytes(msgspec.json.encode(self.script))
        self._journal_path = directory / "record.jsonl"
        self._journal_path.write_bytes(b"")
        (directory / "record.jsonl.state").unlink(missing_ok=True)
        self._target = StdioTarget.of(
            [
                sys.executable,
                "-m",
                "mcpl_host.testing.stdio_server",
                str(script_path),
                str(self._journal_path),
            ],
            cwd=_PACKAGE_ROOT,
        )

    async def _stop(self) -> None:
        if self._journal_path is not None and self._final is None:
            self._final = journal.read_journal(self._journal_path)
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def _entries(self) -> list[journal.Entry]:
        if self._final is not None:
            return self._final
        if self._journal_path is None:
            return []
        return journal.read_journal(self._journal_path)

    def _step(self, index: int) -> str:
        steps = self.script.steps
        return describe(steps[index]) if index < len(steps) else "(end of script)"

    def _vanished(self, started: journal.Started, entries: list[journal.Entry]) -> ScriptFailed:
        self._reported = True
        connection = None
        step = started.resume
        for entry in entries[entries.index(started) :]:
            if isinstance(entry, journal.Connected):
                connection = entry.connection
            elif isinstance(entry, journal.At):
                step = entry.step
        return ScriptFailed(
            f"the server process (pid {started.pid}) ended before finishing; killed from outside?",
            step_number=step + 1,
            step=self._step(step),
            connection=connection,
        )


def _failure_in(entries: list[journal.Entry]) -> ScriptFailed | None:
    for entry in entries:
        if isinstance(entry, journal.Failed):
            return entry.error()
    return None


def _running(entries: list[journal.Entry]) -> journal.Started | None:
    """The process started last, unless it has said it is ending."""
    for entry in reversed(entries):
        if isinstance(entry, (journal.Ended, journal.Failed)):
            return None
        if isinstance(entry, journal.Started):
            return entry
    return None


def _resume(entries: list[journal.Entry]) -> int:
    for entry in reversed(entries):
        if isinstance(entry, journal.Ended):
            return entry.resume
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - another user's process took the pid
        return True
    return True
