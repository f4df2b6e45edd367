"""On 2026-07-28 there is no logging/setLevel: set_logging_level sends nothing and every
later request names the level in _meta (io.modelcontextprotocol/logLevel)."""

from __future__ import annotations

import trio

from mcpl_host import ServerLog
from mcpl_host.events import Event

from ..driver.peer import memory_connection

LOG_LEVEL = "io.modelcontextprotocol/logLevel"


async def test_the_level_goes_in_every_later_requests_meta() -> None:
    events: list[Event] = []
    conn, peer = memory_connection(on_event=events.append)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.discover)
            async with conn:

                async def server() -> list[dict[str, object]]:
                    seen = []
                    for _ in range(2):
                        request = await peer.recv()
                        seen.append(request)
                        if request["params"]["_meta"].get(LOG_LEVEL) == "warning":
                            await peer.send(
                                b'{"jsonrpc":"2.0","method":"notifications/message",'
                                b'"params":{"level":"error","data":"disk full"}}'
                            )
                        await peer.send(
                            b'{"jsonrpc":"2.0","id":%d,"result":{"tools":[]}}' % request["id"]
                        )
                    return seen

                got: list[list[dict[str, object]]] = []

                async def run_server() -> None:
                    got.append(await server())

                nursery.start_soon(run_server)
                await conn.list_tools(refresh=True)
                await conn.set_logging_level("warning")  # nothing written
                await conn.list_tools(refresh=True)
                while not got:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    first, second = got[0]
    assert [first["method"], second["method"]] == ["tools/list", "tools/list"]
    assert LOG_LEVEL not in first["params"]["_meta"]  # type: ignore[index,operator]
    assert second["params"]["_meta"][LOG_LEVEL] == "warning"  # type: ignore[index]
    assert [e.level for e in events if isinstance(e, ServerLog)] == ["error"]
