"""What went wrong, as the report's ``error`` object, and the exit status it means.

One kind per exception of mcpl_host's tree, checked most specific first (a
:class:`~mcpl_host.SpawnError` is a :class:`~mcpl_host.TransportError`, a
:class:`~mcpl_host.VersionError` a :class:`~mcpl_host.ProtocolError`).
"""

from __future__ import annotations

import signal
from typing import Any, Final

from ..protocol.errors import (
    AuthorizationError,
    AuthorizationRequired,
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
    "AUTH_FAILED",
    "AUTH_REQUIRED",
    "CANCELLED",
    "CONFIG_ERROR",
    "EXIT_AUTH_FAILED",
    "EXIT_AUTH_REQUIRED",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "KINDS",
    "TIMEOUT",
    "cancelled_error",
    "describe_failure",
    "error_object",
    "exit_status",
    "signal_status",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1  # the server or the transport failed
EXIT_USAGE: Final = 2  # bad usage or configuration
# 3 is left free: Python itself exits 1 on an uncaught exception and 2 on its own usage
# errors, and a shell's "command not found" family starts at 126.
EXIT_AUTH_REQUIRED: Final = 4  # a person must log in (mcpl-host auth login), then retry
EXIT_AUTH_FAILED: Final = 5  # the authorization server refused or broke a rule
# Ended by signal N: 128+N, as a shell reports a command a signal killed.
_EXIT_SIGNALLED: Final = 128

CONFIG_ERROR: Final = "config-error"
TIMEOUT: Final = "timeout"
AUTH_REQUIRED: Final = "auth-required"
AUTH_FAILED: Final = "auth-failed"
CANCELLED: Final = "cancelled"  # SIGINT, SIGTERM or SIGHUP ended the command (cli/signals.py)
# Most specific first: the first match names the kind.
KINDS: Final[tuple[tuple[type[McplHostError], str], ...]] = (
    (AuthorizationRequired, AUTH_REQUIRED),
    (AuthorizationError, AUTH_FAILED),
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
    if isinstance(exc, AuthorizationRequired):
        # The challenge is the server's text: already escaped and cut, but it may echo
        # what the host sent (a token), so it is redacted like any peer text.
        challenge = {
            redactor.log_value(name, 64): redactor.log_value(value)
            for name, value in list(exc.challenge.items())[:16]
        }
        return error_object(kind, message, status=exc.status, challenge=challenge)
    if isinstance(exc, AuthorizationError):
        error = None if exc.error is None else redactor.log_value(exc.error, 64)
        return error_object(kind, message, step=exc.step, rule=exc.rule, oauth_error=error)
    return error_object(kind, message)


def cancelled_error(sig: signal.Signals, *, forced: bool) -> dict[str, Any]:
    """The ``error`` of a command that ``sig`` ended: the signal's name, and whether a
    second signal made the host kill its stdio servers at once. Raises nothing."""
    how = "; a second signal killed the stdio servers at once" if forced else ""
    return error_object(CANCELLED, f"cancelled by {sig.name}{how}", signal=sig.name, forced=forced)


def signal_status(name: Any) -> int:
    """128+N for the signal named ``name`` (``"SIGINT"``: 130), 1 for a name that is
    none. Raises nothing."""
    sig = signal.Signals.__members__.get(name) if isinstance(name, str) else None
    return EXIT_FAILED if sig is None else _EXIT_SIGNALLED + sig.value


def exit_status(report: dict[str, Any]) -> int:
    """0 for a report that is ok, 2 for a configuration error, 4 when authorization is
    required (a person must log in), 5 when the authorization flow failed, 128+N when
    signal N ended the command (``cancelled``), 1 for any other failure.

    A report of several servers (``--all``) is 1 when any of them failed, whatever the
    kind: one entry the host cannot use is that server's failure, not bad usage.
    Raises nothing.
    """
    if report.get("ok"):
        return EXIT_OK
    error = report.get("error")
    if isinstance(error, dict) and error.get("kind") == CANCELLED:  # --all's too
        return signal_status(error.get("signal"))
    if isinstance(report.get("servers"), dict):
        return EXIT_FAILED
    kind = error.get("kind") if isinstance(error, dict) else None
    return _EXIT_BY_KIND.get(kind, EXIT_FAILED) if isinstance(kind, str) else EXIT_FAILED


_EXIT_BY_KIND: Final = {
    CONFIG_ERROR: EXIT_USAGE,
    AUTH_REQUIRED: EXIT_AUTH_REQUIRED,
    AUTH_FAILED: EXIT_AUTH_FAILED,
}
