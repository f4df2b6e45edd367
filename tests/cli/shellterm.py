"""``mcpl-host shell`` run for real on a pseudo-terminal (pexpect), every wait bounded."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

import pexpect

CLI = [sys.executable, "-m", "mcpl_host.cli"]
# Every wait: generous for a loaded machine, short of pytest's own deadline.
WAIT = 20
# prompt_toolkit's cursor and mode codes, stripped from what a test reads.
_CODES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[>=]|\r")


class Terminal:
    """The shell on a pseudo-terminal: ``send`` keys, ``expect`` text (a regex, matched
    on the output with the terminal's control codes left in), ``seen`` all output so far
    with the codes taken out."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd: str | None = None):
        environment = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        # No colour (text is matched as written); no cursor position requests (pexpect
        # does not answer them, and prompt_toolkit would wait for one).
        environment.update(NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
        environment.update(env or {})
        self.child = pexpect.spawn(
            CLI[0],
            [*CLI[1:], "shell", *args],
            env=environment,
            cwd=cwd,
            encoding="utf-8",
            timeout=WAIT,
            dimensions=(50, 200),
        )
        self._log: list[str] = []

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def line(self, text: str) -> None:
        """Type ``text`` and Enter."""
        self.child.send(text + "\r")

    def expect(self, pattern: str, timeout: float = WAIT) -> Any:
        try:
            self.child.expect(pattern, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF):
            self._log.append(str(self.child.before))
            tail = self.seen()[-3000:]
            raise AssertionError(f"{pattern!r} not seen; the screen ends:\n{tail}") from None
        self._log.append(str(self.child.before) + str(self.child.after))
        return self.child.match

    def expect_all(self, *patterns: str, timeout: float = WAIT) -> None:
        """Wait until every one of ``patterns`` has been seen, in any order (servers
        started together come up in any order)."""
        left = list(patterns)
        while left:
            try:
                index = self.child.expect(left, timeout=timeout)
            except (pexpect.TIMEOUT, pexpect.EOF):
                self._log.append(str(self.child.before))
                tail = self.seen()[-3000:]
                raise AssertionError(f"{left!r} not seen; the screen ends:\n{tail}") from None
            self._log.append(str(self.child.before) + str(self.child.after))
            del left[index]

    def seen(self) -> str:
        return _CODES.sub("", "".join(self._log))

    def leave(self) -> int:
        """``exit``; the exit status once the command has ended."""
        self.line("exit")
        self.child.expect(pexpect.EOF, timeout=WAIT)
        self._log.append(str(self.child.before))
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
        self.child.close()
