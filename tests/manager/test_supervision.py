"""Each server supervised on its own: first connects retried, reconnects, permanent
failures, and one server's trouble never reaching the others (memory mode, autojump)."""

from __future__ import annotations

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    ConfigurationError,
    ConnectionClosed,
    InitializeError,
    Reconnect,
    RequestTimeout,
    TransportError,
    VersionError,
)
from mcpl_host.events import Closed, Connected, Disconnected, Event, Reconnected, Reconnecting
from mcpl_host.manager import ConnectionManager, ServerUnavailable, UnknownServer
from mcpl_host.testing import Script, serve

from ..hostile.harness import stdio
from .helpers import (
    POLICY,
    StatusLog,
    answering_initialize_with_an_error,
    speaking_an_old_revision,
    text,
    wait_for,
)


async def test_a_good_server_works_beside_a_retrying_and_a_failed_one(
    autojump_clock: trio.abc.Clock,
) -> None:
    good = (
        Script()
        .handshake(server_info={"name": "good", "version": "1"})
        .expect("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        .reply(text("hi"))
        .expect_close()
    )
    events: list[tuple[str, Event]] = []
    with trio.fail_after(120):
        async with (
            serve(good) as good_server,
            serve(answering_initialize_with_an_error()) as erroring,
            serve(speaking_an_old_revision()) as old,
        ):
            servers = {"good": good_server.target, "erroring": erroring.target, "old": old.target}
            async with ConnectionManager(
                servers,
                reconnect=POLICY,
                versions=["2025-11-25", "2025-06-18"],
                on_event=lambda name, event: events.append((name, event)),
            ) as manager:
                await manager.wait_ready("good", "old")
                status = manager.status()
                assert list(status) == ["good", "erroring", "old"]
                assert status["good"].state == "ready"
                assert status["good"].protocol_version == "2025-11-25"
                assert status["good"].server_info == {"name": "good", "version": "1"}
                assert status["good"].error is None

                assert status["erroring"].state == "failed"
                assert status["erroring"].retrying  # not given up
                assert isinstance(status["erroring"].error, InitializeError)
                assert status["erroring"].error.server_message == "the database is down"

                assert status["old"].state == "failed"  # a permanent error: never retried
                assert not status["old"].retrying
                assert isinstance(status["old"].error, VersionError)

                result = await manager.request(
                    "good", "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
                )
                assert result == text("hi")

                with pytest.raises(ServerUnavailable) as down:
                    manager.connection("old")
                assert down.value.state == "failed"
                assert isinstance(down.value.__cause__, VersionError)
                with pytest.raises(ConnectionClosed):  # ServerUnavailable is one
                    await manager.request("erroring", "ping")
                with pytest.raises(UnknownServer):
                    manager.connection("nobody")

                # The erroring server keeps being retried under the policy's backoff.
                retried = await wait_for(manager, "erroring", "failed", failures=4)
                assert isinstance(retried.error, TransportError)  # refused from then on
            await good_server.wait_done()
    assert erroring.record.connections == 1  # later attempts were turned away
    assert old.record.connections == 1  # the version error was never retried
    assert ("good", Connected(1, "2025-11-25", {"name": "good", "version": "1"})) in events
    assert ("good", Closed("closed")) in events
    assert {name for name, _ in events} == {"good"}  # the others never connected


async def test_a_server_that_crashes_comes_back(autojump_clock: trio.abc.Clock) -> None:
    script = (
        Script()
        .handshake(server_info={"name": "first"})
        .crash()
        .refuse_connections(2)
        .handshake(server_info={"name": "second"})
        .expect("ping")
        .reply({})
        .expect_close()
    )
    log = StatusLog()
    events: list[tuple[str, Event]] = []
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager(
                {"flaky": server.target},
                reconnect=POLICY,
                on_status=log,
                on_event=lambda name, event: events.append((name, event)),
            ) as manager:
                back = await wait_for(manager, "flaky", "ready", server_info={"name": "second"})
                assert back.failures == 0
                assert back.error is None
                assert await manager.request("flaky", "ping") == {}
            await server.wait_done()
    assert log.states("flaky") == ["connecting", "ready", "reconnecting", "ready", "closed"]
    reconnecting = [s for s in log.changes if s.state == "reconnecting"]
    assert isinstance(reconnecting[0].error, ConnectionClosed)
    assert reconnecting[0].error.reason == "read-failed"
    assert max(s.failures for s in reconnecting) == 2  # two refusals before it came back
    kinds = [type(event) for name, event in events if name == "flaky"]
    assert kinds == [
        Connected,
        Disconnected,
        Reconnecting,
        Reconnecting,
        Reconnecting,
        Reconnected,
        Disconnected,
        Closed,
    ]


async def test_the_first_connect_is_retried_until_the_server_accepts(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().refuse_connections(3).handshake().expect("ping").reply({}).expect_close()
    with trio.fail_after(60):
        async with serve(script) as server:
            started = trio.current_time()
            async with ConnectionManager({"late": server.target}, reconnect=POLICY) as manager:
                # The manager came up at once, without the server.
                assert trio.current_time() == started
                waiting = await wait_for(manager, "late", "failed")
                assert (waiting.failures, waiting.retrying) == (1, True)
                assert waiting.retry_at == pytest.approx(started + 1)  # the backoff's first wait
                assert isinstance(waiting.error, TransportError)
                assert waiting.error.reason == "connect-failed"

                connected = await wait_for(manager, "late", "ready")
                assert connected.since is not None
                assert connected.since - started == pytest.approx(1 + 2 + 4)  # the backoff
                assert await manager.request("late", "ping") == {}
            await server.wait_done()
    assert (server.record.connections, server.record.refused) == (1, 3)


async def test_the_first_connect_gives_up_after_max_attempts(
    autojump_clock: trio.abc.Clock,
) -> None:
    policy = Reconnect(initial=1.0, jitter=0.0, max_attempts=2, stable=0)
    with trio.fail_after(60):
        async with (
            serve(Script().refuse_connections(5).handshake()) as server,
            ConnectionManager({"never": server.target}, reconnect=policy) as manager,
        ):
            status = await wait_for(manager, "never", "failed", retrying=False)
            assert isinstance(status.error, TransportError)
            assert status.failures == 2
            assert status.retry_at is None
    assert server.record.refused == 2


async def test_without_a_policy_nothing_is_retried_and_a_loss_is_final(
    autojump_clock: trio.abc.Clock,
) -> None:
    dropping = Script().handshake().drop()
    steady = Script().handshake().expect("ping").reply({}).expect_close()
    with trio.fail_after(60):
        async with (
            serve(dropping) as dropped,
            serve(steady) as steady_server,
            serve(Script().refuse_connections(1).handshake()) as refusing,
        ):
            servers = {
                "dropping": dropped.target,
                "steady": steady_server.target,
                "refusing": refusing.target,
            }
            async with ConnectionManager(servers, reconnect=None) as manager:
                await manager.wait_ready("refusing", "steady")
                refused = manager.status()["refusing"]
                assert (refused.state, refused.retrying, refused.failures) == ("failed", False, 1)
                assert isinstance(refused.error, TransportError)
                lost = await wait_for(manager, "dropping", "failed")
                assert isinstance(lost.error, ConnectionClosed)
                assert lost.error.reason == "eof"
                # One server gone for good takes nothing from the others.
                assert manager.status()["steady"].state == "ready"
                assert await manager.request("steady", "ping") == {}
            await steady_server.wait_done()
    assert dropped.record.connections == 1
    assert refusing.record.refused == 1


async def test_callbacks_that_raise_are_logged_and_change_nothing(
    autojump_clock: trio.abc.Clock,
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("a broken callback")

    script = Script().handshake().expect("ping").reply({}).expect_close()
    with trio.fail_after(60), capture_logs() as logs:
        async with serve(script) as server:
            async with ConnectionManager(
                {"s": server.target}, on_event=broken, on_status=broken
            ) as manager:
                await manager.wait_ready()
                assert manager.status()["s"].state == "ready"
                assert await manager.request("s", "ping") == {}
            await server.wait_done()
    failures = {entry["event"] for entry in logs if entry["log_level"] == "error"}
    assert failures == {"event callback failed", "status callback failed"}


async def test_a_bad_target_or_config_problem_fails_that_server_only(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().handshake().expect("ping").reply({}).expect_close()
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager(
                {"bad": "gopher://nowhere", "good": server.target}
            ) as manager:
                await manager.wait_ready()
                bad = manager.status()["bad"]
                assert bad.state == "failed"
                assert isinstance(bad.error, ConfigurationError)
                assert await manager.request("good", "ping") == {}
            await server.wait_done()


def test_what_the_constructor_refuses() -> None:
    with pytest.raises(ConfigurationError):
        ConnectionManager({}, versions=["1999-01-01"])
    with pytest.raises(ConfigurationError):
        ConnectionManager({}, separator="")
    with pytest.raises(TypeError, match="server 'x'"):
        ConnectionManager({"x": 42})  # type: ignore[dict-item]


async def test_connection_options_reach_every_server(autojump_clock: trio.abc.Clock) -> None:
    def script() -> Script:
        return Script().handshake().send_request("roots/list").expect_answer().expect_close()

    with trio.fail_after(60):
        async with serve(script()) as one, serve(script()) as two:
            async with ConnectionManager(
                {"one": one.target, "two": two.target},
                client_info={"name": "agent", "version": "2"},
                roots=["file:///work"],
            ) as manager:
                await manager.wait_ready()
                for name in ("one", "two"):
                    assert await manager.request(name, "ping") == {}  # answered by the script
                while not (one.record.answers() and two.record.answers()):
                    await trio.sleep(0.01)
            for server in (one, two):
                await server.wait_done()
                initialize = server.record.requests("initialize")[0]["params"]
                assert initialize["clientInfo"] == {"name": "agent", "version": "2"}
                assert "roots" in initialize["capabilities"]
                assert server.record.answers()[0]["result"] == {"roots": [{"uri": "file:///work"}]}


async def test_new_roots_reach_every_server(autojump_clock: trio.abc.Clock) -> None:
    def script() -> Script:
        return (
            Script()
            .handshake()
            .expect("notifications/roots/list_changed")
            .send_request("roots/list")
            .expect_answer()
            .expect_close()
        )

    with trio.fail_after(60):
        async with serve(script()) as one, serve(script()) as two:
            async with ConnectionManager(
                {"one": one.target, "two": two.target}, roots=["file:///old"]
            ) as manager:
                await manager.wait_ready()
                await manager.set_roots(["file:///new"])
                while not (one.record.answers() and two.record.answers()):
                    await trio.sleep(0.01)
            for server in (one, two):
                await server.wait_done()
                assert server.record.answers()[0]["result"] == {"roots": [{"uri": "file:///new"}]}
        async with ConnectionManager({}) as manager:
            with pytest.raises(ValueError, match="offers no roots"):
                await manager.set_roots(["file:///x"])


async def test_a_server_that_stopped_reading_does_not_keep_the_others_from_new_roots() -> None:
    """The first server stops reading after its handshake: its notice times out (logged,
    not raised) while the second is told all the same."""
    good = (
        Script()
        .handshake()
        .expect("notifications/roots/list_changed")
        .send_request("roots/list")
        .expect_answer()
        .expect_close()
    )
    with trio.fail_after(30), capture_logs() as logs:
        async with serve(good) as two:
            servers = {"deaf": stdio("deaf_flood", "--count", 0), "two": two.target}
            async with ConnectionManager(servers, roots=["file:///old"]) as manager:
                await manager.wait_ready()
                # Fill the deaf server's pipe, so that nothing more reaches it.
                with pytest.raises(RequestTimeout):
                    await manager.connection("deaf").notify(
                        "notifications/x", {"pad": "x" * 1_000_000}, timeout=0.5
                    )
                await manager.set_roots(["file:///new"], timeout=0.5)
                while not two.record.answers():
                    await trio.sleep(0.01)
            await two.wait_done()
            assert two.record.answers()[0]["result"] == {"roots": [{"uri": "file:///new"}]}
    assert [e["server"] for e in logs if e["event"] == "roots not told"] == ["deaf"]
