"""The prompt loop: prompt_toolkit on asyncio, the manager under :mod:`mcpl_host.aio`
(trio as asyncio's guest) in the same thread.

One thing reads the terminal at a time: the command prompt, or a server's question
(:mod:`.questions`), which interrupts the command prompt (the text typed so far is
kept) or comes while a command runs. Ctrl-C clears the line at the prompt, cancels the
running command, and refuses the question being asked; Ctrl-D or ``exit`` leaves,
closing every server. SIGTERM and SIGHUP leave too (exit 128+N); so does a terminal
that went away (a write or read fails: taken as SIGHUP).

A command's ``--timeout`` is the shell's own deadline, not the request's: the time a
server's question spends waiting for the person or being answered is added to it
(docs/cli.md, "mcpl-host shell").
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import DummyHistory, FileHistory, History, InMemoryHistory
from prompt_toolkit.patch_stdout import patch_stdout

from ... import aio
from ...protocol.redact import Redactor
from ..args import Options
from ..failure import signal_status
from ..run import CLIENT_INFO
from .commands import Commands
from .complete import ShellCompleter
from .data import Data
from .questions import Questions
from .screen import Screen
from .watch import Watch

__all__ = ["Relog", "run_session"]

Relog = Callable[[TextIO | None], None]
"""Sends the command's log lines to a stream (None: stderr again)."""

_PROMPT: Final = "mcpl> "
# A terminal that went away, as a write to it fails.
_GONE: Final = frozenset({errno.EIO, errno.EPIPE, errno.ENXIO})
# What ends a prompt that is not a typed line.
_INTERRUPTED: Final = "\x00interrupted"


class _History(FileHistory):
    """``--history FILE``, which says once that it cannot be written (the disk filled
    up, the file was taken away) instead of failing every line."""

    def __init__(self, path: str, screen: Screen) -> None:
        super().__init__(path)
        self._screen = screen
        self._broken = False

    def store_string(self, string: str) -> None:
        if self._broken:
            return
        try:
            super().store_string(string)
        except OSError as exc:
            self._broken = True
            said = self._screen.safe(exc.strerror or str(exc))
            self._screen.problem(f"the history file cannot be written ({said}): not kept")


def _exit(app: Application[Any], **how: Any) -> None:
    """End ``app``'s prompt, unless it is not running or ending already (two requests
    that arrive together both ask the prompt to end: the second must do nothing)."""
    if app.future is not None and not app.future.done():
        app.exit(**how)


class _Session:
    def __init__(
        self, options: Options, servers: Mapping[str, Any], redactor: Redactor, relog: Relog
    ) -> None:
        assert options.shell is not None
        self.options = options
        self.servers = servers
        self.relog = relog
        self.hung_up = False
        self._terminals = [fd for fd in (1, 2) if os.isatty(fd)]  # taken while they are
        self.screen = Screen(redactor)
        self.questions = Questions(self.screen, options.shell)
        self.questions.wake = self._wake
        self.questions.abort = self._abort_question
        self.data: Data | None = None
        self.watch = Watch(self.screen, self._changed)
        self.typed: list[str] = []
        self.running: asyncio.Task[bool] | None = None
        self.ended: signal.Signals | None = None
        self._arrived = asyncio.Event()
        self._entered = asyncio.Event()  # the manager is entered: self.data is set
        self._refreshing: asyncio.Task[None] | None = None
        self._stale: set[str] = set()
        self._counts: dict[str, dict[str, int]] = {}
        # server -> why it was last not listed, said once until it changes; and why the
        # catalogue could not be read at all (None: it could), the same.
        self._unlisted: dict[str, str] = {}
        self._unread: str | None = None
        history: History = (
            InMemoryHistory()
            if options.shell.history is None
            else _History(options.shell.history, self.screen)
        )
        self.prompt: PromptSession[str] = PromptSession(history=history)
        # A question's own prompt: its answers are kept in no history (up-arrow at a
        # question recalls nothing; an answer may be a secret).
        self.asking: PromptSession[str] = PromptSession(history=DummyHistory())

    # -- terminal ----------------------------------------------------------------------

    def _wake(self) -> None:
        self._arrived.set()
        if self.running is None:
            _exit(self.prompt.app, result=_INTERRUPTED)

    def _interrupt_if_asked(self) -> None:
        """The command prompt's ``pre_run``: a question that came while the prompt was
        starting ends it at once."""
        if self.questions.waiting:
            _exit(self.prompt.app, result=_INTERRUPTED)

    def _abort_question(self) -> None:
        _exit(self.asking.app, exception=EOFError())

    async def _ask(self, message: str) -> str:
        if self.ended is not None:
            raise EOFError  # leaving: no question is asked any more
        try:
            return await self.asking.prompt_async(ANSI(message), handle_sigint=False)
        except OSError:
            self._hang_up()
            raise EOFError from None

    def _hang_up(self) -> None:
        """The terminal went away (SIGHUP, or a read or write failed): leave, writing
        nothing more to it (every write would fail)."""
        if not self.hung_up:
            self.hung_up = True
            _silence(self._terminals)
        self._leave(signal.SIGHUP)

    def _on_signal(self, sig: signal.Signals) -> None:
        if sig == signal.SIGINT:
            if self.running is not None and not self.running.done():
                self.running.cancel()
        elif sig == signal.SIGHUP:
            self._hang_up()
        else:
            self._leave(sig)

    def _leave(self, sig: signal.Signals) -> None:
        """Leave with 128+``sig`` (the first signal's, if several came): cancel the
        running command, close both prompts; no question is asked from here on."""
        if self.ended is None:
            self.ended = sig
        if self.running is not None:
            self.running.cancel()
        for app in (self.prompt.app, self.asking.app):
            _exit(app, exception=EOFError())

    # -- the catalogue -----------------------------------------------------------------

    def _changed(self, server: str) -> None:
        """A server became ready or a list changed: read the catalogue again, once at a
        time (a server cannot make the shell read without end: one pending read)."""
        self._stale.add(server)
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.get_running_loop().create_task(self._refresh())

    async def _refresh(self) -> None:
        await self._entered.wait()  # a server may be ready before the manager returns
        assert self.data is not None
        s = self.screen
        while self._stale:
            stale, self._stale = self._stale, set()
            try:
                found = await self.data.refresh()
            except Exception as exc:  # a background read: said, not raised
                said = s.safe(str(exc) or type(exc).__name__)
                if said != self._unread:
                    self._unread = said
                    s.limited(None, "catalogue", s.style.bad(f"the catalogue was not read: {said}"))
                continue
            self._unread = None
            # Through the budget too: a flood of list_changed makes a reading each.
            for server in sorted(stale):
                error = found.errors.get(server)
                if error is not None:
                    said = s.safe(error)
                    if self._unlisted.get(server) != said:
                        self._unlisted[server] = said
                        s.limited(server, "catalogue", s.style.bad(f"not listed: {said}"))
                    continue
                self._unlisted.pop(server, None)
                counts = found.count(server)
                if counts != self._counts.get(server):
                    self._counts[server] = counts
                    s.limited(server, "catalogue", _counted(counts))

    # -- the loop ------------------------------------------------------------------------

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        for sig in handled:
            loop.add_signal_handler(sig, self._on_signal, sig)
        try:
            with patch_stdout(raw=True):
                # Log lines above the prompt too, not over it.
                self.relog(sys.stderr)
                try:
                    await self._main()
                finally:
                    self.screen.flush()  # the counts and last lines still held back
                    self.relog(None)
        except OSError as exc:
            if exc.errno not in _GONE:
                raise
            self._hang_up()  # the last of the output could not be written
        finally:
            for sig in handled:
                loop.remove_signal_handler(sig)
        return 0 if self.ended is None else signal_status(self.ended.name)

    async def _main(self) -> None:
        options = self.options
        manager_options = {
            "versions": options.versions,
            "client_info": CLIENT_INFO,
            "initialize_timeout": options.timeout,
            "request_timeout": options.timeout,
            "on_event": self.watch.on_event,
            "on_status": self.watch.on_status,
            "on_wire": self.watch.on_wire,
            "secrets": tuple(self.screen.redactor.secrets),
            **self.questions.options(),
        }
        names = ", ".join(self.servers)
        self.screen.write(
            self.screen.style.dim(f"connecting to {self.screen.safe(names)}; type help")
        )
        if options.trace:
            self.watch.trace(True, sys.stdout)
        async with aio.ConnectionManager(dict(self.servers), **manager_options) as manager:
            self.data = Data(manager)
            self._entered.set()
            commands = Commands(manager, self.data, self.screen, self.watch, lambda: self.typed)
            self.prompt.completer = ShellCompleter(self.data, self.servers)
            self.prompt.complete_while_typing = False
            await self._loop(commands)
            self.screen.write(self.screen.style.dim("closing the servers"))
            if self._refreshing is not None:
                self._refreshing.cancel()

    async def _loop(self, commands: Commands) -> None:
        saved = ""
        while self.ended is None:
            question = self.questions.next()
            if question is not None:
                await self.questions.answer(question, self._ask)
                continue
            try:
                text = await self.prompt.prompt_async(
                    _PROMPT,
                    default=saved,
                    handle_sigint=False,
                    pre_run=self._interrupt_if_asked,
                )
            except KeyboardInterrupt:
                saved = ""
                continue
            except EOFError:
                return
            except OSError:
                self._hang_up()
                return
            if text == _INTERRUPTED:
                saved = self.prompt.default_buffer.text
                continue
            saved = ""
            if text.strip():
                self.typed.append(text)
            if not await self._command(commands, text):
                return

    async def _command(self, commands: Commands, text: str) -> bool:
        """Run one command, answering the questions that come meanwhile, within
        ``--timeout`` less the time spent on questions. False: leave."""
        loop = asyncio.get_running_loop()
        task = loop.create_task(commands.run(text))
        self.running = task
        timeout = self.options.timeout
        deadline = loop.time() + timeout
        timed_out = False
        try:
            while not task.done():
                # Cleared before the queue is read: a question that comes from here on
                # sets it again, one that came before is in the queue.
                self._arrived.clear()
                while self.ended is None and (question := self.questions.next()) is not None:
                    started = loop.time()
                    await self.questions.answer(question, self._ask)
                    deadline += loop.time() - started
                left = deadline - loop.time()
                if task.done():
                    break
                if left <= 0:
                    timed_out = True
                    task.cancel()
                    await asyncio.wait({task})
                    break
                arrived = loop.create_task(self._arrived.wait())
                await asyncio.wait(
                    {task, arrived}, timeout=left, return_when=asyncio.FIRST_COMPLETED
                )
                arrived.cancel()
            try:
                return task.result()
            except Exception as exc:  # a fault ends the command, not the shell
                said = self.screen.safe(f"{type(exc).__name__}: {exc}")
                self.screen.problem(f"error (unexpected): {said}")
                return self.ended is None
            except asyncio.CancelledError:
                if timed_out and self.ended is None:
                    self.screen.problem(
                        f"error (timeout): no answer within {timeout:g} s (--timeout; the "
                        "time spent answering the servers' questions not counted): cancelled"
                    )
                else:
                    self.screen.write(self.screen.style.bad("cancelled"))
                return self.ended is None
        finally:
            self.running = None


def _counted(counts: dict[str, int]) -> str:
    names = {
        "tools": ("tool", "tools"),
        "resources": ("resource", "resources"),
        "resourceTemplates": ("resource template", "resource templates"),
        "prompts": ("prompt", "prompts"),
    }
    return ", ".join(f"{n} {names[k][0] if n == 1 else names[k][1]}" for k, n in counts.items())


def _silence(terminals: list[int]) -> None:
    """After a hang-up: what is still to be written to the terminal (Python's last
    flush) goes nowhere, not into an error about a terminal that is gone."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in terminals:
            os.dup2(null, fd)
        os.close(null)


def run_session(
    options: Options, servers: Mapping[str, Any], redactor: Redactor, relog: Relog
) -> int:
    """Run the shell over ``servers`` (name -> target) until the person leaves; the
    exit status (0, or 128+N after a signal or a hang-up: 129)."""
    return asyncio.run(_Session(options, servers, redactor, relog).run())
