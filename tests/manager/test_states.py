"""Start and failure states: the manager is usable at once; a transient failure is
``failed`` and retried, a permanent one is ``failed`` for good; each change is reported
once, in order (real subprocesses where the OS error is the point, else memory mode)."""

from __future__ import annotations

import itertools
import os
import signal
import sys
from pathlib import Path

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    ConfigurationError,
    ConnectionClosed,
    Reconnect,
    SpawnError,
    StdioTarget,
    TransportError,
    VersionError,
)
from mcpl_host.config import parse_config
from mcpl_host.manager import ConnectionManager, ServerStatus
from mcpl_host.testing import Script, serve
from mcpl_host.transports.stdio import StdioTransport

from .helpers import POLICY, StatusLog, speaking_an_old_revision, wait_for

DEMO = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])
# A retry would come 30 s later: a test that ends sooner saw none.
SLOW_RETRIES = Reconnect(initial=30.0, jitter=0.0, stable=0)


def _summary(status: ServerStatus) -> tuple[object, ...]:
    error = None if status.error is None else type(status.error).__name__
    return (status.state, status.failures, status.retrying, status.retry_at, error)


async def test_a_missing_program_and_a_file_that_is_not_executable_fail_at_once(
    tmp_path: Path,
) -> None:
    not_executable = tmp_path / "server.sh"
    not_executable.write_text("#!/bin/sh\nexit 0\n")
    not_executable.chmod(0o600)
    servers = {
        "missing": StdioTarget.of([str(tmp_path / "no-such-program")]),
        "not-executable": StdioTarget.of([str(not_executable)]),
    }
    log = StatusLog()
    with trio.fail_after(10), capture_logs() as logs:
        async with ConnectionManager(servers, reconnect=SLOW_RETRIES, on_status=log) as manager:
            began = trio.current_time()
            statuses = await manager.wait_ready()
            assert trio.current_time() - began < 5  # no backoff was waited for
    for name, errno_name in (("missing", "ENOENT"), ("not-executable", "EACCES")):
        status = statuses[name]
        assert (status.state, status.retrying, status.retry_at) == ("failed", False, None)
        assert status.failures == 1
        assert isinstance(status.error, SpawnError)
        assert status.error.permanent
        assert errno_name in status.error.message
        assert log.states(name) == ["connecting", "failed"]
        attempts = [e for e in logs if e["event"] == "connect attempt failed"]
        assert [e["server"] for e in attempts].count(name) == 1
    # A final failure is the one logged as a warning, once per server.
    warned = [
        e["server"] for e in logs if e["event"] == "server state" and e["log_level"] == "warning"
    ]
    assert sorted(warned) == ["missing", "not-executable"]


async def test_a_server_that_never_answers_initialize_holds_up_nothing() -> None:
    """The hung server reads its stdin and never answers: ``async with`` returns at once,
    the demo server beside it is ready as soon as it has started, the hung one is
    ``connecting`` (its attempt runs to initialize_timeout, 30 s)."""
    hung = StdioTarget.of([sys.executable, "-c", "import sys; sys.stdin.read()"])
    with trio.fail_after(20):
        began = trio.current_time()
        async with ConnectionManager({"hung": hung, "demo": DEMO}) as manager:
            assert trio.current_time() - began < 0.5
            assert {n: s.state for n, s in manager.status().items()} == {
                "hung": "connecting",
                "demo": "connecting",
            }
            statuses = await manager.wait_ready(mode="any", timeout=10)
            assert statuses["demo"].state == "ready"
            assert trio.current_time() - began < 10
            assert statuses["hung"].state == "connecting"
            assert statuses["hung"].failures == 0
            assert statuses["hung"].error is None
            # Usable while the other is still in its handshake.
            result = await manager.connection("demo").call_tool("add", {"a": 2, "b": 40})
            assert result.text == "42"
            transport = manager.connection("demo").transport
            assert isinstance(transport, StdioTransport)
        # Closing abandons the hung attempt (its process stopped) without waiting it out.
        assert trio.current_time() - began < 15
    assert manager.status()["hung"].state == "closed"


async def test_a_transient_failure_is_failed_and_retrying_then_connecting_then_ready(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().refuse_connections(2).handshake().expect("ping").reply({}).expect_close()
    log = StatusLog()
    with trio.fail_after(60):
        async with serve(script) as server:
            began = trio.current_time()
            async with ConnectionManager(
                {"late": server.target}, reconnect=POLICY, on_status=log
            ) as manager:
                await wait_for(manager, "late", "ready")
                assert await manager.request("late", "ping") == {}
            await server.wait_done()
    changes = [_summary(status) for status in log.changes]
    # Each change once, in order: a refused attempt is failed with the time of the next
    # one (the backoff: 1 s, then 2 s), which makes it connecting again, keeping the error
    # and the count, until the handshake makes it ready.
    assert changes == [
        ("connecting", 0, False, None, None),
        ("failed", 1, True, began + 1, "TransportError"),
        ("connecting", 1, False, None, "TransportError"),
        ("failed", 2, True, began + 1 + 2, "TransportError"),
        ("connecting", 2, False, None, "TransportError"),
        ("ready", 0, False, None, None),
        ("closed", 0, False, None, None),
    ]
    assert [status.since for status in log.changes][:3] == [began, began, began + 1]


async def test_a_lost_connection_is_reconnecting_then_failed_when_the_policy_gives_up(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().handshake().crash().refuse_connections(5).handshake()
    policy = Reconnect(initial=1.0, jitter=0.0, max_attempts=2, stable=0)
    log = StatusLog()
    with trio.fail_after(60):
        async with (
            serve(script) as server,
            ConnectionManager({"gone": server.target}, reconnect=policy, on_status=log) as manager,
        ):
            status = await wait_for(manager, "gone", "failed")
            await trio.sleep(5)  # never tried again (the backoff is 1 s)
    assert log.states("gone") == ["connecting", "ready", "reconnecting", "failed"]
    assert (status.retrying, status.retry_at, status.failures) == (False, None, 2)
    assert isinstance(status.error, ConnectionClosed)
    assert status.error.reason == "reconnect-failed"
    assert isinstance(status.error.__cause__, TransportError)  # the last attempt's error
    reconnecting = [s for s in log.changes if s.state == "reconnecting"]
    assert [s.failures for s in reconnecting] == [0, 0, 1]  # lost; attempt 1; attempt 2
    assert all(s.retry_at is not None for s in reconnecting[1:])
    assert server.record.refused == 2
    assert manager.status()["gone"] == status  # closing keeps a final failure


async def test_a_program_gone_while_reconnecting_fails_without_retries(tmp_path: Path) -> None:
    """The Connection's own policy treats a permanent spawn error as the manager does:
    no attempt after it, no backoff waited for."""
    program = tmp_path / "server"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} -m mcpl_host.demo\n")
    program.chmod(0o755)
    log = StatusLog()
    with trio.fail_after(15):
        async with ConnectionManager(
            {"s": StdioTarget.of([str(program)])}, reconnect=SLOW_RETRIES, on_status=log
        ) as manager:
            await manager.wait_ready()
            transport = manager.connection("s").transport
            assert isinstance(transport, StdioTransport)
            program.unlink()
            os.kill(transport.process.pid, signal.SIGKILL)
            status = await wait_for(manager, "s", "failed")
    assert log.states("s") == ["connecting", "ready", "reconnecting", "failed"]
    assert (status.retrying, status.failures) == (False, 1)
    assert isinstance(status.error, ConnectionClosed)
    assert status.error.reason == "reconnect-failed"
    assert isinstance(status.error.__cause__, SpawnError)
    assert "ENOENT" in status.error.message


async def test_a_configuration_error_and_a_version_error_stay_failed(
    autojump_clock: trio.abc.Clock,
) -> None:
    log = StatusLog()
    with trio.fail_after(60):
        async with serve(speaking_an_old_revision()) as old:
            entry = {"command": "server", "args": ["--token", "${MCPL_TEST_UNSET_TOKEN}"]}
            config = parse_config({"mcpServers": {"bad": entry}}, environ={})
            servers = {"bad": config["bad"], "old": old.target, "unparsed": "gopher://nowhere"}
            async with ConnectionManager(
                servers, reconnect=POLICY, versions=["2025-11-25"], on_status=log
            ) as manager:
                # A configuration error is known before any attempt: failed from the start.
                bad = manager.status()["bad"]
                assert (bad.state, bad.retrying, bad.failures) == ("failed", False, 0)
                assert isinstance(bad.error, ConfigurationError)
                assert "MCPL_TEST_UNSET_TOKEN" in bad.error.message
                statuses = await manager.wait_ready()
                await trio.sleep(30)  # long past any backoff
                assert manager.status() == statuses
    assert statuses["old"].state == "failed"
    assert (statuses["old"].retrying, statuses["old"].failures) == (False, 1)
    assert isinstance(statuses["old"].error, VersionError)
    assert old.record.connections == 1
    assert log.states("bad") == ["failed"]
    assert log.states("old") == ["connecting", "failed"]
    # A target string that does not parse fails its one attempt: configuration too.
    assert (statuses["unparsed"].retrying, statuses["unparsed"].failures) == (False, 1)
    assert isinstance(statuses["unparsed"].error, ConfigurationError)


@pytest.mark.parametrize(
    "state", ["connecting", "ready", "reconnecting", "failed", "disabled", "closed"]
)
def test_what_settled_and_usable_mean(state: str) -> None:
    retrying = ServerStatus("s", "failed", retrying=True)
    assert not retrying.settled
    status = ServerStatus("s", state)  # type: ignore[arg-type]
    assert status.settled is (state in ("ready", "failed", "disabled", "closed"))
    assert status.usable is (state in ("ready", "reconnecting"))


async def test_wait_status_change_returns_each_new_state_and_misses_none(
    autojump_clock: trio.abc.Clock,
) -> None:
    script = Script().refuse_connections(1).handshake().expect_close()
    seen: list[str] = []
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, reconnect=POLICY) as manager:
                statuses = manager.status()
                seen.append(statuses["s"].state)
                while statuses["s"].state != "ready":
                    statuses = await manager.wait_status_change(statuses)
                    seen.append(statuses["s"].state)
                began = trio.current_time()
                unchanged = await manager.wait_status_change(timeout=5)
                assert unchanged == statuses
                assert trio.current_time() - began == pytest.approx(5)
            await server.wait_done()
    # Coalesced: the attempt's own connecting may be over by the time the caller looks;
    # the refusal (a second's wait) and the final state are never missed.
    assert seen[:2] == ["connecting", "failed"]
    assert seen[-1] == "ready"
    assert all(a != b for a, b in itertools.pairwise(seen))  # each answer was a change
