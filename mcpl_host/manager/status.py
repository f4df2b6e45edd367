"""Where each managed server stands: one immutable value per server, replaced on change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..protocol.errors import McplHostError

__all__ = ["ServerState", "ServerStatus"]

ServerState: TypeAlias = Literal[
    "connecting", "ready", "reconnecting", "failed", "disabled", "closed"
]
"""``connecting``: an attempt to connect is running (none has succeeded yet);
``ready``: usable; ``reconnecting``: the transport was lost and the connection's policy
is replacing it; ``failed``: the last attempt failed (``error`` says why), tried again
at ``retry_at`` when ``retrying``, given up for good when not; ``disabled``: disabled
in the configuration, never started; ``closed``: closed by the host."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server's state.

    ``error`` is the last failure: while ``connecting`` again after a failed attempt,
    why that attempt failed; while ``reconnecting``, how the transport was lost; when
    ``failed``, why. ``retrying`` is true for a ``failed`` server that will be tried
    again by itself (a transient error under the reconnect policy), at ``retry_at`` on
    trio's clock; false in every other state, and for a failure that is final (a
    permanent error, the policy's attempts used up, no policy). ``retry_at`` is also
    set while ``reconnecting``: when the connection's next attempt starts (from its
    ``Reconnecting`` event; a time past means it has started); None otherwise.

    ``failures`` counts the connect attempts that failed since the server was last
    ready (0 while ready; the attempt that made it ``failed`` included); while
    reconnecting, as the connection counts them (its ``Reconnecting`` events: a
    connection that ended within ``Reconnect.stable`` seconds of its handshake is one).
    ``protocol_version`` and ``server_info`` are those of the last successful
    handshake. ``since`` is when the server entered this state, on trio's clock
    (``trio.current_time()``); None before the manager has started.
    """

    name: str
    state: ServerState
    error: McplHostError | None = None
    protocol_version: str | None = None
    server_info: dict[str, Any] = field(default_factory=dict)
    since: float | None = None
    failures: int = 0
    retrying: bool = False
    retry_at: float | None = None

    @property
    def settled(self) -> bool:
        """True when waiting longer changes nothing by itself: ``ready``, or ended
        (``failed`` and not retrying, ``disabled``, ``closed``). What
        :meth:`ConnectionManager.wait_ready` waits for."""
        if self.state == "failed":
            return not self.retrying
        return self.state in ("ready", "disabled", "closed")

    @property
    def usable(self) -> bool:
        """True when requests can be made: ready, or reconnecting (a request then
        waits, within its timeout, for the new transport)."""
        return self.state in ("ready", "reconnecting")
