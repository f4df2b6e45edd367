"""What an embedder configures for MCPL: the grant patterns and the hooks.

Pure configuration (no trio): :class:`Mcpl` is given to a :class:`~mcpl_host.Connection`
as ``mcpl=``; the connection then advertises ``capabilities.experimental.mcpl``, sends
the grant (``featureSets/update``) after each handshake, and routes the server's MCPL
methods to these hooks, gated by the grant in force.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import msgspec

from ..protocol.envelope import RequestId
from ..protocol.errors import ConfigurationError

__all__ = ["ChunkSender", "Mcpl", "McplContext", "McplHook"]


ChunkSender: TypeAlias = Callable[[Any], Awaitable[None]]
"""Sends one ``inference/chunk`` (its ``index`` counts from 0) before the answer."""


@dataclass(frozen=True, slots=True)
class McplContext:
    """Which server asks, under which request id (None for a notification or an
    ``id: null`` request), and, for a streamed ``inference/request`` with a usable id,
    how to send its chunks (``stream`` is None otherwise: answer with the whole result)."""

    server: str
    request_id: RequestId | None
    stream: ChunkSender | None = None


McplHook: TypeAlias = Callable[[msgspec.Struct, McplContext], Awaitable[Any]]
"""An MCPL hook: typed params (:mod:`mcpl_host.mcpl.types`) and the context in, the
result out (a Struct of :mod:`mcpl_host.mcpl.types` or a plain dict; ignored for a
notification). Raise :class:`~mcpl_host.RequestError` to answer with an error."""


@dataclass(frozen=True)
class Mcpl:
    """``grants``: capability patterns the host grants (``*`` matches one segment; a bare
    parent grants none of its leaves); what the server advertised and these grant is
    the effective grant. ``hooks``: by inbound method (``push/event``,
    ``inference/request``, ``model/info``, ``channels/register``, ``channels/changed``,
    ``channels/list``, ``channels/incoming``, ``tools/observe``, ``host/command``,
    ``mcpl/manifestChanged``). ``max_held_notifications`` bounds the notifications held
    while a reconnect waits for its grant (requests are never dropped).
    ``max_queued_notifications`` (at least 1) bounds the admitted notifications waiting
    for their hooks, which run one at a time in arrival order; past either bound the
    oldest waiting notification is dropped, with a warning.
    ``update_timeout``: how long a ``featureSets/update`` waits for its receipt.

    Raises :class:`~mcpl_host.ConfigurationError` for a bound below its minimum."""

    grants: tuple[str, ...] = ()
    hooks: Mapping[str, McplHook] = field(default_factory=dict)
    max_held_notifications: int = 1000
    update_timeout: float = 15.0
    max_queued_notifications: int = 1000

    def __post_init__(self) -> None:
        if self.max_queued_notifications < 1:
            raise ConfigurationError("Mcpl.max_queued_notifications must be at least 1")
        if self.max_held_notifications < 0:
            raise ConfigurationError("Mcpl.max_held_notifications must be at least 0")
