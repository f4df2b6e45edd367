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
``Send``           ``None``, or ``CLOSED`` when the host has gone (``unplanned``:
                   the number, from 0 on this connection, of the host's line this
                   answers because no step planned for it; the driver records it)
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
    ExpectAll,
    ExpectAnswer,
    ExpectClose,
    Expected,
    Handshake,
    Notify,
    OnUnplanned,
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
    describe_expected,
    takes,
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
    unplanned: int | None = None


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
# What a dual-era host may open a connection with, before a handshake step's initialize.
_OPENINGS: Final = frozenset({"initialize", "server/discover"})
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


@dataclass(frozen=True, slots=True)
class _Stray:
    """A line from the host that no step has taken (yet)."""

    line: HostLine
    answered: bool  # answered as unplanned: no step on this connection will take it


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
        self._expected: list[HostLine] = []  # what the last expecting step took
        self._labels: dict[str, HostLine] = {}  # by name (label, else method): the last taken
        self._answer_to: _AnswerTo | None = None  # None: nothing sent on this connection
        self._received = 0  # lines read on this connection
        # What the host sent on this connection that no step has taken yet, in order.
        # Steps look here first: the host's next message may arrive while the script is
        # busy with something else (sending, waiting for an answer).
        self._backlog: list[_Stray] = []

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
                line = yield from self._expect(step.method, step.params, step.timeout)
                self._expected = [line]
                self._labels[step.name] = line
            case ExpectAll():
                yield from self._expect_all(step)
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
            case OnUnplanned():
                pass  # read where an unplanned request arrives: ScriptData.unplanned_at
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
        request_id = self._request_id(step.to)
        if isinstance(step, Reply):
            yield from self._send(result_line(request_id, step.result))
        else:
            yield from self._send(error_line(request_id, step.code, step.message, step.data))

    def _handshake(self, step: Handshake) -> Play:
        # A dual-era host asks server/discover first; a handshake-era server knows no
        # such method and refuses it (-32601), so the host falls back to initialize.
        yield from self._connected(step.timeout)
        deadline = self._clock() + self._timeout(step.timeout)
        while True:
            init = yield from self._wait_for(
                lambda line: line.method in _OPENINGS, step.timeout, deadline=deadline
            )
            if init.method == "initialize":
                break
            if init.kind == "request":
                yield from self._send(
                    error_line(init.id, -32601, "Method not found: server/discover", None)
                )
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

    def _expect_all(self, step: ExpectAll) -> Play:
        """Take each of ``step.expected`` as it comes, in whatever order the host sends."""
        yield from self._connected(step.timeout)
        deadline = self._clock() + self._timeout(step.timeout)
        missing = list(step.expected)
        taken: list[HostLine] = []
        while missing:
            line = yield from self._wait_for(
                lambda line: any(expected.method == line.method for expected in missing),
                step.timeout,
                deadline=deadline,
                missing=missing,
            )
            expected = self._member_for(line, missing)
            missing.remove(expected)
            self._labels[expected.name] = line
            taken.append(line)
        self._expected = taken

    def _member_for(self, line: HostLine, missing: list[Expected]) -> Expected:
        """The member ``line`` fills: one whose params it has, else one without params
        (taking the specific first leaves the others free for what they alone fit)."""
        candidates = [expected for expected in missing if expected.method == line.method]
        got = line.message.get("params", _MISSING)
        for expected in candidates:
            if (
                expected.params is not None
                and got is not _MISSING
                and same_json(got, expected.params)
            ):
                return expected
        for expected in candidates:
            if expected.params is None:
                return expected
        shown = "no params" if got is _MISSING else f"params {_json(got)}"
        wanted = " nor ".join(_json(expected.params) for expected in candidates)
        raise self._failure(f"the host's {line.method!r} came with {shown}, not {wanted}")

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
                read = yield from self._read(deadline)
                if read is TIMEOUT:
                    raise self._failure(
                        f"the host kept the connection open for {seconds:g} s; {self._unmatched()}"
                    )
                if read is EOF:
                    break
                yield from self._absorb(_host_line(read))
        yield Hangup(abrupt=False)
        self._link = _Link.NONE

    def _wait(self, seconds: float) -> Play:
        if self._link is not _Link.OPEN:
            yield Sleep(seconds)
            return
        deadline = self._clock() + seconds
        while True:
            read = yield from self._read(deadline)
            if read is TIMEOUT:
                return
            if read is EOF:
                # Waiting on a connection the host has left means nothing: end the wait.
                self._note_host_closed()
                return
            yield from self._absorb(_host_line(read))

    def _listen(self, *, answer_everything: bool) -> Play:
        """Until the host closes: answer ping (and with ``answer_everything``,
        tools/list and -32601 for the rest, the requests already waiting first)."""
        if answer_everything:
            waiting = [s for s in self._backlog if s.line.kind == "request" and not s.answered]
            self._backlog = [s for s in self._backlog if s.answered or s.line.kind != "request"]
            for stray in waiting:
                yield from self._serve(stray.line)
        while True:
            read = yield from self._read(math.inf)
            if read is EOF:
                self._note_host_closed()
                return
            if read is TIMEOUT:  # pragma: no cover - no deadline
                continue
            line = _host_line(read)
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
        self._expected = []
        self._labels = {}
        self._answer_to = None
        self._received = 0
        self._backlog = []

    def _read(self, deadline: float) -> Generator[Command, Outcome, bytes | Signal]:
        """The host's next line, ``EOF`` or ``TIMEOUT``; counts the lines read."""
        outcome = yield Receive(deadline)
        if isinstance(outcome, bytes):
            self._received += 1
            return outcome
        assert isinstance(outcome, Signal), outcome
        return outcome

    def _wait_for(
        self,
        match: Callable[[HostLine], bool],
        timeout: float | None,
        *,
        deadline: float | None = None,
        missing: list[Expected] | None = None,
    ) -> Generator[Command, Outcome, HostLine]:
        for index, stray in enumerate(self._backlog):
            if not stray.answered and match(stray.line):
                del self._backlog[index]
                return stray.line
        seconds = self._timeout(timeout)
        if deadline is None:
            deadline = self._clock() + seconds
        while True:
            read = yield from self._read(deadline)
            if read is TIMEOUT:
                still = ""
                if missing:
                    still = f" (still missing {', '.join(map(describe_expected, missing))})"
                raise self._failure(
                    f"no matching message came within {seconds:g} s{still}; {self._unmatched()}"
                )
            if read is EOF:
                self._note_host_closed()
                raise self._failure(f"the host closed the connection instead; {self._unmatched()}")
            line = _host_line(read)
            if match(line):
                return line
            yield from self._absorb(line)

    def _absorb(self, line: HostLine) -> Play:
        """What arrives while the script waits for something else: ping is answered; a
        request no step on this connection will take gets the unplanned answer; the rest
        waits in the backlog for a later step, which may take it. ``line`` is always the
        line just read."""
        if line.kind == "request" and line.method == "ping":
            yield from self._send(result_line(line.id, {}))
            return
        answer = None
        if line.kind == "request" and not self._planned(line):
            answer = self._unplanned_answer(line)
        self._backlog.append(_Stray(line, answered=answer is not None))
        if answer is not None:
            yield from self._send(answer, unplanned=self._received - 1)

    def _planned(self, line: HostLine) -> bool:
        """Whether a step still to come on this connection will take ``line``: more of
        them wait for its method than lines already wait for them. The step running now
        has not taken it, so it will not."""
        steps = self.script.steps
        if self.index < len(steps) and isinstance(steps[self.index], ExpectClose):
            return False  # the steps after it are for the next connection
        wanted = 0
        for step in steps[self.index + 1 :]:
            if isinstance(step, ServeForever):
                return True  # it answers every request still waiting
            if isinstance(step, (Drop, Crash, ExpectClose)):
                break
            wanted += takes(step).count(line.method)
        waiting = sum(1 for s in self._backlog if not s.answered and s.line.method == line.method)
        return wanted > waiting

    def _unplanned_answer(self, request: HostLine) -> bytes | None:
        """The answer the script's ``on_unplanned`` gives ``request`` (``None``: none)."""
        how = self.script.unplanned_at(self.index)
        if how.answer == "none":
            return None
        if how.answer == "result":
            return result_line(request.id, how.result)
        message = how.message if how.message is not None else f"Method not found: {request.method}"
        return error_line(request.id, how.code, message, how.data)

    def _send(self, data: bytes, *, unplanned: int | None = None) -> Play:
        outcome = yield Send(data, unplanned)
        if outcome is CLOSED:
            self._note_host_closed()
            raise self._failure("the host had closed the connection: the write failed")

    # -- small helpers -------------------------------------------------------------------

    def _request_id(self, to: str | None) -> Any:
        """The id of the request a reply answers: the one labelled ``to``, or the one
        the last expecting step took."""
        if to is not None:
            chosen = self._labels.get(to)
            if chosen is None:
                raise self._failure(
                    f"no message labelled {to!r} was expected on this connection before it"
                )
            which = f"the message labelled {to!r}"
        elif not self._expected:
            raise self._failure("no request was expected on this connection before it")
        elif len(self._expected) > 1:
            raise self._failure(
                f"the last step expected {len(self._expected)} messages: say which to answer "
                "with to="
            )
        else:
            chosen = self._expected[0]
            which = "the last message expected"
        if chosen.kind != "request":
            raise self._failure(f"{which}, {chosen.describe()}, has no id")
        return chosen.id

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


def _host_line(read: bytes | Signal) -> HostLine:
    assert isinstance(read, bytes), read
    return HostLine.parse(read)


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _unmatched(backlog: list[_Stray]) -> str:
    if not backlog:
        return "the host sent nothing else"
    shown = "; ".join(
        s.line.describe() + (", answered as unplanned" if s.answered else "")
        for s in backlog[:_SHOWN]
    )
    more = f"; and {len(backlog) - _SHOWN} more" if len(backlog) > _SHOWN else ""
    return f"the host sent instead: {shown}{more}"
