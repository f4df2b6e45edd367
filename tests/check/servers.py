"""Servers for the checker's tests: the demo server, in memory, with one fault.

:func:`serving` runs the demo server's line handling (``mcpl_host.demo.answer_line``)
in this process, one fresh session per connection the checker opens, and passes every
exchange through a :class:`Fault`: the lines the demo would write for one line read,
which the fault may change, drop or add to. With no fault it is the demo server, which
passes every rule; each rule's test gives it the one fault that breaks that rule, so a
check that cannot fail is caught. Faults that concern a process (stdin EOF, SIGTERM,
stdout) need a real one: :mod:`tests.check.faulty_stdio` runs the same thing over stdio.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import trio
import trio.testing

from mcpl_host.check import Opener, Report, check
from mcpl_host.check.context import CheckOptions
from mcpl_host.demo import Session, answer_line
from mcpl_host.protocol.framing import LineDecoder
from mcpl_host.transports import Transport
from mcpl_host.transports.memory import StreamTransport
from mcpl_host.transports.targets import StdioTarget

_ROOT = Path(__file__).resolve().parents[2]

_ENCODER = msgspec.json.Encoder()


class Fault:
    """One connection's fault; this base one changes nothing. ``session`` is the demo's
    session for the connection (``session.version``: the revision it answered)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        """The lines to write for ``line``, given the ``answers`` the demo would write."""
        del line
        return answers


FaultFactory = Callable[[Session], Fault]


def rewrite(change: Callable[[Any, Any], Any]) -> FaultFactory:
    """A fault that rewrites each answer: ``change(request, answer)`` returns the new
    answer (a JSON value), or None to write nothing. ``request`` is the decoded line
    (None when it was not JSON)."""

    class Rewrite(Fault):
        def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
            try:
                request = msgspec.json.decode(line)
            except msgspec.DecodeError:
                request = None
            out = []
            for raw in answers:
                changed = change(request, msgspec.json.decode(raw))
                if changed is not None:
                    out.append(_ENCODER.encode(changed))
            return out

    return Rewrite


async def serve_stream(stream: trio.abc.Stream, fault: Fault) -> None:
    """Serve one connection: the demo's line handling with ``fault``."""
    decoder = LineDecoder()
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while data := await stream.receive_some(65536):
            for line in decoder.feed(data):
                if not isinstance(line, bytes | bytearray):
                    continue
                answer = answer_line(bytes(line), fault.session)
                answers = [] if answer is None else [_ENCODER.encode(answer)]
                for out in fault.exchange(bytes(line), answers):
                    await stream.send_all(out + b"\n")
        await stream.aclose()


@contextlib.asynccontextmanager
async def serving(fault: FaultFactory = Fault) -> AsyncIterator[Opener]:
    """An opener for the in-memory demo server with ``fault`` on every connection."""
    async with trio.open_nursery() as nursery:

        async def open_one() -> Transport:
            host, peer = trio.testing.memory_stream_pair()
            nursery.start_soon(serve_stream, peer, fault(Session()))
            return StreamTransport(host, "scripted")

        yield open_one
        nursery.cancel_scope.cancel()


async def run(
    fault: FaultFactory = Fault, *only: str, timeout: float = 1.0, **options: Any
) -> Report:
    """Check the in-memory demo server with ``fault``, judging only ``only``."""
    async with serving(fault) as opener:
        with trio.fail_after(120):
            return await check(opener, only=only, options=CheckOptions(timeout=timeout, **options))


async def run_stdio(
    fault: str, *only: str, timeout: float = 5.0, exit_grace: float = 1.0
) -> Report:
    """Check :mod:`tests.check.faulty_stdio` with the named ``fault`` over stdio, a real
    subprocess, judging only ``only``. The timeout covers a start on a busy machine:
    a passing run never waits it out."""
    target = StdioTarget.of(
        [sys.executable, "-m", "tests.check.faulty_stdio", fault], cwd=str(_ROOT)
    )
    options = CheckOptions(timeout=timeout, exit_grace=exit_grace)
    with trio.fail_after(60):
        return await check(target, only=only, options=options)


def verdict(report: Report, rule_id: str) -> str:
    """The verdict ``report`` gives ``rule_id`` (it must have judged it)."""
    (finding,) = [f for f in report.findings if f.rule.id == rule_id]
    return finding.verdict.value
