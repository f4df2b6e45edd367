"""Chaos, bounded: kill -9 cycles with requests in flight, servers that die right after
``initialize``, and MCPL traffic racing each new transport's grant.

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

:func:`run_quick_deaths` runs a manager over a stdio server that exits as soon as its
handshake is done: its respawns must follow the backoff, and with ``max_attempts`` the
server must end ``failed``. :func:`run_mcpl_race` reconnects an MCPL connection many
times to a server that sends a ``push/event`` in the same write as its initialize
answer, advertising ``pushEvents`` on every other connection only: a push must reach the
hook only on a connection whose own grant allows it, never under the previous one's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field

import msgspec
import trio

from ..client.connection import Connection
from ..driver.reconnect import Reconnect
from ..events import Connected, Event, Reconnected
from ..manager import ConnectionManager
from ..mcpl.host import Mcpl, McplContext
from ..mcpl.types import PushEvent
from ..protocol.errors import McplHostError
from ..transports import Transport
from ..transports.memory import memory_transport_pair
from ..transports.targets import StdioTarget

__all__ = [
    "ChaosReport",
    "McplRaceReport",
    "QuickDeathReport",
    "run_chaos",
    "run_mcpl_race",
    "run_quick_deaths",
]

_DEMO = (sys.executable, "-m", "mcpl_host.demo")
# Refuses server/discover as a handshake-era server does (a dual-era host asks it
# first), answers initialize, reads notifications/initialized, exits.
_DIES_AFTER_INITIALIZE = (
    sys.executable,
    "-c",
    "import json, sys\n"
    "request = json.loads(sys.stdin.readline())\n"
    "while request.get('method') != 'initialize':\n"
    "    error = {'code': -32601, 'message': 'Method not found'}\n"
    "    print(json.dumps({'jsonrpc': '2.0', 'id': request['id'], 'error': error}), flush=True)\n"
    "    request = json.loads(sys.stdin.readline())\n"
    "result = {'protocolVersion': '2025-11-25', 'capabilities': {},"
    " 'serverInfo': {'name': 'brief', 'version': '1'}}\n"
    "print(json.dumps({'jsonrpc': '2.0', 'id': request['id'], 'result': result}), flush=True)\n"
    "sys.stdin.readline()\n"
    # Dies 0.2 s after notifications/initialized: well within Reconnect.stable, and late
    # enough that the host has finished its handshake (an exit in the same instant is
    # the other failure, "closed during initialize", which makes no handshake to count).
    "import time; time.sleep(0.2)\n",
)


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
    # The kills are ours, not the server's instability: no quick-death backoff.
    policy = Reconnect(initial=0.01, maximum=0.1, jitter=0.01, stable=0)
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


@dataclass
class QuickDeathReport:
    handshakes: int = 0  # server processes that got through initialize
    state: str = ""  # the server's final status in the manager
    reason: str | None = None  # the reason of the connection error, if any
    seconds: float = 0.0
    zombies: int = 0


async def run_quick_deaths(policy: Reconnect, *, watch: float) -> QuickDeathReport:
    """Manage a server that dies right after ``initialize``, under ``policy``, until it
    is ``failed`` or ``watch`` seconds have passed; count the handshakes."""
    report = QuickDeathReport()
    started = time.monotonic()

    def count(_name: str, event: Event) -> None:
        if isinstance(event, (Connected, Reconnected)):
            report.handshakes += 1

    servers = {"brief": StdioTarget.of(_DIES_AFTER_INITIALIZE)}
    async with ConnectionManager(servers, reconnect=policy, on_event=count) as manager:
        with trio.move_on_after(watch):
            # Given up for good: a failed first connect that is retried does not count.
            while (watched := manager.status()["brief"]).state != "failed" or watched.retrying:
                await trio.sleep(0.01)
        status = manager.status()["brief"]
        report.state = status.state
        report.reason = getattr(status.error, "reason", None)
    report.seconds = time.monotonic() - started
    report.zombies = _zombie_children()
    return report


@dataclass
class McplRaceReport:
    reconnects: int = 0
    admitted: int = 0  # pushes that reached the hook on a connection that granted them
    stale: int = 0  # pushes that reached the hook on a connection that did not
    denied: int = 0  # pushes answered -32002 on a connection that did not grant them
    unanswered: int = 0


async def run_mcpl_race(reconnects: int) -> McplRaceReport:
    """Reconnect an MCPL connection ``reconnects`` times to an in-memory server whose
    push shares a write with its initialize answer (see the module's docstring)."""
    report = McplRaceReport()
    reached: list[str] = []
    connections = trio.open_memory_channel[tuple[int, trio.abc.Stream]](1)
    numbers = iter(range(1, reconnects + 2))

    async def factory() -> Transport:
        transport, peer = memory_transport_pair()
        connections[0].send_nowait((next(numbers), peer))
        return transport

    async def push(params: msgspec.Struct, _context: McplContext) -> object:
        assert isinstance(params, PushEvent)
        reached.append(params.event_id)
        return {"accepted": True}

    mcpl = Mcpl(grants=("pushEvents",), hooks={"push/event": push})
    policy = Reconnect(initial=0, jitter=0, stable=0)
    async with trio.open_nursery() as nursery:
        conn = Connection(factory, mcpl=mcpl, reconnect=policy)
        nursery.start_soon(conn.run)
        for _ in range(reconnects + 1):
            with trio.fail_after(10):  # a host that stopped reconnecting fails the run
                number, peer = await connections[1].receive()
                answer = await _race_one(number, peer)
            granted = number % 2 == 1
            if answer is None:
                report.unanswered += 1
            elif "error" in answer:
                report.denied += not granted
            report.reconnects = number - 1
        await conn.aclose()
        nursery.cancel_scope.cancel()
    for event_id in reached:
        if int(event_id.removeprefix("e-")) % 2 == 1:
            report.admitted += 1
        else:
            report.stale += 1
    return report


async def _race_one(number: int, peer: trio.abc.Stream) -> dict[str, object] | None:
    """One connection of the race: the server's side; returns the host's answer to the
    push (None if it never came)."""
    lines = _Lines(peer)
    init = await lines.next()
    tree = {"version": "0.5", "pushEvents": number % 2 == 1}
    result = {
        "protocolVersion": "2024-11-05",
        "capabilities": {"experimental": {"mcpl": tree}},
        "serverInfo": {"name": "racer", "version": "1"},
    }
    push = {
        "featureSet": "race",
        "eventId": f"e-{number}",
        "timestamp": "2026-12-01T00:00:00Z",
        "payload": {"content": [{"type": "text", "text": "race"}]},
    }
    await peer.send_all(
        msgspec.json.encode({"jsonrpc": "2.0", "id": init["id"], "result": result})
        + b"\n"
        + msgspec.json.encode(
            {"jsonrpc": "2.0", "id": f"push-{number}", "method": "push/event", "params": push}
        )
        + b"\n"
    )
    answer = None
    with trio.move_on_after(5):
        while answer is None:
            message = await lines.next()
            if message.get("method") == "featureSets/update":
                receipt = {"jsonrpc": "2.0", "id": message["id"], "result": {"accepted": True}}
                await peer.send_all(msgspec.json.encode(receipt) + b"\n")
            elif message.get("id") == f"push-{number}" and "method" not in message:
                answer = message
    await peer.aclose()
    return answer


class _Lines:
    def __init__(self, stream: trio.abc.Stream) -> None:
        self._stream = stream
        self._buffer = b""

    async def next(self) -> dict[str, object]:
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some(65536)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message: dict[str, object] = msgspec.json.decode(line)
        return message
