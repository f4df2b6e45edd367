"""Kill -9 cycles against a stdio server with requests in flight.

Shared by the chaos test and ``scripts/soak.py``: each cycle starts ``in_flight``
requests on a reconnecting connection to the demo server, kills the server with SIGKILL
while they wait, and lets the supervisor bring a new one up. Every request must end
answered or with a typed error within its timeout; afterwards no child of ours may be
a zombie and the process must hold no more file descriptors than before.

The server says when to kill it, so the kill lands on requests in flight however busy
the machine is: one request of each cycle is a long ``countdown`` (the demo server works
on one request at a time), and its first progress notification is the signal. That
request is never repeated (``rebind=False``), so each kill ends it with a typed error,
and every request written after it is still waiting behind it when the kill lands.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field

import trio

from ..client.connection import Connection
from ..driver.reconnect import Reconnect
from ..protocol.errors import McplHostError
from ..transports.targets import StdioTarget

__all__ = ["ChaosReport", "run_chaos"]

_DEMO = (sys.executable, "-m", "mcpl_host.demo")


@dataclass
class ChaosReport:
    cycles: int = 0
    requests: int = 0
    answered: int = 0
    failed_typed: int = 0
    hung: int = 0
    lost: int = 0
    zombies: int = 0
    fd_growth: int = 0
    seconds: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.hung == 0 and self.lost == 0 and self.zombies == 0 and self.fd_growth <= 0


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _zombie_children() -> int:
    me = str(os.getpid())
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if fields[1] == me and fields[0] == "Z":
            count += 1
    return count


async def run_chaos(
    cycles: int,
    *,
    in_flight: int = 20,
    request_timeout: float = 5.0,
) -> ChaosReport:
    """Run ``cycles`` kill -9 cycles; return what happened to every request."""
    report = ChaosReport()
    started = time.monotonic()
    fds_before = _open_fds()
    policy = Reconnect(initial=0.01, maximum=0.1, jitter=0.01)
    async with Connection(
        StdioTarget.of(_DEMO), reconnect=policy, request_timeout=request_timeout
    ) as conn:
        await conn.request("tools/list")  # learn which tools are safe to repeat

        async def send(n: int, busy: trio.Event) -> None:
            if n == 0:  # the one the server is busy with when the kill lands
                arguments = {"steps": 100, "delay": request_timeout / 100}
                await conn.request(
                    "tools/call",
                    {"name": "countdown", "arguments": arguments},
                    rebind=False,
                    on_progress=lambda *_: busy.set(),
                )
            else:
                # Half may be repeated on the new server, half must fail as outcome unknown.
                params = {"name": "sleep", "arguments": {"seconds": 0.002}}
                await conn.request("tools/call", params, rebind=None if n % 2 else False)

        async def one(n: int, busy: trio.Event) -> None:
            report.requests += 1
            with trio.move_on_after(request_timeout + 1) as guard:
                try:
                    await send(n, busy)
                except McplHostError as exc:
                    report.failed_typed += 1
                    name = type(exc).__name__
                    report.errors[name] = report.errors.get(name, 0) + 1
                except Exception:
                    report.lost += 1
                else:
                    report.answered += 1
            if guard.cancelled_caught:
                report.hung += 1

        for _ in range(cycles):
            transport = conn.transport
            while transport is None:  # between servers: wait for the next one
                await trio.sleep(0.005)
                transport = conn.transport
            pid = getattr(transport, "pid", None)
            busy = trio.Event()
            async with trio.open_nursery() as nursery:
                for n in range(in_flight):
                    nursery.start_soon(one, n, busy)
                with trio.move_on_after(request_timeout):  # the server died on its own
                    await busy.wait()
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):  # it died on its own
                        os.kill(pid, signal.SIGKILL)
            report.cycles += 1
    report.zombies = _zombie_children()
    report.fd_growth = _open_fds() - fds_before
    report.seconds = time.monotonic() - started
    return report
