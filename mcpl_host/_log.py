"""Where mcpl_host's log events go: structlog as the application configured it, and
when it configured nothing, warnings and errors on stderr.

structlog left unconfigured prints every event, debug included, to stdout: one line per
message read, which costs more than the message itself and breaks any program whose
stdout is its output (a stdio MCP server that embeds a client, a ``--json`` command).
The standard library's logging does the sensible thing in that case (warnings and up to
stderr, its "last resort"); this does the same. Whether structlog is configured is
asked when a logger is bound (each connection and transport binds its own), so an
application that configures structlog before it opens connections gets everything.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

__all__ = ["get_logger"]

_LAST_RESORT = logging.WARNING


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
    if structlog.is_configured():
        return structlog.get_logger(name)
    return structlog.wrap_logger(
        structlog.PrintLogger(sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(_LAST_RESORT),
        logger_name=name,
    )
