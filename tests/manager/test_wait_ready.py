"""``wait_ready``: waiting for all, any, or named servers, with a deadline (memory mode,
autojump)."""

from __future__ import annotations

import pytest
import trio

from mcpl_host.manager import ConnectionManager, UnknownServer
from mcpl_host.testing import Script, serve

from .helpers import POLICY, answering_initialize_with_an_error, speaking_an_old_revision


async def test_all_any_and_named_with_a_deadline(autojump_clock: trio.abc.Clock) -> None:
    with trio.fail_after(120):
        async with (
            serve(Script().handshake().expect_close()) as good,
            serve(answering_initialize_with_an_error()) as erroring,
            serve(speaking_an_old_revision()) as old,
        ):
            servers = {"good": good.target, "erroring": erroring.target, "old": old.target}
            async with ConnectionManager(
                servers, reconnect=POLICY, versions=["2025-11-25"]
            ) as manager:
                began = trio.current_time()
                statuses = await manager.wait_ready("good", "old")
                assert {n: s.state for n, s in statuses.items()} == {
                    "good": "ready",
                    "old": "failed",
                }
                # The erroring server is retried forever: waiting for all ends at the deadline.
                statuses = await manager.wait_ready(timeout=5)
                assert trio.current_time() - began == pytest.approx(5, abs=0.5)
                # Between attempts (failed, retrying) or in one (connecting): never settled.
                assert statuses["erroring"].state in ("failed", "connecting")
                assert not statuses["erroring"].settled
                assert statuses["erroring"].failures >= 1
                # Any: the good one is up already.
                statuses = await manager.wait_ready("erroring", "good", mode="any", timeout=60)
                assert statuses["good"].state == "ready"
                assert trio.current_time() - began < 6
                with pytest.raises(UnknownServer):
                    await manager.wait_ready("nobody")
                with pytest.raises(ValueError, match="mode"):
                    await manager.wait_ready(mode="some")  # type: ignore[arg-type]
