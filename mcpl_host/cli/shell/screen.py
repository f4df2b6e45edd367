"""Where the shell writes: stdout, above the prompt while it is up (prompt_toolkit's
patched stdout), every server's text redacted, escaped and cut as the rest of the
command line shows it."""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Final

from ...protocol.errors import McplHostError
from ...protocol.redact import Redactor
from ..failure import describe_failure
from ..render import Style, terminal_width

__all__ = ["LINE_LIMIT", "Screen"]

# One line about a server (a log message, a notification's params): cut past this.
LINE_LIMIT: Final = 1000


class Screen:
    """Writes lines; ``style`` and ``width`` are the terminal's, taken at start."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.style = Style.for_stream(sys.stdout)
        self.width = terminal_width(sys.stdout)

    def safe(self, value: Any, limit: int = LINE_LIMIT) -> str:
        """A server's value on one line: redacted, escaped, cut."""
        return self.redactor.log_value(value if isinstance(value, str) else repr(value), limit)

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

    def error(self, exc: McplHostError, server: str | None = None) -> None:
        error = describe_failure(exc, self.redactor)
        self.note(server, self.style.bad(f"error ({error.get('kind', '?')}): ") + error["message"])

    def problem(self, text: str) -> None:
        """One of the shell's own complaints (a usage mistake at the prompt)."""
        self.write(self.style.bad(text))
