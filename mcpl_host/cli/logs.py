"""Logging for the command: structlog to stderr, never stdout, with secrets masked.

The library never configures logging (DESIGN 3.11); the command is the one place that
does. Unconfigured structlog prints to stdout, which would break ``--json``'s promise
of one object there, so :func:`configure` runs before anything can log.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Collection
from typing import Any, Final, TextIO

import structlog

from ..protocol.redact import Redactor

__all__ = ["LogMask", "configure"]

_LEVELS: Final = (logging.WARNING, logging.INFO, logging.DEBUG)


class LogMask:
    """The redactor applied to every rendered log line, as a last line of defence.

    The library already redacts what it logs with each server's redactor; this one knows
    every secret of the command (all servers' env values included) and is replaced once
    the targets are resolved, since the config file is read after logging starts.
    """

    def __init__(self, redactor: Redactor | None = None) -> None:
        self.redactor = redactor or Redactor()


def configure(
    verbosity: int,
    mask: LogMask,
    stream: TextIO | None = None,
    *,
    shown_elsewhere: Collection[str] = (),
) -> None:
    """Send structlog's output to ``stream`` (stderr): warnings and errors by default,
    info with ``verbosity`` 1, debug (every message on the wire) with 2 or more. The
    events named in ``shown_elsewhere`` are left out below debug (the shell shows
    states and server logs itself: said twice, they would crowd the screen). Raises
    nothing."""
    level = _LEVELS[min(max(verbosity, 0), len(_LEVELS) - 1)]
    console = structlog.dev.ConsoleRenderer(colors=False)
    quiet = frozenset(shown_elsewhere) if verbosity < 2 else frozenset()

    def drop(_logger: Any, _method: str, event: structlog.typing.EventDict) -> Any:
        if event.get("event") in quiet:
            raise structlog.DropEvent
        return event

    def render(logger: Any, method: str, event: structlog.typing.EventDict) -> str:
        return mask.redactor.redact(console(logger, method, event))

    structlog.configure(
        processors=[
            drop,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%H:%M:%S", utc=False),
            render,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=lambda *_args: _QuietLogger(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


class _QuietLogger(structlog.PrintLogger):
    """Drops the lines it cannot write: a log line to a closed stderr (a pipe whose
    reader left, a terminal that hung up) must not fail the code that logged it, such
    as a server's shutdown."""

    def msg(self, message: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # ValueError: a closed file object
            super().msg(message)

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg
