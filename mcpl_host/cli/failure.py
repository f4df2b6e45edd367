"""What went wrong, as the report's ``error`` object, and the exit status it means.

One kind per exception of mcpl_host's tree, checked most specific first (a
:class:`~mcpl_host.SpawnError` is a :class:`~mcpl_host.TransportError`, a
:class:`~mcpl_host.VersionError` a :class:`~mcpl_host.ProtocolError`).
"""

from __future__ import annotations

from typing import Any, Final

from ..protocol.errors import (
    AuthorizationError,
    AuthorizationRequired,
    ConfigurationError,
    InitializeError,
    LimitExceeded,
    McplHostError,
    OutputSchemaError,
    ProtocolError,
    RequestError,
    RequestTimeout,
    SpawnError,
    TransportError,
    VersionError,
)
from ..protocol.redact import Redactor
from .jsonvalue import tool_error

__all__ = [
    "AUTH_FAILED",
    "AUTH_REQUIRED",
    "CONFIG_ERROR",
    "EXIT_AUTH_FAILED",
    "EXIT_AUTH_REQUIRED",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "KINDS",
    "OUTPUT_SCHEMA_MISMATCH",
    "SAVE_FAILED",
    "TIMEOUT",
    "describe_failure",
    "error_object",
    "exit_status",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1  # the server failed the request or broke the protocol
EXIT_USAGE: Final = 2  # bad usage or configuration
EXIT_TOOL_ERROR: Final = 3  # the call succeeded and the tool said it failed (isError)
EXIT_AUTH_REQUIRED: Final = 4  # a person must log in (mcpl-host auth login), then retry
EXIT_AUTH_FAILED: Final = 5  # the authorization server refused or broke a rule
EXIT_UNREACHABLE: Final = 6  # no server answered: nothing to retry but the target itself

CONFIG_ERROR: Final = "config-error"
TIMEOUT: Final = "timeout"
AUTH_REQUIRED: Final = "auth-required"
AUTH_FAILED: Final = "auth-failed"
OUTPUT_SCHEMA_MISMATCH: Final = "output-schema-mismatch"
SAVE_FAILED: Final = "save-failed"  # --output could not save the result's content
_SPAWN_FAILED: Final = "spawn-failed"
_TRANSPORT_CLOSED: Final = "transport-closed"
# Most specific first: the first match names the kind.
KINDS: Final[tuple[tuple[type[McplHostError], str], ...]] = (
    (AuthorizationRequired, AUTH_REQUIRED),
    (AuthorizationError, AUTH_FAILED),
    (SpawnError, _SPAWN_FAILED),
    (TransportError, _TRANSPORT_CLOSED),  # ConnectionClosed included
    (InitializeError, "initialize-error"),
    (VersionError, "version-rejected"),
    (RequestTimeout, TIMEOUT),
    (ConfigurationError, CONFIG_ERROR),
    (LimitExceeded, "limit-exceeded"),
    (OutputSchemaError, OUTPUT_SCHEMA_MISMATCH),
    (RequestError, "request-error"),
    (ProtocolError, "protocol-error"),
)
# TransportError's reason when opening the transport took longer than the timeout.
_CONNECT_TIMEOUT: Final = "connect-timeout"
# A TransportError's reasons that, before the handshake's answer, mean no server was
# there to answer: it could not be started or connected to (DNS, refused, TLS), or it
# ended its stream without a word (a process that exited, a connection closed; over
# HTTP a POST that got no answer at all); "no-endpoint": nothing at the URL speaks MCP.
# Any other reason (a line too long, a session the server expired) is a server that
# answered wrongly: 1.
_UNREACHABLE_REASONS: Final = frozenset(
    {
        "spawn-failed",
        "connect-failed",
        _CONNECT_TIMEOUT,
        "eof",
        "exited",
        "read-failed",
        "write-failed",
        "no-endpoint",
    }
)
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


def exit_status(report: dict[str, Any], method: str | None = None) -> int:
    """The exit status ``report`` means (docs/cli.md, "Error kinds and exit status"):
    0 ok; 3 ok, but ``method`` is ``tools/call`` and the result says ``isError: true``;
    2 a configuration error; 4 authorization required; 5 the authorization flow
    failed; 6 the server could not be reached (:func:`unreachable`); 1 any other
    failure.

    A report of several servers (``--all``) is 0 when every server's is ok, else the
    first of 4, 5, 6 and 1 that some failed server's status is, in that order (what a
    person can fix first: logging in; then what no retry fixes). One entry the host
    cannot use (a ``config-error`` of that server) counts as 1: it is that server's
    failure, not bad usage. Raises nothing.
    """
    servers = report.get("servers")
    if isinstance(servers, dict):
        found = {exit_status(entry) for entry in servers.values() if isinstance(entry, dict)}
        found = {EXIT_FAILED if status == EXIT_USAGE else status for status in found}
        if report.get("ok") and found <= {EXIT_OK}:
            return EXIT_OK
        return next((s for s in _ALL_ORDER if s in found), EXIT_FAILED)
    if report.get("ok"):
        if method == "tools/call" and tool_error(report.get("result")):
            return EXIT_TOOL_ERROR
        return EXIT_OK
    error = report.get("error")
    if not isinstance(error, dict):
        return EXIT_FAILED
    if unreachable(report, error):
        return EXIT_UNREACHABLE
    kind = error.get("kind")
    return _EXIT_BY_KIND.get(kind, EXIT_FAILED) if isinstance(kind, str) else EXIT_FAILED


def unreachable(report: dict[str, Any], error: dict[str, Any]) -> bool:
    """Whether the failure is a server that could not be reached: the handshake never
    had an answer (the report has no ``protocolVersion``) and the error is a
    ``spawn-failed``, a ``transport-closed`` for one of the reasons that mean nobody
    answered (connect-failed: DNS, refused, TLS; eof, exited, read-failed, write-failed:
    the process or connection ended first; no-endpoint), or the ``timeout`` of opening
    the transport (``reason`` connect-timeout). A timeout of the handshake itself is a
    server that was reached and did not answer: not this. Raises nothing."""
    if report.get("protocolVersion") is not None:
        return False
    kind, reason = error.get("kind"), error.get("reason")
    if kind == _SPAWN_FAILED:
        return True
    if kind in (_TRANSPORT_CLOSED, TIMEOUT):
        return reason in _UNREACHABLE_REASONS
    return False


_ALL_ORDER: Final = (EXIT_AUTH_REQUIRED, EXIT_AUTH_FAILED, EXIT_UNREACHABLE, EXIT_FAILED)
_EXIT_BY_KIND: Final = {
    CONFIG_ERROR: EXIT_USAGE,
    AUTH_REQUIRED: EXIT_AUTH_REQUIRED,
    AUTH_FAILED: EXIT_AUTH_FAILED,
}
