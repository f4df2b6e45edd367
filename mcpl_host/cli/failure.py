"""What went wrong, as the report's ``error`` object, and the exit status it means.

One kind per exception of mcpl_host's tree, checked most specific first (a
:class:`~mcpl_host.SpawnError` is a :class:`~mcpl_host.TransportError`, a
:class:`~mcpl_host.VersionError` a :class:`~mcpl_host.ProtocolError`).
"""

from __future__ import annotations

from typing import Any, Final

from ..protocol.errors import (
    ConfigurationError,
    InitializeError,
    LimitExceeded,
    McplHostError,
    ProtocolError,
    RequestError,
    RequestTimeout,
    SpawnError,
    TransportError,
    VersionError,
)
from ..protocol.redact import Redactor

__all__ = [
    "CONFIG_ERROR",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "KINDS",
    "TIMEOUT",
    "describe_failure",
    "error_object",
    "exit_status",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1  # the server or the transport failed
EXIT_USAGE: Final = 2  # bad usage or configuration

CONFIG_ERROR: Final = "config-error"
TIMEOUT: Final = "timeout"
# Most specific first: the first match names the kind.
KINDS: Final[tuple[tuple[type[McplHostError], str], ...]] = (
    (SpawnError, "spawn-failed"),
    (TransportError, "transport-closed"),  # ConnectionClosed included
    (InitializeError, "initialize-error"),
    (VersionError, "version-rejected"),
    (RequestTimeout, TIMEOUT),
    (ConfigurationError, CONFIG_ERROR),
    (LimitExceeded, "limit-exceeded"),
    (RequestError, "request-error"),
    (ProtocolError, "protocol-error"),
)
# TransportError's reason when opening the transport took longer than the timeout.
_CONNECT_TIMEOUT: Final = "connect-timeout"
# Our own texts are short; this bound is for what a server put in them.
_MESSAGE_LIMIT: Final = 1024


def error_object(
    kind: str, message: str, *, code: int | None = None, data: Any = None, **facts: Any
) -> dict[str, Any]:
    """The report's ``error``: kind, message, code and data always present (null when
    there is nothing to say), then the facts particular to the kind."""
    return {"kind": kind, "message": message, "code": code, "data": data, **facts}


def describe_failure(exc: McplHostError, redactor: Redactor) -> dict[str, Any]:
    """The ``error`` object for ``exc``; its message escaped, cut and redacted.

    Raises nothing. Every class mcpl_host raises has its kind in :data:`KINDS`; one
    added later without a kind is reported under its class name rather than hidden.
    """
    kind = next((k for cls, k in KINDS if isinstance(exc, cls)), type(exc).__name__)
    if isinstance(exc, TransportError) and exc.reason == _CONNECT_TIMEOUT:
        kind = TIMEOUT  # nothing closed: the transport never opened in time
    message = redactor.log_value(exc.message, _MESSAGE_LIMIT)
    if isinstance(exc, InitializeError):
        return error_object(kind, message, code=exc.code, data=exc.data)
    if isinstance(exc, RequestError):
        return error_object(
            kind,
            redactor.log_value(exc.error_message, _MESSAGE_LIMIT),
            code=exc.code,
            data=exc.data,
        )
    if isinstance(exc, VersionError):
        return error_object(
            kind,
            message,
            offered=exc.offered,
            answered=exc.answered,
            allowed=list(exc.allowed),
        )
    if isinstance(exc, RequestTimeout):
        return error_object(kind, message, method=exc.method, timeout=exc.timeout)
    if isinstance(exc, TransportError):
        return error_object(kind, message, reason=exc.reason)
    if isinstance(exc, LimitExceeded):
        return error_object(kind, message, limit=exc.limit, value=exc.value)
    return error_object(kind, message)


def exit_status(report: dict[str, Any]) -> int:
    """0 for a report that is ok, 2 for a configuration error, 1 for any other failure.

    A report of several servers (``--all``) is 1 when any of them failed, whatever the
    kind: one entry the host cannot use is that server's failure, not bad usage.
    Raises nothing.
    """
    if report.get("ok"):
        return EXIT_OK
    if isinstance(report.get("servers"), dict):
        return EXIT_FAILED
    error = report.get("error")
    if isinstance(error, dict) and error.get("kind") == CONFIG_ERROR:
        return EXIT_USAGE
    return EXIT_FAILED
