from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from mcpl_host import Connection
from mcpl_host.protocol.profiles import KNOWN_REVISIONS, handshake_era

from .peer import Peer, memory_connection


@asynccontextmanager
async def connected(
    version: str = "2025-11-25", **kwargs: Any
) -> AsyncIterator[tuple[Connection, Peer, trio.Nursery]]:
    """A connection that has finished its handshake with a scripted peer.

    The host speaks only the handshake era here (no ``server/discover`` first): these
    tests are about what follows ``initialize``; tests/driver/test_dual_era.py covers
    the opening of a dual-era host."""
    kwargs.setdefault("versions", handshake_era(KNOWN_REVISIONS))
    conn, peer = memory_connection(**kwargs)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.handshake, version)
        async with conn:
            yield conn, peer, nursery
        nursery.cancel_scope.cancel()
