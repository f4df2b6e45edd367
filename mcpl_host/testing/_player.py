"""The script player: what a scripted server does next, with no I/O at all.

:meth:`Player.play` is a generator of commands. A driver performs each command and
sends its outcome back: the trio driver (memory and socket modes) with streams and
``trio.sleep``, the stdio subprocess with blocking reads and ``time.sleep``. Every
decision a scripted server makes (matching, answering ping, the order of steps across
connections, every failure message) lives here once, so the three modes cannot drift
apart. Pure: stdlib and msgspec only.

Commands and their outcomes:

=================  ==============================================================
``Accept``         the host's next connection: ``True``, or ``TIMEOUT``
``Send``           ``None``, or ``CLOSED`` when the host has gone
``Receive``        the host's next line (``bytes``, newline removed), ``EOF`` or
                   ``TIMEOUT``
``Sleep``          ``None`` (time passes; no connection is open)
``Hangup``         ``None`` (this connection is over)
``Refuse``         ``None`` (the next ``count`` attempts fail)
``Done``           ``None`` (every step has run; the player may still listen on
                   the open connection until the host closes it)
=================  ==============================================================

A failed expectation raises :class:`~.errors.ScriptFailed` out of the generator.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import msgspec

from ._wire import (
    HostLine,
    batch_line,
    error_line,
    garbage_line,
    notification_line,
    oversized_line,
    request_line,
    result_line,
)
from .errors import ScriptFailed
from .steps import (
    Crash,
    Drop,
    Expect,
    ExpectAnswer,
    ExpectClose,
    Handshake,
    Notify,
    RefuseConnections,
    Reply,
    ReplyError,
    ScriptData,
    SendBatch,
    SendGarbage,
    SendOversized,
    SendRaw,
    SendRequest,
    ServeForever,
    Step,
    Wait,
    describe,
)

__all__ = [
    "Accept",
    "Command",
    "Done",
    "Hangup",
    "Outcome",
    "Play",
    "Player",
    "Receive",
    "Refuse",
    "Send",
    "Signal",
    "Sleep",
    "same_json",
]


class Signal(enum.Enum):
    EOF = "eof"
    TIMEOUT = "timeout"
    CLOSED = "closed"


EOF: Final = Signal.EOF
TIMEOUT: Final = Signal.TIMEOUT
CLOSED: Final = Signal.CLOSED


@dataclass(frozen=True, slots=True)
class Accept:
    deadline: float


@dataclass(frozen=True, slots=True)
class Send:
    data: bytes


@dataclass(frozen=True, slots=True)
class Receive:
    deadline: float


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class Hangup:
    abrupt: bool


@dataclass(frozen=True, slots=True)
class Refuse:
    count: int


@dataclass(frozen=True, slots=True)
class Done:
    pass


Command: TypeAlias = Accept | Send | Receive | Sleep | Hangup | Refuse | Done
Outcome: TypeAlias = bytes | bool | Signal | None
Play: TypeAlias = Generator[Command, Outcome, None]


class _Link(enum.Enum):
    NONE = "none"  # no connection: the next step that needs one accepts it
    OPEN = "open"
    HOST_CLOSED = "host-closed"  # the host hung up where the script did not expect it


_MISSING: Final = object()
_MAX_SAFE: Final = 2**53 - 1
_SHOWN: Final = 8
_SORTED: Final = msgspec.json.Encoder(order="sorted")


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON: ``1`` is not ``1.0`` nor ``true``; member order does not matter."""
    return _SORTED.encode(a) == _SORTED.encode(b)


@dataclass(frozen=True, slots=True)
class _AnswerTo:
    """What the host's answer to the script's last write looks like."""

    request_id: Any = None
    any_response: bool = False  # after a batch or raw bytes, whatever answers them

    def matches(self, line: HostLine) -> bool:
        if self.any_response:
            return line.kind in ("response", "batch")
        return line.kind == "response" and line.has_id and same_json(line.id, self.request_id)


_ANY_RESPONSE: Final = _AnswerTo(any_response=True)


class Player:
    """Plays one script, from step ``start``, counting connections from ``connections``.

    ``clock`` is the driver's clock (``trio.current_time``, ``time.monotonic``): the
    deadlines in commands are on it.
    """

    def __init__(
        self,
        script: ScriptData,
        *,
        clock: Callable[[], float],
        start: int = 0,
        connections: int = 0,
    ) -> None:
        self.script = script
        self.index = start
        self.connection = connections
        self._clock = clock
        self._link = _Link.NONE
        self._host_closed_at = 0
        self._expected: HostLine | None = None
        self._answer_to: _AnswerTo | None = None  # None: nothing sent on this connection
        # What the host sent on this connection that no step has taken yet, in order.
        # Steps look here first: the host's next message may arrive while the script is
        # busy with something else (sending, waiting for an answer).
        self._backlog: list[HostLine] = []

    def play(self) -> Play:
        steps = self.script.steps
        while self.index < len(steps):
            yield from self._run(steps[self.index])
            self.index += 1
        yield Done()
        if self._link is _Link.OPEN:
            yield from self._listen(answer_everything=False)
            yield Hangup(abrupt=False)
            self._link = _Link.NONE

    # -- one step ------------------------------------------------------------------------

    def _run(self, step: Step) -> Play:
        match step:
            case Handshake():
                yield from self._handshake(step)
            case Expect():
                self._expected = yield from self._expect(step.method, step.params, step.timeout)
            case Reply() | ReplyError():
                yield from self._reply(step)
            case ExpectAnswer():
                yield from self._expect_answer(step.timeout)
            case (
                SendRequest() | Notify() | SendRaw() | SendBatch() | SendGarbage() | SendOversized()
            ):
                yield from self._connected(None)
                yield from self._send(self._line_for(step))
            case Wait():
                yield from self._wait(step.seconds)
            case Drop() | Crash():
                if self._link is _Link.NONE:
                    yield from self._connected(None)
                yield Hangup(abrupt=isinstance(step, Crash))
                self._link = _Link.NONE
            case RefuseConnections():
                yield Refuse(step.count)
            case ExpectClose():
                yield from self._expect_close(step.timeout)
            case ServeForever():
                if self._link is not _Link.HOST_CLOSED:
                    yield from self._connected(None)
                    yield from self._listen(answer_everything=True)
                yield Hangup(abrupt=False)
                self._link = _Link.NONE

    def _line_for(
        self, step: SendRequest | Notify | SendRaw | SendBatch | SendGarbage | SendOversized
    ) -> bytes:
        """The bytes a sending step writes; notes what its answer will look like."""
        match step:
            case SendRequest():
                self._answer_to = _answer_to(step.id, step.id_raw)
                return request_line(step.method, step.params, step.id, step.id_raw)
            case Notify():
                return notification_line(step.method, step.params)
            case SendOversized():
                return oversized_line(step.size)
            case SendRaw():
                line = step.data
            case SendBatch():
                line = batch_line(step.messages)
            case SendGarbage():
                line = garbage_line(step.text)
        self._answer_to = _ANY_RESPONSE
        return line

    def _reply(self, step: Reply | ReplyError) -> Play:
        yield from self._connected(None)
        request_id = self._expected_id()
        if isinstance(step, Reply):
            yield from self._send(result_line(request_id, step.result))
        else:
            yield from self._send(error_line(request_id, step.code, step.message, step.data))

    def _handshake(self, step: Handshake) -> Play:
        init = yield from self._expect("initialize", None, step.timeout)
        result: dict[str, Any] = {"protocolVersion": step.version}
        if step.capabilities is not None:
            result["capabilities"] = step.capabilities
        if step.server_info is not None:
            result["serverInfo"] = step.server_info
        if step.instructions is not None:
            result["instructions"] = step.instructions
        yield from self._send(result_line(init.id, result))
        yield from self._expect("notifications/initialized", None, step.timeout)

    def _expect(
        self, method: str, params: Any, timeout: float | None
    ) -> Generator[Command, Outcome, HostLine]:
        yield from self._connected(timeout)
        line = yield from self._wait_for(lambda line: line.method == method, timeout)
        if params is not None:
            got = line.message.get("params", _MISSING)
            if got is _MISSING or not same_json(got, params):
                shown = "no params" if got is _MISSING else f"params {_json(got)}"
                raise self._failure(f"the host's {method!r} came with {shown}, not {_json(params)}")
        return line

    def _expect_answer(self, timeout: float | None) -> Play:
        yield from self._connected(timeout)
        wanted = self._answer_to
        if wanted is None:
            raise self._failure("the script has sent no request on this connection to answer")
        yield from self._wait_for(wanted.matches, timeout)

    def _expect_close(self, timeout: float | None) -> Play:
        if self._link is not _Link.HOST_CLOSED:
            yield from self._connected(timeout)
            seconds = self._timeout(timeout)
            deadline = self._clock() + seconds
            while True:
                outcome = yield Receive(deadline)
                if outcome is TIMEOUT:
                    raise self._failure(
                        f"the host kept the connection open for {seconds:g} s; {self._unmatched()}"
                    )
                if outcome is EOF:
                    break
                yield from self._absorb(HostLine.parse(_line(outcome)))
        yield Hangup(abrupt=False)
        self._link = _Link.NONE

    def _wait(self, seconds: float) -> Play:
        if self._link is not _Link.OPEN:
            yield Sleep(seconds)
            return
        deadline = self._clock() + seconds
        while True:
            outcome = yield Receive(deadline)
            if outcome is TIMEOUT:
                return
            if outcome is EOF:
                # Waiting on a connection the host has left means nothing: end the wait.
                self._note_host_closed()
                return
            yield from self._absorb(HostLine.parse(_line(outcome)))

    def _listen(self, *, answer_everything: bool) -> Play:
        """Until the host closes: answer ping (and with ``answer_everything``,
        tools/list and -32601 for the rest, the requests already waiting first)."""
        if answer_everything:
            waiting = [line for line in self._backlog if line.kind == "request"]
            self._backlog = [line for line in self._backlog if line.kind != "request"]
            for line in waiting:
                yield from self._serve(line)
        while True:
            outcome = yield Receive(math.inf)
            if outcome is EOF:
                self._note_host_closed()
                return
            if outcome is TIMEOUT:  # pragma: no cover - no deadline
                continue
            line = HostLine.parse(_line(outcome))
            if answer_everything and line.kind == "request":
                yield from self._serve(line)
            else:
                yield from self._absorb(line)

    def _serve(self, request: HostLine) -> Play:
        """``serve_forever``'s answer to one request."""
        if request.method == "ping":
            yield from self._send(result_line(request.id, {}))
        elif request.method == "tools/list":
            yield from self._send(result_line(request.id, {"tools": []}))
        else:
            message = f"Method not found: {request.method}"
            yield from self._send(error_line(request.id, -32601, message))

    # -- waiting for the host ------------------------------------------------------------

    def _connected(self, timeout: float | None) -> Play:
        if self._link is _Link.OPEN:
            return
        if self._link is _Link.HOST_CLOSED:
            raise self._failure(
                f"the host had closed connection {self.connection} during step "
                f"{self._host_closed_at + 1}; a step on a new connection must come after "
                "drop(), crash(), expect_close() or serve_forever()"
            )
        seconds = self._timeout(timeout)
        outcome = yield Accept(self._clock() + seconds)
        if outcome is TIMEOUT:
            raise self._failure(f"the host opened no connection within {seconds:g} s")
        self.connection += 1
        self._link = _Link.OPEN
        self._expected = None
        self._answer_to = None
        self._backlog = []

    def _wait_for(
        self, match: Callable[[HostLine], bool], timeout: float | None
    ) -> Generator[Command, Outcome, HostLine]:
        for index, line in enumerate(self._backlog):
            if match(line):
                del self._backlog[index]
                return line
        seconds = self._timeout(timeout)
        deadline = self._clock() + seconds
        while True:
            outcome = yield Receive(deadline)
            if outcome is TIMEOUT:
                raise self._failure(
                    f"no matching message came within {seconds:g} s; {self._unmatched()}"
                )
            if outcome is EOF:
                self._note_host_closed()
                raise self._failure(f"the host closed the connection instead; {self._unmatched()}")
            line = HostLine.parse(_line(outcome))
            if match(line):
                return line
            yield from self._absorb(line)

    def _absorb(self, line: HostLine) -> Play:
        """What arrives while the script waits for something else: ping is answered;
        the rest waits in the backlog for a later step, which may take it."""
        if line.kind == "request" and line.method == "ping":
            yield from self._send(result_line(line.id, {}))
        else:
            self._backlog.append(line)

    def _send(self, data: bytes) -> Play:
        outcome = yield Send(data)
        if outcome is CLOSED:
            self._note_host_closed()
            raise self._failure("the host had closed the connection: the write failed")

    # -- small helpers -------------------------------------------------------------------

    def _expected_id(self) -> Any:
        expected = self._expected
        if expected is None:
            raise self._failure("no request was expected on this connection before it")
        if expected.kind != "request":
            raise self._failure(f"the last message expected, {expected.describe()}, has no id")
        return expected.id

    def _note_host_closed(self) -> None:
        self._link = _Link.HOST_CLOSED
        self._host_closed_at = self.index

    def _unmatched(self) -> str:
        return _unmatched(self._backlog)

    def _timeout(self, own: float | None) -> float:
        return self.script.timeout if own is None else own

    def _failure(self, detail: str) -> ScriptFailed:
        steps = self.script.steps
        step = describe(steps[self.index]) if self.index < len(steps) else "(end of script)"
        connection = self.connection if self._link is not _Link.NONE else None
        return ScriptFailed(detail, step_number=self.index + 1, step=step, connection=connection)


def _answer_to(request_id: int | str | None, id_raw: str | None) -> _AnswerTo:
    """The id the host's answer carries: the request's own when that is a string or a
    safe integer, otherwise null (the host cannot echo an id it refuses)."""
    value: Any = request_id
    if id_raw is not None:
        try:
            value = msgspec.json.decode(id_raw)
        except msgspec.DecodeError:
            value = None
    valid = type(value) is str or (type(value) is int and abs(value) <= _MAX_SAFE)
    return _AnswerTo(request_id=value if valid else None)


def _line(outcome: Outcome) -> bytes:
    assert isinstance(outcome, bytes), outcome
    return outcome


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _unmatched(backlog: list[HostLine]) -> str:
    if not backlog:
        return "the host sent nothing else"
    shown = "; ".join(line.describe() for line in backlog[:_SHOWN])
    more = f"; and {len(backlog) - _SHOWN} more" if len(backlog) > _SHOWN else ""
    return f"the host sent instead: {shown}{more}"
