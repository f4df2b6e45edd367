"""Where the shell writes: stdout, above the prompt while it is up (prompt_toolkit's
patched stdout), every server's text redacted, escaped and cut as the rest of the
command line shows it; what a server makes it write bounded per kind and interval
(DESIGN 3.12)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any, Final

from ...protocol.errors import McplHostError
from ...protocol.redact import Redactor
from ..failure import describe_failure
from ..render import Style, safe_text, terminal_width

__all__ = ["BURST", "INTERVAL", "LINE_LIMIT", "Screen"]

# One line about a server (a log message, a notification's params): cut past this.
LINE_LIMIT: Final = 1000
# The lines of one kind (log, notification, stderr, progress, refused) one server may
# cause in INTERVAL seconds; past them the lines are counted, and the count is said
# with the last of them when the interval ends.
BURST: Final = 30
INTERVAL: Final = 3.0


class _Window:
    __slots__ = ("last", "shown", "started", "suppressed")

    def __init__(self, started: float) -> None:
        self.started = started
        self.shown = 0
        self.suppressed = 0
        self.last = ""


class Screen:
    """Writes lines; ``style`` and ``width`` are the terminal's, taken at start."""

    def __init__(self, redactor: Redactor, *, burst: int = BURST, interval: float = INTERVAL):
        self.redactor = redactor
        self.style = Style.for_stream(sys.stdout)
        self.width = terminal_width(sys.stdout)
        self.burst = burst
        self.interval = interval
        # (server, kind) -> its current window. Kinds are the shell's own few words,
        # servers the configured ones: the table is bounded by the configuration.
        self._windows: dict[tuple[str | None, str], _Window] = {}

    def safe(self, value: Any, limit: int = LINE_LIMIT) -> str:
        """A server's value on one line: redacted, escaped, cut."""
        return safe_text(self.redactor, value, limit)

    def write(self, text: str) -> None:
        """``text`` as it is (already made safe). Raises nothing: a terminal that went
        away must not end a server's callback."""
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()

    def note(self, server: str | None, text: str) -> None:
        """A line about ``server`` (prefixed with its name), its parts already safe."""
        head = self.style.dim(f"[{self.safe(server, 64)}] ") if server else ""
        self.write(head + text)

    def limited(self, server: str | None, kind: str, text: str) -> None:
        """:meth:`note`, within ``server``'s budget for ``kind``: the first
        ``burst`` lines of an interval are written, the rest counted; when the interval
        ends the count is written with the last line held back."""
        key = (server, kind)
        window = self._windows.get(key)
        now = time.monotonic()
        if window is None or now - window.started >= self.interval:
            if window is not None:
                self._said(key, window)
            window = self._windows[key] = _Window(now)
        if window.shown < self.burst:
            window.shown += 1
            self.note(server, text)
            return
        window.suppressed += 1
        window.last = text
        if window.suppressed == 1:
            _later(window.started + self.interval - now, lambda: self._end(key, window))

    def flush(self) -> None:
        """Say every count and last line still held back (at leaving)."""
        windows, self._windows = self._windows, {}
        for key, window in windows.items():
            self._said(key, window)

    def _end(self, key: tuple[str | None, str], window: _Window) -> None:
        if self._windows.get(key) is window:
            del self._windows[key]
            self._said(key, window)

    def _said(self, key: tuple[str | None, str], window: _Window) -> None:
        if not window.suppressed:
            return
        server, kind = key
        more = window.suppressed - 1
        if more:
            lines = "line" if more == 1 else "lines"
            self.note(
                server,
                self.style.dim(f"{more} more {kind} {lines} not shown in {self.interval:g} s"),
            )
        self.note(server, window.last)
        window.suppressed = 0

    def error(self, exc: McplHostError, server: str | None = None) -> None:
        error = describe_failure(exc, self.redactor)
        self.note(server, self.style.bad(f"error ({error.get('kind', '?')}): ") + error["message"])

    def problem(self, text: str) -> None:
        """One of the shell's own complaints (a usage mistake at the prompt)."""
        self.write(self.style.bad(text))


def _later(delay: float, then: Callable[[], None]) -> Any:
    """``then()`` after ``delay`` seconds on the running asyncio loop; without one (a
    test), the count is said when the kind next comes."""
    with contextlib.suppress(RuntimeError):
        return asyncio.get_running_loop().call_later(max(delay, 0.0), then)
    return None
