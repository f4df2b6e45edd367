"""What the servers do while the prompt is up, shown as it happens: state changes
(connecting, ready, reconnecting, failed), log messages, list changes, resource
updates, other notifications, stderr lines, a running call's progress, and the wire
trace once ``trace on``. What a server makes the shell write is bounded per server and
kind (:meth:`.screen.Screen.limited`); a state is said when it changes, and a server
that keeps failing for the same reason is said to fail once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, get_args

import msgspec

from ...client.types import LoggingLevel
from ...events import (
    Closed,
    Event,
    ListChanged,
    ResourceUpdated,
    ServerLog,
    ServerNotification,
    StderrLine,
)
from ...manager import ServerStatus
from ..trace import WireWatch
from .screen import Screen

__all__ = ["Watch"]

# A log message's budget is its level's (as the library's PeerLogBudget keys a kind by
# level): an error in a flood of debug lines is shown. A level outside MCP's eight
# shares one budget, so a server cannot make kinds without end.
_LEVELS: Final = frozenset(get_args(LoggingLevel))


class Watch:
    """The manager's ``on_event``, ``on_status`` and ``on_wire``. ``changed(server)``
    is called when a server became ready or one of its lists changed: the catalogue
    must be read again."""

    def __init__(self, screen: Screen, changed: Callable[[str], None]) -> None:
        self.screen = screen
        self._changed = changed
        self._started = time.perf_counter()
        self._wires: dict[str, WireWatch] = {}
        self.tracing = False
        self._stream: Any = None
        self._last: dict[str, tuple[str, str | None, bool]] = {}
        # server -> the reason of its last failure, until it is ready (or closed,
        # disabled) again: each retry goes connecting -> failed, said only when the
        # reason changes.
        self._failing: dict[str, tuple[str | None, bool]] = {}

    # -- the trace -----------------------------------------------------------------------

    def trace(self, on: bool, stream: Any) -> None:
        """Start or stop showing every server's wire lines on ``stream``."""
        self.tracing = on
        for wire in self._wires.values():
            wire.stream = stream if on else None
        self._stream = stream

    def on_wire(self, server: str, direction: str, line: bytes) -> None:
        wire = self._wires.get(server)
        if wire is None:
            wire = WireWatch(stream=None, started=self._started, label=server)
            wire.redactor = self.screen.redactor
            self._wires[server] = wire
            if self.tracing:
                wire.stream = self._stream
        wire(direction, line)

    # -- states and events ---------------------------------------------------------------

    def on_status(self, status: ServerStatus) -> None:
        s = self.screen
        state = status.state
        reason = None if status.error is None else str(status.error)
        said = (state, reason, status.retrying)
        if state == "failed":
            failure = (reason, status.retrying)  # giving up is said, though the reason is not new
            if self._failing.get(status.name) == failure:
                return  # another failed attempt for the same reason: said once
            self._failing[status.name] = failure
        elif state in ("connecting", "reconnecting") and status.name in self._failing:
            return  # a retry after a failure: its outcome is what is said
        else:
            self._failing.pop(status.name, None)
        if self._last.get(status.name) == said:
            return
        self._last[status.name] = said
        paint = s.style.good if state == "ready" else s.style.bad
        if state in ("connecting", "closed", "disabled"):
            paint = s.style.dim
        text = paint(state)
        if state == "ready":
            info = status.server_info or {}
            name = s.safe(f"{info.get('name', '?')} {info.get('version', '')}".strip(), 200)
            text += f": {name}, protocol {s.safe(status.protocol_version or '?', 32)}"
            self._changed(status.name)
        elif status.error is not None:
            text += f": {s.safe(str(status.error))}"
        if state == "failed":
            text += s.style.dim(" (will retry)" if status.retrying else " (not retried)")
        s.note(status.name, text)

    def on_event(self, server: str, event: Event) -> None:
        s = self.screen
        match event:
            case ServerLog(level=level, logger=logger, data=data):
                said = data if isinstance(data, str) else msgspec.json.encode(data).decode()
                source = f" {s.safe(logger, 64)}" if logger else ""
                kind = f"{level} log" if level in _LEVELS else "log"
                s.limited(server, kind, f"log {s.safe(level, 16)}{source}: {s.safe(said)}")
            case ListChanged(kind=kind):
                s.limited(server, "notification", s.style.dim(f"{s.safe(kind, 32)} list changed"))
                self._changed(server)
            case ResourceUpdated(uri=uri):
                s.limited(server, "notification", f"resource updated: {s.safe(uri)}")
            case ServerNotification(method=method, params=params):
                raw = b"" if params is None else bytes(params)
                shown = " " + s.safe(raw.decode("utf-8", "replace")) if raw else ""
                s.limited(server, "notification", f"notification {s.safe(method, 200)}{shown}")
            case StderrLine(line=line):
                s.limited(server, "stderr", s.style.dim(f"stderr: {s.safe(line)}"))
            case Closed():
                pass  # its status says it
            case _:
                pass

    def progress(self, server: str | None) -> Callable[[float, float | None, str | None], None]:
        """A call's ``on_progress``: one line per notification."""
        s = self.screen

        def show(done: float, total: float | None, message: str | None) -> None:
            of = "" if total is None else f"/{total:g}"
            said = f": {s.safe(message)}" if message else ""
            s.limited(server, "progress", f"progress {done:g}{of}{said}")

        return show
