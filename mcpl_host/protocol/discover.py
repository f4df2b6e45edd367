"""The stateless revision's way in: ``server/discover``, and the ``_meta`` every request
carries (MCP 2026-07-28, ``basic/versioning`` and ``server/discover``).

There is no handshake on 2026-07-28: each request names its revision, the client's
capabilities and the client itself in ``params._meta``. The host still asks
``server/discover`` first, on every transport, for three reasons: it is how a dual-era
client tells a stateless server from a handshake-era one (a ``DiscoverResult`` or a
modern error means stateless; any other error means handshake era), it gives the
server's capabilities, instructions and serverInfo that the typed client and the
embedder use, and it proves the server is there before ``Connected`` is said.

:class:`Discovery` is the state machine the reader feeds while that answer is due, as
:class:`~mcpl_host.protocol.handshake.Handshake` is for ``initialize``; it decides,
the driver acts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from .envelope import Batch, Classified, Ignored, InvalidRequest, Notification, Outcome, Request
from .envelope import Response as _Response
from .errors import (
    HEADER_MISMATCH,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_VERSION,
    McplHostError,
    VersionError,
    request_error,
)
from .handshake import (
    Established,
    Failed,
    InitializeResult,
    Send,
    Skip,
    answer_ping,
    describe_error_member,
)
from .messages import OutRequest, encode, params_object
from .profiles import PROFILES, handshake_era, stateless_era
from .redact import Redactor

__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "LOG_LEVEL",
    "MODERN_ERRORS",
    "PROTOCOL_VERSION",
    "SERVER_INFO",
    "Discovery",
    "Fallback",
    "Retry",
    "request_meta",
    "with_meta",
]

# The reserved ``_meta`` keys of 2026-07-28.
PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"

#: Error codes only a stateless server sends: each is proof of the era.
MODERN_ERRORS: Final = frozenset({HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_VERSION})


def request_meta(
    revision: str,
    capabilities: Mapping[str, Any],
    client_info: Mapping[str, Any],
    log_level: str | None = None,
) -> dict[str, Any]:
    """The ``_meta`` members a 2026-07-28 request must (version, capabilities) and
    should (client info) carry; ``log_level`` asks for the server's log messages on
    this request (without it a server sends none)."""
    meta: dict[str, Any] = {
        PROTOCOL_VERSION: revision,
        CLIENT_CAPABILITIES: dict(capabilities),
        CLIENT_INFO: dict(client_info),
    }
    if log_level is not None:
        meta[LOG_LEVEL] = log_level
    return meta


def with_meta(params: Any, meta: Mapping[str, Any]) -> Any:
    """``params`` with ``meta`` merged into its ``_meta`` (the caller's own keys, such as
    a progress token, kept; the revision's keys win). Params that are not an object are
    returned unchanged: the request is sent as the caller wrote it and the server judges.
    """
    obj = params_object(params)
    if obj is None:
        return params
    own = obj.get("_meta")
    merged = {**own, **meta} if isinstance(own, dict) else dict(meta)
    return {**obj, "_meta": merged}


class DiscoverResult(msgspec.Struct, frozen=True, rename="camel"):
    """What ``server/discover`` answers; unknown members are dropped."""

    supported_versions: list[str]
    capabilities: dict[str, Any] = msgspec.field(default_factory=dict)
    instructions: str | None = None
    # Where 2026-07-28 puts it is ``_meta``; some servers also set it here.
    server_info: dict[str, Any] | None = None
    meta: dict[str, Any] = msgspec.field(default_factory=dict, name="_meta")


class Fallback(msgspec.Struct, frozen=True, gc=False):
    """The server is of the handshake era (or would not say): run ``initialize``."""

    reason: str
    outcome: Outcome = Outcome.RESPONSE_MATCHED
    # The error code the server refused server/discover with (None: it answered, with
    # no stateless revision): what the request's span ends with.
    code: int | None = None


class Retry(msgspec.Struct, frozen=True, gc=False):
    """The server named a stateless revision both sides speak: ask again with it."""

    revision: str
    outcome: Outcome = Outcome.RESPONSE_MATCHED


_RESULT: Final = msgspec.json.Decoder(DiscoverResult)


class Discovery:
    """One ``server/discover`` exchange on one transport epoch."""

    def __init__(
        self,
        *,
        allowlist: tuple[str, ...],
        request_id: int,
        capabilities: Mapping[str, Any],
        client_info: Mapping[str, Any],
        revision: str | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        """``allowlist`` comes from :func:`.profiles.validate_allowlist`; it must hold a
        stateless revision. ``revision`` is the one to ask with (default: the newest)."""
        self.allowlist = allowlist
        self.modern = stateless_era(allowlist)
        if not self.modern:
            raise ValueError("server/discover needs a stateless revision in the allowlist")
        self.offered = revision or self.modern[0]
        self.request_id = request_id
        self.settled = False
        self._capabilities = dict(capabilities)
        self._client_info = dict(client_info)
        self._redactor = redactor or Redactor()

    def request(self, trace: Mapping[str, str] | None = None) -> bytes:
        """The ``server/discover`` request line; ``trace``: the trace context its
        ``_meta`` carries too (:mod:`.trace`)."""
        meta = request_meta(self.offered, self._capabilities, self._client_info)
        if trace:
            meta = {**meta, **trace}
        return encode(
            OutRequest(id=self.request_id, method="server/discover", params={"_meta": meta})
        )

    def receive(
        self, item: Classified | Batch
    ) -> Send | Skip | Established | Failed | Fallback | Retry:
        """Decide what one inbound item means while the discover answer is due."""
        if self.settled:
            return Skip("discovery is already settled", Outcome.IGNORED)
        match item:
            case _Response(id=self.request_id) if type(item.id) is int:
                step = self._answer(item)
                self.settled = True
                return step
            case _Response() if item.names_no_request:
                # An id-less error names the one request it could not read: discover,
                # the only one out (as it is initialize's answer in the handshake).
                step = self._error(item)
                self.settled = True
                return step
            case _Response():
                return Skip("a response to no request of the host", Outcome.RESPONSE_UNMATCHED)
            case Request(method="ping"):
                return answer_ping(item)
            case Request() | Notification() | InvalidRequest() | Batch():
                return Skip("a message before server/discover was answered", Outcome.IGNORED)
            case Ignored():
                return Skip(item.reason, Outcome.IGNORED)

    def _answer(self, response: _Response) -> Established | Failed | Fallback | Retry:
        if response.error is not None:
            return self._error(response)
        try:
            result = _RESULT.decode(response.result if response.result is not None else b"null")
        except (msgspec.DecodeError, RecursionError):
            # Not a DiscoverResult: no proof of the stateless era.
            return self._fallback("the server/discover answer is not a DiscoverResult")
        mutual = [v for v in self.modern if v in result.supported_versions]
        if not mutual:
            # It answers discover but lists no stateless revision the host allows: that
            # is a handshake-era advertisement (some servers do this), not a refusal.
            return self._fallback("server/discover lists no allowed stateless revision")
        chosen = self.offered if self.offered in mutual else mutual[0]
        if chosen != self.offered:
            return Retry(chosen)
        info = result.meta.get(SERVER_INFO)
        server_info = info if isinstance(info, dict) else result.server_info or {}
        return Established(
            profile=PROFILES[chosen],
            result=InitializeResult(
                protocol_version=chosen,
                capabilities=result.capabilities,
                server_info=server_info,
                instructions=result.instructions,
            ),
            raw_result=response.result or msgspec.Raw(b"{}"),
            initialized=None,
        )

    def _error(self, response: _Response) -> Failed | Fallback | Retry:
        code, message, data = describe_error_member(response.error, self._redactor)
        if code not in MODERN_ERRORS:
            # Any other error is how a handshake-era server refuses a method it does not
            # know before initialize (the codes vary, so no one code is keyed on).
            return self._fallback(f"server/discover was refused ({code}): {message}", code)
        error = request_error(code, message, data)
        if code == UNSUPPORTED_VERSION:
            supported = getattr(error, "supported", ())
            mutual = [v for v in self.modern if v in supported]
            if mutual:
                # Another revision both speak is asked with; the offered one again when it
                # is the only one (the refusal then said nothing the host can act on but
                # to ask once more: the driver asks at most twice, then fails).
                others = [v for v in mutual if v != self.offered]
                return Retry((others or mutual)[0])
            if any(v in handshake_era(self.allowlist) for v in supported):
                return self._fallback("the server speaks only handshake-era revisions")
            return Failed(
                VersionError(
                    f"the server speaks none of the allowed revisions "
                    f"(it supports: {self._redactor.log_json(list(supported))}; "
                    f"allowed: {', '.join(self.allowlist)})",
                    offered=self.offered,
                    answered=list(supported),
                    allowed=self.allowlist,
                )
            )
        return Failed(error)

    def _fallback(self, reason: str, code: int | None = None) -> Fallback | Failed:
        if handshake_era(self.allowlist):
            return Fallback(reason, code=code)
        failure: McplHostError = VersionError(
            f"the server is not of the stateless era ({reason}) and the allowlist has no "
            f"handshake-era revision (allowed: {', '.join(self.allowlist)})",
            offered=self.offered,
            answered=None,
            allowed=self.allowlist,
        )
        return Failed(failure)
