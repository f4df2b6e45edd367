"""What a refusal is counted as: the reason on ``mcpl_host.refusals``.

Every message of the server's that the host refuses before any handler (answered with an
error at once) or drops (past a bound, or out of turn) counts once, under one of these
fixed names: never the peer's method text, so the metric stays low-cardinality however
many names a hostile server makes up. The names are the driver's own outcomes
(:class:`~mcpl_host.protocol.envelope.Outcome`) where one says it, else a short reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..protocol.envelope import Outcome

if TYPE_CHECKING:
    from .epoch import Epoch

__all__ = [
    "BUSY",
    "DENIED",
    "DROPPED",
    "IGNORED",
    "INVALID",
    "METHOD_NOT_FOUND",
    "OVERSIZED",
    "UNMATCHED",
    "count",
]

METHOD_NOT_FOUND: Final = "method-not-found"  # -32601: no handler, or not on this revision
BUSY: Final = "busy"  # -32603: too many server requests in flight (or held)
INVALID: Final = Outcome.ANSWERED_INVALID.value  # -32600, or a refused batch
DENIED: Final = Outcome.DENIED_BY_POLICY.value  # MCPL: the grant in force does not allow it
OVERSIZED: Final = "oversized"  # a line past max_message_bytes, dropped unread
IGNORED: Final = Outcome.IGNORED.value  # out of turn (before the handshake), or unusable
DROPPED: Final = "dropped"  # a notification past a queue's bound (MCPL's hold or hooks)
UNMATCHED: Final = Outcome.RESPONSE_UNMATCHED.value  # an answer to no request of the host's


def count(epoch: Epoch, reason: str) -> None:
    """Count one refusal on ``epoch``'s connection (nothing when telemetry is off)."""
    if epoch.telemetry is not None:
        epoch.telemetry.refused(reason)
