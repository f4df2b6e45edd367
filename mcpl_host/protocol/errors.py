"""JSON-RPC error codes and the root of mcpl_host's exception tree.

Every exception the library raises derives from :class:`McplHostError`, so an embedder
can catch one type. Each carries the facts a caller acts on (code, message, data, the
server it concerns, whether retrying can help) instead of a formatted string only.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "RESOURCE_NOT_FOUND",
    "UNSUPPORTED_VERSION",
    "AuthorizationError",
    "AuthorizationRequired",
    "CapabilityDenied",
    "ConfigurationError",
    "ConnectionClosed",
    "HeaderMismatch",
    "InitializeError",
    "InputRequestError",
    "InvalidToolError",
    "LimitExceeded",
    "McplHostError",
    "MissingClientCapability",
    "OutputSchemaError",
    "ProtocolError",
    "RequestError",
    "RequestTimeout",
    "ResourceNotFound",
    "SpawnError",
    "TransportError",
    "UnsupportedVersion",
    "VersionError",
    "request_error",
]

# JSON-RPC 2.0, section 5.1.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# MCP's resource not found up to 2025-11-25; 2026-07-28 uses INVALID_PARAMS.
RESOURCE_NOT_FOUND = -32002
# MCP 2026-07-28 (each also an HTTP 400).
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022


class McplHostError(Exception):
    """Root of every error mcpl_host raises.

    ``permanent`` is true when repeating the same attempt cannot succeed (a bad
    configuration, a protocol revision outside the allowlist): a reconnect supervisor
    never retries such an error.
    """

    permanent: bool = False

    def __init__(self, message: str, *, server: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.server = server

    def __str__(self) -> str:
        if self.server is None:
            return self.message
        return f"[{self.server}] {self.message}"


class ConfigurationError(McplHostError):
    """The host was configured with something it cannot use (never retried)."""

    permanent = True


class ProtocolError(McplHostError):
    """The peer broke the protocol in a way that ends the exchange."""


class OutputSchemaError(ProtocolError):
    """A tool's result does not match the ``outputSchema`` the tool declared. Nothing is
    lost: ``result`` is the whole result, ``violations`` what did not match (empty when
    ``structuredContent`` was missing), ``tool`` the tool's name."""

    def __init__(
        self,
        message: str,
        *,
        tool: str,
        result: Any,
        violations: list[Any],
        server: str | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.tool = tool
        self.result = result
        self.violations = violations


class InvalidToolError(ProtocolError):
    """A tool the server listed with malformed ``x-mcp-header`` annotations (2026-07-28):
    it is left out of ``list_tools`` and never called; calling it raises this, with
    nothing sent. ``tool`` is its name, ``reason`` what is wrong (in the host's words)."""

    def __init__(self, message: str, *, tool: str, reason: str, server: str | None = None):
        super().__init__(message, server=server)
        self.tool = tool
        self.reason = reason


class InputRequestError(ProtocolError):
    """2026-07-28 (MRTR): a result asked for input the host cannot give, so the call
    ends here and nothing is sent again: ``method`` is a method the revision does not let
    a result ask for, or one the host has no hook for (and so never declared the
    capability of), or its ``params`` do not fit. ``key`` names the entry of
    ``inputRequests``; both are the server's text, escaped and cut in the message only."""

    def __init__(self, message: str, *, key: str, method: str, server: str | None = None):
        super().__init__(message, server=server)
        self.key = key
        self.method = method


class VersionError(ProtocolError):
    """The server chose a protocol revision outside the host's allowlist (never retried)."""

    permanent = True

    def __init__(
        self,
        message: str,
        *,
        offered: str,
        answered: object,
        allowed: tuple[str, ...],
        server: str | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.offered = offered
        self.answered = answered
        self.allowed = allowed


class InitializeError(McplHostError):
    """The server answered ``initialize`` with a JSON-RPC error.

    ``code``, ``message`` and ``data`` are the server's own (``message`` escaped, cut
    and redacted by whoever raised this). ``request_id_present`` is false when the
    server's error named no request (``"id": null`` or no id): MCP lets a server answer
    a request it could not read that way, and during the handshake it can only mean
    ``initialize``.
    """

    def __init__(
        self,
        code: int | None,
        message: str,
        data: Any = None,
        *,
        request_id_present: bool = True,
        server: str | None = None,
    ) -> None:
        text = (
            f"initialize failed: {message}"
            if code is None
            else (f"initialize failed ({code}): {message}")
        )
        super().__init__(text, server=server)
        self.code = code
        self.server_message = message
        self.data = data
        self.request_id_present = request_id_present


class TransportError(McplHostError):
    """The byte stream to the server could not be opened, or broke.

    ``reason`` is a short machine-readable word (``"eof"``, ``"exited"``, ``"write-failed"``,
    ``"read-failed"``, ``"closed"``); the message is safe to show (redacted).
    """

    def __init__(self, message: str, *, reason: str = "closed", server: str | None = None) -> None:
        super().__init__(message, server=server)
        self.reason = reason


class SpawnError(TransportError):
    """A stdio server's process could not be started (missing program, permissions).

    ``permanent`` when starting it again the same way cannot succeed: the program or
    its working directory is missing, not executable, not a program (the stdio
    transport decides by the OS error); a lack of resources (too many processes or
    open files) is not.
    """

    def __init__(self, message: str, *, permanent: bool = False, server: str | None = None):
        super().__init__(message, reason="spawn-failed", server=server)
        self.permanent = permanent


class ConnectionClosed(TransportError):
    """The connection was closed (by ``aclose()`` or by the transport's loss).

    ``outcome_unknown`` is true for a request that was written and never answered: the
    server may or may not have acted on it.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str = "closed",
        outcome_unknown: bool = False,
        server: str | None = None,
    ) -> None:
        super().__init__(message, reason=reason, server=server)
        self.outcome_unknown = outcome_unknown


class RequestTimeout(McplHostError):
    """A request (or the handshake) got no answer in time. ``method`` names it."""

    def __init__(self, message: str, *, method: str, timeout: float, server: str | None = None):
        super().__init__(message, server=server)
        self.method = method
        self.timeout = timeout


class RequestError(McplHostError):
    """The server answered a request with a JSON-RPC error.

    ``code`` is the server's integer code, or None when its error member had none (no
    ``code``, or one that is not an integer): the host does not invent one.

    Raised by a handler, it becomes the error answer (its ``code``, ``message`` and
    ``data``) of the server's request the handler was serving; a None ``code`` is
    answered -32603, since an error answer must carry an integer code.
    """

    def __init__(
        self, code: int | None, message: str, data: Any = None, *, server: str | None = None
    ) -> None:
        super().__init__(f"{message} ({'no code' if code is None else code})", server=server)
        self.code = code
        self.error_message = message
        self.data = data


class CapabilityDenied(McplHostError):
    """MCPL: the host may not send ``method`` under the grant in force (MCPL §5.3: a
    host-to-server method is sent only if granted), so nothing was written.

    ``capabilities`` are the paths any one of which would allow it (one for most
    methods, a leaf of ``contextHooks.beforeInference`` for ``context/beforeInference``);
    ``capability`` is the first. Between transports, and on a transport before the
    receipt of its grant, nothing is granted.
    """

    def __init__(
        self, method: str, capabilities: tuple[str, ...], *, server: str | None = None
    ) -> None:
        super().__init__(
            f"{method} is not granted: it needs {' or '.join(capabilities)}", server=server
        )
        self.method = method
        self.capabilities = capabilities
        self.capability = capabilities[0]


class LimitExceeded(McplHostError):
    """A bound of the connection would be passed, so nothing was done. ``limit`` names
    the option (``"max_subscriptions"``), ``value`` is its setting."""

    def __init__(self, message: str, *, limit: str, value: int, server: str | None = None):
        super().__init__(message, server=server)
        self.limit = limit
        self.value = value


class AuthorizationRequired(McplHostError):
    """An HTTP server answered 401 (or 403) and the host could not authorize: no
    ``auth`` was configured, the configured one cannot run without a person (no
    redirect hook), or a fresh token was refused again. ``status`` is the HTTP status;
    ``challenge`` holds the parameters of the server's ``WWW-Authenticate`` (``realm``,
    ``scope``, ``error``, ``resource_metadata``...), peer text cut and escaped; a value
    never carries a credential of the host's. Permanent: asking again the same way
    cannot succeed.
    """

    permanent = True

    def __init__(
        self,
        message: str,
        *,
        status: int = 401,
        challenge: dict[str, str] | None = None,
        server: str | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.status = status
        self.challenge: dict[str, str] = dict(challenge or {})


class AuthorizationError(McplHostError):
    """The authorization flow failed: the authorization server refused a step or
    answered something the rules forbid accepting (a wrong ``issuer``, a ``resource``
    that is not this server, an ``iss`` that does not match). ``step`` names the step
    (``"protected-resource-metadata"``, ``"authorization-server-metadata"``,
    ``"registration"``, ``"authorization"``, ``"token"``, ``"refresh"``...), ``rule``
    the rule broken (``"RFC 8414 section 3.3"``) or None for a plain refusal, and
    ``error`` the server's OAuth ``error`` code when it gave one. Permanent.
    """

    permanent = True

    def __init__(
        self,
        message: str,
        *,
        step: str,
        rule: str | None = None,
        error: str | None = None,
        server: str | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.step = step
        self.rule = rule
        self.error = error


class HeaderMismatch(RequestError):
    """2026-07-28: the server found an HTTP header that disagrees with the request body
    (-32020), such as ``MCP-Protocol-Version`` against ``_meta``'s version."""


class MissingClientCapability(RequestError):
    """2026-07-28: the request needs a client capability the host did not declare
    (-32021). ``required`` is the server's ``data.requiredCapabilities`` when it is an
    object, else empty."""

    def __init__(
        self, code: int | None, message: str, data: Any = None, *, server: str | None = None
    ) -> None:
        super().__init__(code, message, data, server=server)
        required = data.get("requiredCapabilities") if isinstance(data, dict) else None
        self.required: dict[str, Any] = required if isinstance(required, dict) else {}


class UnsupportedVersion(RequestError):
    """2026-07-28: the server does not speak the revision the request named (-32022).
    ``supported`` is the server's ``data.supported`` when it is a list of strings, else
    empty. Permanent: the same request with the same revision cannot succeed."""

    permanent = True

    def __init__(
        self, code: int | None, message: str, data: Any = None, *, server: str | None = None
    ) -> None:
        super().__init__(code, message, data, server=server)
        supported = data.get("supported") if isinstance(data, dict) else None
        self.supported: tuple[str, ...] = (
            tuple(v for v in supported if isinstance(v, str)) if isinstance(supported, list) else ()
        )


class ResourceNotFound(RequestError):
    """``resources/read`` of a URI the server does not have: -32002 (MCP up to
    2025-11-25, still accepted) or, on 2026-07-28, -32602. ``uri`` is the URI asked for."""

    def __init__(
        self,
        code: int | None,
        message: str,
        data: Any = None,
        *,
        uri: str = "",
        server: str | None = None,
    ) -> None:
        super().__init__(code, message, data, server=server)
        self.uri = uri


_TYPED: dict[int, type[RequestError]] = {
    HEADER_MISMATCH: HeaderMismatch,
    MISSING_CLIENT_CAPABILITY: MissingClientCapability,
    UNSUPPORTED_VERSION: UnsupportedVersion,
}


def request_error(
    code: int | None, message: str, data: Any = None, *, server: str | None = None
) -> RequestError:
    """The server's error answer as the :class:`RequestError` its code names (a subclass
    for the codes a host acts on), so a caller can catch the one it handles."""
    kind = _TYPED.get(code, RequestError) if code is not None else RequestError
    return kind(code, message, data, server=server)
