"""Where each managed server stands: one immutable value per server, replaced on change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..protocol.errors import McplHostError

__all__ = ["ServerState", "ServerStatus"]

ServerState: TypeAlias = Literal[
    "connecting", "connected", "reconnecting", "failed", "disabled", "closed"
]
"""``connecting``: no connection yet (first attempts, retried under the policy);
``connected``: usable; ``reconnecting``: the transport was lost and the connection's
policy is replacing it; ``failed``: given up for good (``error`` says why);
``disabled``: disabled in the configuration, never started; ``closed``: closed by the
host."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server's state.

    ``error`` is the last failure: while ``connecting``, why the last attempt failed;
    while ``reconnecting``, how the transport was lost; when ``failed``, why the server
    was given up. ``failures`` counts failed attempts since the server was last connected
    (0 while connected). ``protocol_version`` and ``server_info`` are those of the last
    successful handshake. ``since`` is when the server entered this state, on trio's
    clock (``trio.current_time()``); None before the manager has started.
    """

    name: str
    state: ServerState
    error: McplHostError | None = None
    protocol_version: str | None = None
    server_info: dict[str, Any] = field(default_factory=dict)
    since: float | None = None
    failures: int = 0

    @property
    def settled(self) -> bool:
        """True when waiting longer changes nothing by itself: connected, or ended
        (``failed``, ``disabled``, ``closed``). What :meth:`ConnectionManager.wait_ready`
        waits for."""
        return self.state in ("connected", "failed", "disabled", "closed")

    @property
    def usable(self) -> bool:
        """True when requests can be made: connected, or reconnecting (a request then
        waits, within its timeout, for the new transport)."""
        return self.state in ("connected", "reconnecting")
