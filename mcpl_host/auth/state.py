"""What the flow keeps per MCP server, and per request."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from ..protocol.errors import McplHostError
from .jose import DpopKey
from .metadata import AuthServerMetadata
from .records import ClientInfo, TokenSet

__all__ = ["ServerState", "Tries"]


@dataclass(slots=True)
class Tries:
    """What one request has tried so far: each remedy at most so often, so no server
    can keep the host authorizing forever."""

    flows: int = 0
    refreshes: int = 0
    step_ups: int = 0
    nonces: int = 0
    replaced: int = 0  # sent again because another request had replaced the token
    # False: a refresh (or a DPoP nonce) at most, never the flow or a step-up: for the
    # requests no caller waits on (the GET stream, the closing DELETE), which a server
    # could otherwise make ask the person again at every reopening.
    may_authorize: bool = True


@dataclass(slots=True)
class ServerState:
    """What is known of one MCP server (by its canonical URL)."""

    url: str
    lock: trio.Lock = field(default_factory=trio.Lock)
    issuer: str | None = None
    metadata: AuthServerMetadata | None = None
    resource: str | None = None
    client: ClientInfo | None = None
    tokens: TokenSet | None = None
    scope: str | None = None
    scopes_supported: list[str] | None = None  # the protected resource's
    dpop: DpopKey | None = None
    nonces: dict[str, str] = field(default_factory=dict)
    # The last flow that failed: the token it was run for, when, and why. Requests that
    # queued on the lock for the same refused token fail with it rather than each run
    # the flow (and ask the person) again.
    failed: tuple[str | None, float, McplHostError] | None = None
