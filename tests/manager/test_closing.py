"""Closing: all at once or one by one, in any order, twice, and while servers are still
connecting or reconnecting (memory mode, autojump clock)."""

from __future__ import annotations

import pytest
import trio

from mcpl_host import ConnectionClosed
from mcpl_host.manager import ConnectionManager, ServerUnavailable, UnknownServer
from mcpl_host.testing import Script, serve

from .helpers import POLICY, StatusLog, speaking_an_old_revision, wait_for


def _steady() -> Script:
    return Script().handshake().expect("ping").reply({}).expect_close()


async def test_close_one_then_all_then_again(autojump_clock: trio.abc.Clock) -> None:
    with trio.fail_after(60):
        async with (
            serve(_steady()) as first,
            serve(Script().handshake().expect_close()) as second,
            serve(speaking_an_old_revision()) as old,
        ):
            servers = {"first": first.target, "second": second.target, "old": old.target}
            async with ConnectionManager(servers, versions=["2025-11-25"]) as manager:
                await manager.wait_ready()
                await manager.close_server("second")
                assert manager.status()["second"].state == "closed"
                with pytest.raises(ServerUnavailable) as closed:
                    await manager.request("second", "ping")
                assert closed.value.state == "closed"
                assert await manager.request("first", "ping") == {}  # untouched
                await manager.close_server("second")  # again: nothing happens

                await manager.aclose()
                states = {name: s.state for name, s in manager.status().items()}
                assert states == {"first": "closed", "second": "closed", "old": "failed"}
                await manager.aclose()
                await manager.close_server("first")  # after everything: still fine
                with pytest.raises(UnknownServer):
                    await manager.close_server("third")
            for server in (first, second, old):
                await server.wait_done()


async def test_concurrent_closes_all_return(autojump_clock: trio.abc.Clock) -> None:
    with trio.fail_after(60):
        async with serve(Script().handshake().expect_close()) as server:
            async with ConnectionManager({"s": server.target}) as manager:
                await manager.wait_ready()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(manager.aclose)
                    nursery.start_soon(manager.close_server, "s")
                    nursery.start_soon(manager.aclose)
                assert manager.status()["s"].state == "closed"
                with pytest.raises(RuntimeError):
                    await manager.run()  # a manager runs once
            await server.wait_done()
    assert server.record.connections == 1


async def test_close_while_the_first_connect_is_in_its_handshake(
    autojump_clock: trio.abc.Clock,
) -> None:
    silent = Script().expect("initialize").expect_close(timeout=100)
    log = StatusLog()
    with trio.fail_after(60):
        async with serve(silent) as server, trio.open_nursery() as nursery:
            manager = ConnectionManager(
                {"silent": server.target}, initialize_timeout=30, on_status=log
            )

            started = trio.current_time()
            assert await nursery.start(manager.run) is manager
            # The manager is up at once, the attempt still in its handshake.
            assert trio.current_time() == started
            assert manager.status()["silent"].state == "connecting"
            await trio.sleep(5)
            await manager.aclose()
            # The close ended the attempt at once, not at its timeout.
            assert trio.current_time() - started == pytest.approx(5)
            assert manager.status()["silent"].state == "closed"
            await server.wait_done()  # the host hung up on the handshake
    assert log.states("silent") == ["connecting", "closed"]


async def test_close_while_backing_off_and_while_reconnecting(
    autojump_clock: trio.abc.Clock,
) -> None:
    # "gone" crashes and then refuses every attempt; "late" refuses every first connect.
    gone = Script().handshake().crash().refuse_connections(1000)
    late = Script().refuse_connections(1000)
    results: list[object] = []
    with trio.fail_after(120):
        async with serve(gone) as gone_server, serve(late) as late_server:
            servers = {"gone": gone_server.target, "late": late_server.target}
            async with ConnectionManager(servers, reconnect=POLICY) as manager:
                await wait_for(manager, "gone", "reconnecting", failures=3)
                await wait_for(manager, "late", "failed", failures=3, retrying=True)

                async def waiting_request() -> None:
                    # Made while reconnecting: it waits for a transport that never comes.
                    try:
                        await manager.request("gone", "ping", timeout=1000)
                    except ConnectionClosed as exc:
                        results.append(exc)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(waiting_request)
                    await trio.sleep(1)
                    await manager.aclose()
                states = {name: s.state for name, s in manager.status().items()}
                assert states == {"gone": "closed", "late": "closed"}
    assert len(results) == 1
    assert not isinstance(results[0], ServerUnavailable)  # the connection's own answer
