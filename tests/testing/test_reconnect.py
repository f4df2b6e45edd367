"""The harness driving a reconnecting Connection: drop, refusals and a crash, in every
mode (stdio: each connection is a new process, the script's place kept on disk)."""

from __future__ import annotations

import pytest
import trio

from mcpl_host import Connection, Reconnect
from mcpl_host.events import Disconnected, Event
from mcpl_host.testing import MODES, Mode, Script, serve


def _count(events: list[Event], name: str) -> int:
    return sum(type(event).__name__ == name for event in events)


@pytest.mark.parametrize("mode", MODES)
async def test_drop_refusals_and_crash_with_reconnect(mode: Mode) -> None:
    script = (
        Script(timeout=5)
        .handshake(server_info={"name": "first"})
        .expect("tools/list")
        .drop()  # written, never answered: tools/list is safe to repeat
        .refuse_connections(2)
        .handshake(server_info={"name": "second"})
        .expect("tools/list")
        .reply({"tools": []})
        .expect("ping")
        .crash()  # ping, too, is repeated on the next connection
        .handshake(server_info={"name": "third"})
        .expect("ping")
        .reply({})
        .expect_close()
    )
    policy = Reconnect(initial=0.01, maximum=0.05, multiplier=2.0, jitter=0.0)
    events: list[Event] = []
    with trio.fail_after(20):
        async with serve(script, mode) as server:
            async with Connection(server.target, reconnect=policy, on_event=events.append) as conn:
                assert await conn.request("tools/list") == {"tools": []}
                assert conn.server_info == {"name": "second"}
                assert await conn.request("ping") == {}
                assert conn.server_info == {"name": "third"}
            await server.wait_done()
    record = server.record
    assert (record.connections, record.refused) == (3, 2)
    assert [len(record.requests("tools/list", connection=n)) for n in (1, 2, 3)] == [1, 1, 0]
    assert [len(record.requests("ping", connection=n)) for n in (1, 2, 3)] == [0, 1, 1]
    assert _count(events, "Reconnected") == 2
    # three tries after the drop (two refused), one after the crash
    assert _count(events, "Reconnecting") == 4
    # Only connected transports report Disconnected: the refused attempts do not.
    lost = [e for e in events if isinstance(e, Disconnected)]
    assert len(lost) == 3
    assert lost[0] == Disconnected(1, "eof")
