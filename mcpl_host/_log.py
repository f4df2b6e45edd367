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

__all__ = ["get_logger"]


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
