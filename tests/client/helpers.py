"""A scripted server for the typed-call tests: answers each request by its method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..driver.peer import Peer

Json = Any


class Answers:
    """Answers requests from a table (method -> result, or a function of the request);
    records every message the host sent after the handshake."""

    def __init__(self, peer: Peer, table: dict[str, Json | Callable[[Json], Json]]) -> None:
        self.peer = peer
        self.table = table
        self.seen: list[Json] = []

    def requests(self, method: str) -> list[Json]:
        return [m for m in self.seen if m.get("method") == method]

    async def run(self) -> None:
        while True:
            try:
                message = await self.peer.recv()
            except EOFError:
                return
            self.seen.append(message)
            if "id" not in message or "method" not in message:
                continue
            entry = self.table.get(message["method"])
            if entry is None:
                await self.peer.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32601, "message": "Method not found"},
                    }
                )
                continue
            result = entry(message) if callable(entry) else entry
            await self.peer.answer(message, result)
