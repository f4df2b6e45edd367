"""Every test has a deadline in real seconds, so a broken behaviour fails, never hangs.

Two layers (docs/testing.md, "Deadlines"):
- a trio test runs under a watchdog thread that, at the test's deadline, cancels the whole
  trio run from outside (fixtures included) and fails the test with a clear message. It
  works under an autojump clock too, where a test waiting for something that never comes
  spins through virtual time without a real-time bound;
- pytest-timeout (its ``timeout`` marker and ini value set the deadline) stays the last
  resort, for plain tests and for code that never reaches a checkpoint. For a trio test it
  fires later than the watchdog: its SIGALRM would land inside trio's run loop and leave
  trio's state broken for the tests after it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import pytest
import structlog
import trio

from mcpl_host.driver.negotiate import ERAS

# Tests read the library's log events with structlog.testing.capture_logs, which sees them
# only when structlog is configured (unconfigured, mcpl_host logs warnings to stderr and
# drops the rest: mcpl_host/_log.py). Configured here, once, so that no test depends on
# another having configured it first; the unconfigured default has its own subprocess
# tests (tests/driver/test_default_logging.py).
structlog.configure()

# How much later pytest-timeout's hard stop comes than the watchdog, for a trio test.
_HARD_STOP_MARGIN = 15.0


def _deadline(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    if marker is not None and "timeout" in marker.kwargs:
        return float(marker.kwargs["timeout"])
    return float(item.config.getini("timeout"))


def _run_with_deadline(
    seconds: float,
    fn: Callable[[], Awaitable[Any]],
    *,
    clock: trio.abc.Clock | None,
    instruments: list[trio.abc.Instrument],
) -> Any:
    async def guarded() -> Any:
        token = trio.lowlevel.current_trio_token()
        finished = threading.Event()
        with trio.CancelScope() as scope:

            def watch() -> None:
                if not finished.wait(seconds):
                    with contextlib.suppress(trio.RunFinishedError):  # it just ended
                        token.run_sync_soon(scope.cancel)

            threading.Thread(target=watch, name="test deadline", daemon=True).start()
            try:
                result = await fn()
            finally:
                finished.set()
        if scope.cancelled_caught:
            pytest.fail(f"the test ran past its deadline of {seconds:g} s", pytrace=False)
        return result

    return trio.run(guarded, clock=clock, instruments=instruments)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # After pytest-trio has marked the async tests; a marker prepended here is the one it
    # takes the runner from.
    for item in items:
        if item.get_closest_marker("trio") is None:
            continue
        seconds = _deadline(item)
        if seconds <= 0:
            continue
        item.add_marker(pytest.mark.trio(run=partial(_run_with_deadline, seconds)), append=False)
        item.add_marker(pytest.mark.timeout(seconds + _HARD_STOP_MARGIN), append=False)


@pytest.fixture(autouse=True)
def _no_remembered_eras() -> None:
    """Each test starts knowing no server's era. The host remembers eras per target for
    the life of the process (mcpl_host/driver/negotiate.py); across tests a loopback port
    is reused by unrelated servers, so an era one test learned would decide how another
    test's server is opened."""
    ERAS.clear()
