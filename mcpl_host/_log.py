"""Where mcpl_host's log events go: structlog as the application configured it, and
when it configured nothing, warnings and errors on stderr.

structlog left unconfigured prints every event, debug included, to stdout: one line per
message read, which costs more than the message itself and breaks any program whose
stdout is its output (a stdio MCP server that embeds a client, a ``--json`` command).
The standard library's logging does the sensible thing in that case (warnings and up to
stderr, its "last resort"); this does the same, without importing structlog at all (an
application that never imported it cannot have configured it; that spares every
embedder structlog's import time and memory). Whether structlog is configured is asked
when a logger is bound (each connection and transport binds its own), so an
application that configures structlog before it opens connections gets everything.
"""

from __future__ import annotations

import sys
import time
import traceback
from typing import Any

__all__ = ["PeerLogBudget", "RateLimited", "code_trace", "get_logger"]


def get_logger(name: str) -> Any:
    """A logger named ``name`` that picks its destination when first used or bound."""
    return _Logger(name)


class _Logger:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def bind(self, **values: Any) -> Any:
        return _resolve(self._name).bind(**values)

    def __getattr__(self, method: str) -> Any:
        return getattr(_resolve(self._name), method)


def _resolve(name: str) -> Any:
    structlog = sys.modules.get("structlog")
    if structlog is not None and structlog.is_configured():
        return structlog.get_logger(name)
    return LastResort({"logger": name})


class LastResort:
    """Warnings and worse as one line each on stderr; debug and info cost a call."""

    __slots__ = ("_context",)

    def __init__(self, context: dict[str, Any]) -> None:
        self._context = context

    def bind(self, **values: Any) -> LastResort:
        return LastResort({**self._context, **values})

    def debug(self, event: str, **values: Any) -> None:
        pass

    info = debug

    def warning(self, event: str, **values: Any) -> None:
        self._write("warning", event, values)

    def error(self, event: str, **values: Any) -> None:
        self._write("error", event, values)

    def critical(self, event: str, **values: Any) -> None:
        self._write("critical", event, values)

    def exception(self, event: str, **values: Any) -> None:
        self._write("error", event, values, traceback.format_exc())

    def _write(self, level: str, event: str, values: dict[str, Any], trace: str = "") -> None:
        fields = {**values, **self._context}
        logger = fields.pop("logger", "")
        text = " ".join(f"{key}={value!r}" for key, value in sorted(fields.items()))
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        line = f"{stamp} [{level:<9}] {event:<30} [{logger}] {text}\n{trace}"
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass  # no stderr (closed, or None under pythonw): a log line is not worth a crash


class PeerLogBudget:
    """How many log events a peer may cause: per kind, the first ``burst`` in each
    ``interval`` seconds are written in full, the rest only counted, and the count is
    written as one event when that kind next occurs after the interval or at
    :meth:`flush`. A server that floods costs a few lines, not one per message.

    Windows that ended are swept whenever any event is admitted (at most once a
    second), so a flood's count is written soon after it stops, not only when its kind
    recurs. A kind is the level, the event and its ``outcome`` field (a small closed set in the
    host's own words, never peer text); past ``max_kinds`` distinct kinds every new one
    shares a single budget. Debug events are not counted: an application that asked
    for debug asked for a line per message.
    """

    def __init__(self, *, burst: int = 5, interval: float = 60.0, max_kinds: int = 64) -> None:
        self.burst = burst
        self.interval = interval
        self.max_kinds = max_kinds
        # kind -> [window start, events in this window, suppressed in this window, logger]
        self._kinds: dict[tuple[str, str, str], list[Any]] = {}
        self._next_sweep = 0.0

    def wrap(self, logger: Any) -> RateLimited:
        """``logger`` with its info and worse events counted against this budget."""
        return RateLimited(logger, self)

    def admit(self, logger: Any, level: str, event: str, outcome: str) -> bool:
        """Whether this event is written; writes the count of a finished window first."""
        kind = (level, event, outcome)
        entry = self._kinds.get(kind)
        if entry is None:
            if len(self._kinds) >= self.max_kinds:
                kind = (level, "*", "*")
                entry = self._kinds.get(kind)
            if entry is None:
                entry = self._kinds[kind] = [time.monotonic(), 0, 0, logger]
        now = time.monotonic()
        if now >= self._next_sweep:
            self._next_sweep = now + 1.0
            for other, window in self._kinds.items():
                if now - window[0] >= self.interval:
                    self._report(other, window)
                    window[0], window[1], window[2] = now, 0, 0
        entry[1] += 1
        if entry[1] <= self.burst:
            return True
        entry[2] += 1
        entry[3] = logger
        return False

    def flush(self) -> None:
        """Write every count not yet written (the connection is closing)."""
        for kind, entry in self._kinds.items():
            self._report(kind, entry)
            entry[2] = 0

    def _report(self, kind: tuple[str, str, str], entry: list[Any]) -> None:
        if entry[2]:
            level, event, outcome = kind
            getattr(entry[3], level)(
                "log events suppressed",
                suppressed_event=event,
                suppressed_outcome=outcome or None,
                suppressed=entry[2],
                interval_s=self.interval,
            )


class RateLimited:
    """A logger whose info and worse events are counted against a :class:`PeerLogBudget`."""

    __slots__ = ("_budget", "_logger")

    def __init__(self, logger: Any, budget: PeerLogBudget) -> None:
        self._logger = logger
        self._budget = budget

    def bind(self, **values: Any) -> RateLimited:
        return RateLimited(self._logger.bind(**values), self._budget)

    def debug(self, event: str, **values: Any) -> None:
        self._logger.debug(event, **values)

    def info(self, event: str, **values: Any) -> None:
        self._emit("info", event, values)

    def warning(self, event: str, **values: Any) -> None:
        self._emit("warning", event, values)

    def error(self, event: str, **values: Any) -> None:
        self._emit("error", event, values)

    def critical(self, event: str, **values: Any) -> None:
        self._emit("critical", event, values)

    def exception(self, event: str, **values: Any) -> None:
        """An error with the code's frames only: a traceback's text can quote the peer."""
        exc = sys.exc_info()[1]
        if exc is not None:
            values = {**values, "error": type(exc).__name__, "where": code_trace(exc)}
        self._emit("error", event, values)

    def _emit(self, level: str, event: str, values: dict[str, Any]) -> None:
        outcome = values.get("outcome")
        if self._budget.admit(self._logger, level, event, "" if outcome is None else str(outcome)):
            getattr(self._logger, level)(event, **values)


def code_trace(exc: BaseException) -> str:
    """Where ``exc`` was raised, as file:line function frames only: a traceback's
    message lines can carry what a peer sent, this cannot."""
    frames = traceback.extract_tb(exc.__traceback__)
    return " <- ".join(
        f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in reversed(frames)
    )
