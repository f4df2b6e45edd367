"""Shared pieces of the manager tests: scripted servers and waiting for a state."""

from __future__ import annotations

from typing import Any

import trio

from mcpl_host import Reconnect
from mcpl_host.manager import ConnectionManager, ServerState, ServerStatus
from mcpl_host.testing import Script

# Whole seconds and no jitter, so that the autojump clock's times can be asserted.
# stable=0: servers here crash at once on purpose (the quick-death rule has its own tests).
POLICY = Reconnect(initial=1.0, maximum=8.0, multiplier=2.0, jitter=0.0, stable=0)


def tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, **extra}


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def answering_initialize_with_an_error() -> Script:
    """Every connect fails: the first with an error answer, the next ones refused."""
    return Script().expect("initialize").reply_error(-32603, "the database is down")


def speaking_an_old_revision() -> Script:
    return (
        Script()
        .expect("initialize")
        .reply({"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "old"}})
        .expect_close()
    )


async def wait_for(
    manager: ConnectionManager, name: str, state: ServerState, **fields: Any
) -> ServerStatus:
    """Poll until the server is in ``state`` (and its status has ``fields``); the test's
    own ``trio.fail_after`` bounds the wait."""
    while True:
        status = manager.status()[name]
        if status.state == state and all(getattr(status, k) == v for k, v in fields.items()):
            return status
        await trio.sleep(0.01)


class StatusLog:
    """Records every status change, per server, as on_status reports them."""

    def __init__(self) -> None:
        self.changes: list[ServerStatus] = []

    def __call__(self, status: ServerStatus) -> None:
        self.changes.append(status)

    def states(self, name: str) -> list[str]:
        """The server's states in order, repeats (a new error, a new count) folded."""
        states: list[str] = []
        for status in self.changes:
            if status.name == name and (not states or states[-1] != status.state):
                states.append(status.state)
        return states
