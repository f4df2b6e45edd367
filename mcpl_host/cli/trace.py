"""The wire watch: every line a connection reads or writes passes here.

It writes the ``--trace`` log on stderr (direction, seconds since the command started,
the line redacted, escaped and cut, so a peer's bytes can neither forge a line nor show
a secret).
"""

from __future__ import annotations

import time
from typing import Final, TextIO

from ..protocol.redact import Redactor

__all__ = ["TRACE_LIMIT", "WireWatch"]

# Longer than a log value (256): a trace is read for the content of messages. Still cut:
# one tools/list line can be megabytes.
TRACE_LIMIT: Final = 512
# "http": an HTTP exchange that carried no JSON-RPC line (a 401, the authorization
# flow's requests), shown as what it was.
_ARROWS: Final = {"in": "<-", "out": "->", "http": "=="}


class WireWatch:
    """``on_wire`` for one connection.

    ``redactor`` must be set to the connection's own before the connection opens (it is
    built by the connection). ``stream`` is None without ``--trace``; ``label`` prefixes
    each trace line when several servers are traced at once.
    """

    def __init__(self, *, stream: TextIO | None, started: float, label: str | None) -> None:
        self.stream = stream
        self.redactor = Redactor()
        self._started = started
        self._prefix = f"[{label}] " if label else ""

    def __call__(self, direction: str, line: bytes) -> None:
        """Trace one line (``direction`` is ``"in"`` or ``"out"``). Raises nothing."""
        if self.stream is None:
            return
        elapsed = time.perf_counter() - self._started
        text = self.redactor.log_value(line.decode("utf-8", "replace"), TRACE_LIMIT)
        arrow = _ARROWS.get(direction, direction)
        try:
            self.stream.write(f"trace {self._prefix}+{elapsed:.3f}s {arrow} {text}\n")
            self.stream.flush()
        except OSError:
            # stderr went away (a closed pipe): the trace stops, the connection must not.
            self.stream = None
