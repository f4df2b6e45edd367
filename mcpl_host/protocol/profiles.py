"""Per-revision wire profiles and the host's version allowlist (DESIGN 3.3).

A profile records only the facts the host acts on. Every wire behaviour that differs by
revision is read from here, so a rule like "batches are refused after 2025-03-26" lives
in exactly one place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Final

from .errors import ConfigurationError, VersionError
from .redact import log_value

__all__ = [
    "KNOWN_REVISIONS",
    "PROFILES",
    "Profile",
    "era_of",
    "handshake_era",
    "negotiate",
    "stateless_era",
    "validate_allowlist",
]


@dataclass(frozen=True, slots=True)
class Profile:
    """The wire facts of one MCP revision, as a host-side client needs them."""

    revision: str
    #: Inbound JSON arrays are handled entry by entry (else refused with one -32600).
    accepts_batches: bool
    #: The host may write a batch (never containing ``initialize``).
    may_send_batches: bool
    #: Streamable HTTP requests carry ``MCP-Protocol-Version`` after initialize.
    version_header: bool
    #: The revision lets an error answer carry no ``id`` (for an unreadable request).
    error_without_id: bool
    #: Requests a server may send the host.
    server_requests: frozenset[str]
    #: ``notifications/progress`` may carry ``message``; a timeout may reset on progress.
    progress_message: bool
    #: Requests can be augmented into tasks (``tasks/*``, ``params.task``).
    tasks: bool
    #: ``elicitation/create`` may use ``mode: "url"``.
    url_elicitation: bool
    #: On timeout the client SHOULD send ``notifications/cancelled`` (R2 made it explicit;
    #: the host does so on every revision, since R1 already allows it).
    cancel_on_timeout: bool = True
    #: The stateless revision (2026-07-28): no initialize, no session, ``_meta`` on every
    #: request, ``server/discover``; results carry ``resultType``; servers send no requests.
    stateless: bool = False
    #: What a result may ask the host for (``input_required``'s ``inputRequests``, MRTR):
    #: the stateless revision's stand-in for server requests.
    input_requests: frozenset[str] = frozenset()
    #: Tasks come through the extension ``io.modelcontextprotocol/tasks``: named in each
    #: request's capabilities, chosen by the server (``resultType: "task"``).
    task_extension: bool = False


_BASE_SERVER_REQUESTS: Final = frozenset({"ping", "roots/list", "sampling/createMessage"})
_ELICITATION: Final = frozenset({"elicitation/create"})
_TASKS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})

# Each revision is written as what changed from the one before, so a difference between
# revisions reads as one line here.
_R1: Final = Profile(
    revision="2024-11-05",
    # Plain JSON-RPC 2.0, which has always defined batches.
    accepts_batches=True,
    may_send_batches=False,
    version_header=False,
    error_without_id=False,
    server_requests=_BASE_SERVER_REQUESTS,
    progress_message=False,
    tasks=False,
    url_elicitation=False,
)
# Batching spelled out (receive MUST, send MAY); progress gains a message.
_R2: Final = replace(_R1, revision="2025-03-26", may_send_batches=True, progress_message=True)
# Batching removed; the HTTP version header; elicitation.
_R3: Final = replace(
    _R2,
    revision="2025-06-18",
    accepts_batches=False,
    may_send_batches=False,
    version_header=True,
    server_requests=_BASE_SERVER_REQUESTS | _ELICITATION,
)
# Error answers may omit the id; tasks; URL-mode elicitation.
_R4: Final = replace(
    _R3,
    revision="2025-11-25",
    error_without_id=True,
    server_requests=_BASE_SERVER_REQUESTS | _ELICITATION | _TASKS,
    tasks=True,
    url_elicitation=True,
)

# Stateless: no handshake or session; servers ask for input through results (MRTR), so
# they send no requests; tasks moved to an extension negotiated on its own.
_R5: Final = replace(
    _R4,
    revision="2026-07-28",
    server_requests=frozenset(),
    tasks=False,
    task_extension=True,
    stateless=True,
    input_requests=frozenset({"roots/list", "sampling/createMessage"}) | _ELICITATION,
)

PROFILES: Final[Mapping[str, Profile]] = MappingProxyType(
    {p.revision: p for p in (_R1, _R2, _R3, _R4, _R5)}
)

KNOWN_REVISIONS: Final = tuple(sorted(PROFILES))
"""Every revision the host implements, oldest first (ISO dates sort as text)."""


def validate_allowlist(versions: Iterable[str] | None = None) -> tuple[str, ...]:
    """Check a configured allowlist; return it deduplicated, newest first.

    ``None`` means every revision the host implements.

    Raises :class:`ConfigurationError` for an empty list or a revision the host does not
    implement.
    """
    if versions is None:
        return tuple(reversed(KNOWN_REVISIONS))
    if isinstance(versions, str):
        raise ConfigurationError("the version allowlist must be a list of revisions, not a string")
    chosen = list(dict.fromkeys(versions))
    if not chosen:
        raise ConfigurationError("the version allowlist is empty: allow at least one revision")
    unknown = [v for v in chosen if v not in PROFILES]
    if unknown:
        details = ", ".join(repr(v) for v in unknown)
        raise ConfigurationError(
            f"unknown protocol revision in the allowlist: {details}; "
            f"known: {', '.join(KNOWN_REVISIONS)}"
        )
    return tuple(sorted(chosen, reverse=True))


def handshake_era(allowlist: Iterable[str]) -> tuple[str, ...]:
    """The revisions of ``allowlist`` that ``initialize`` can offer, in its order."""
    return tuple(v for v in allowlist if not PROFILES[v].stateless)


def stateless_era(allowlist: Iterable[str]) -> tuple[str, ...]:
    """The revisions of ``allowlist`` reached by ``server/discover``, in its order."""
    return tuple(v for v in allowlist if PROFILES[v].stateless)


def era_of(revision: str) -> str:
    """``"stateless"`` for a revision without initialize, else ``"handshake"`` (an
    unknown revision counts as the handshake era, the only one older revisions had)."""
    profile = PROFILES.get(revision)
    return "stateless" if profile is not None and profile.stateless else "handshake"


def negotiate(
    allowlist: tuple[str, ...],
    answered: object,
    safe: Callable[[str, int], str] = log_value,
) -> Profile | VersionError:
    """The profile for the server's ``protocolVersion``, or the permanent error to raise.

    ``allowlist`` is what :func:`validate_allowlist` returned; its first entry is what
    the host offered. The server may answer another revision; the host accepts it only
    when it is in the allowlist. ``safe`` makes the answered text fit for the error's
    message (a connection's ``Redactor.log_value``, which also masks its secrets).
    """
    if isinstance(answered, str) and answered in allowlist:
        return PROFILES[answered]
    if isinstance(answered, str):
        what = f"protocol revision {safe(answered, 64)}, which is not allowed"
    else:
        what = "no protocol revision (protocolVersion must be a string)"
    return VersionError(
        f"the server chose {what} (allowed: {', '.join(allowlist)})",
        offered=allowlist[0],
        answered=answered,
        allowed=allowlist,
    )
