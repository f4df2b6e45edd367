"""One probe's connection to the server, raw: lines out, lines in, and a transcript.

The checker does not use :class:`~mcpl_host.Connection`: a probe must send what a
Connection never would (a float id, a broken envelope, a batch on the wrong revision)
and see exactly what came back, byte for byte. :class:`Wire` is that: it writes a JSON
value (or raw bytes) as one line and reads the server's lines one at a time, each within
a deadline, keeping a bounded transcript the findings quote. :class:`StreamWire` is the
byte-stream transports' (stdio, TCP, Unix, WebSocket, in-memory); the HTTP one is in
:mod:`.httpwire`.

Bounded against a hostile server: a line longer than :data:`MAX_LINE_BYTES` is dropped
unread (the framing decoder never holds it whole), what one exchange keeps of the lines
it reads is at most 1000 lines and :data:`KEPT_BYTES` bytes (the middle dropped, the
answer kept), the transcript keeps the last :data:`TRANSCRIPT_LINES` lines, each cut to
:data:`EVIDENCE_CHARS` characters after escaping and redaction, and every read has a
deadline.

:func:`is_response`, :func:`error_code` and :func:`shown` are what every probe asks of
a received value: whether it answers a request, its error's code, and how to show it.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import msgspec
import trio

from .. import __version__
from ..protocol.batch import BatchPlan, plan_batch
from ..protocol.discover import request_meta
from ..protocol.envelope import Batch, Classified, InvalidRequest, Request, decode_line
from ..protocol.errors import INVALID_REQUEST, METHOD_NOT_FOUND
from ..protocol.framing import LineDecoder, OversizedLine
from ..protocol.messages import ResultAnswer, error_answer
from ..protocol.profiles import PROFILES
from ..protocol.redact import Redactor
from .rules import Line

__all__ = [
    "CLIENT_INFO",
    "EVIDENCE_CHARS",
    "KEPT_BYTES",
    "MAX_LINE_BYTES",
    "MODERN",
    "NOT_JSON",
    "UNANSWERED",
    "Received",
    "StreamWire",
    "Wire",
    "error_code",
    "is_response",
    "request_ids",
    "same_id",
    "shown",
]

MAX_LINE_BYTES: Final = 4 * 1024 * 1024
# What one exchange keeps of what it reads, in bytes (see Wire.received_within).
KEPT_BYTES: Final = 16 * 1024 * 1024
TRANSCRIPT_LINES: Final = 400
EVIDENCE_CHARS: Final = 300
MODERN: Final = "2026-07-28"
CLIENT_INFO: Final = {"name": "mcpl-host-check", "version": __version__}

_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder()


class _NotJson:
    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Final = _NotJson()
"""The value of a received line that is not JSON."""


class _Unanswered:
    pass


UNANSWERED: Final = _Unanswered()
"""What a transport's read returns when it knows the request being waited for
(:attr:`Wire.awaiting`) will get no answer: its HTTP exchange ended without one."""


@dataclass(frozen=True, slots=True)
class Received:
    """One line from the server: its bytes and its JSON value (:data:`NOT_JSON` if none)."""

    raw: bytes
    value: Any

    @property
    def is_json_rpc(self) -> bool:
        """An object (or array of objects) claiming ``"jsonrpc": "2.0"``."""
        values = self.value if isinstance(self.value, list) else [self.value]
        return bool(values) and all(
            isinstance(v, dict) and v.get("jsonrpc") == "2.0" for v in values
        )


class _Any:
    pass


_ANY_ID: Final = _Any()


def is_response(value: Any, id_: Any = _ANY_ID) -> bool:
    """Whether ``value`` (a received JSON value) is a response: an object with no method
    and an id, a result or an error; with ``id_``, one whose id is ``id_`` (type and
    value, as :func:`same_id`)."""
    if not isinstance(value, dict) or "method" in value:
        return False
    if id_ is _ANY_ID:
        return "id" in value or "result" in value or "error" in value
    return "id" in value and same_id(value["id"], id_)


def error_code(answer: Any) -> Any:
    """The code of ``answer``'s error: None when it has none; the error member itself
    when that is not an object (what the server sent, for a detail)."""
    error = answer.get("error") if isinstance(answer, dict) else None
    return error.get("code") if isinstance(error, dict) else error


def shown(value: Any, limit: int = 60) -> str:
    """A value the server sent, for a finding's detail: as JSON (``null``, ``true``,
    ``"text"``), cut to ``limit`` characters. The Context escapes and redacts the whole
    detail."""
    try:
        text = _ENCODER.encode(value).decode()
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError):
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def same_id(a: object, b: object) -> bool:
    """Ids equal as JSON-RPC means it: same type and value (``1`` is not ``"1"``,
    ``true`` is not ``1``)."""
    return type(a) is type(b) and a == b


class Wire:
    """The transport-independent half: ids, requests, the transcript.

    ``version`` is the revision the connection speaks once a probe set it (``initialize``
    answered, or a 2026-07-28 probe): :meth:`call` adds the ``_meta`` 2026-07-28 requires
    when it is that revision. ``outstanding`` holds the ids of the requests sent and not
    yet answered.

    The server's own requests are answered as they are read (:meth:`receive`): ``ping``
    with an empty result ("The receiver MUST respond promptly", basic/utilities/ping),
    anything else with -32601, since the checker declares no client capability.
    """

    is_http: ClassVar[bool] = False

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.version: str | None = None
        self.closed = False  # the server ended the connection (EOF)
        self.broken = False  # a probe found the server unresponsive on it
        self.start = 0  # where this wire's evidence starts (a borrowed one's: the borrow)
        self.awaiting: Any = None  # the id :meth:`answer` waits for
        self.received = 0  # lines received
        self.outstanding: list[Any] = []  # ids of requests sent and not yet answered
        # Over HTTP: each POST's outcome (an httpwire.Posted), in the order they completed;
        # empty on a byte stream.
        self.posts: list[Any] = []
        self._ids = itertools.count(1)
        self._transcript: deque[Line] = deque(maxlen=TRANSCRIPT_LINES)
        self._count = 0  # lines ever added to the transcript

    # --- what subclasses provide -----------------------------------------------------
    async def _write(self, data: bytes) -> None:
        raise NotImplementedError

    async def _read(self) -> bytes | _Unanswered | None:
        """The next line (without its newline), None at the end of the stream, or
        :data:`UNANSWERED`."""
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    async def settle(self, timeout: float) -> None:
        """Wait (at most ``timeout``) until what was sent has reached the server: a no-op
        on a byte stream, which keeps order; on HTTP, until every POST is answered."""
        del timeout

    async def posted(self, count: int, timeout: float) -> None:
        """Wait (at most ``timeout``) until ``count`` POSTs have begun answering: a no-op
        on a byte stream, where each line is not a request of its own."""
        del count, timeout

    def is_refusal(self, line: Received) -> bool:
        """Whether ``line`` is the transport's refusal of what was sent rather than a
        JSON-RPC response to it: never on a byte stream; on HTTP, the body of a 4xx
        answer to a POST of notifications."""
        del line
        return False

    # --- the transcript ---------------------------------------------------------------
    def note(self, direction: str, text: str) -> None:
        """Add a line to the transcript: escaped, redacted and cut here."""
        self._transcript.append(Line(direction, self.redactor.log_value(text, EVIDENCE_CHARS)))
        self._count += 1

    def mark(self) -> int:
        """A position in the transcript, for :meth:`since`."""
        return self._count

    def since(self, mark: int | None = None) -> tuple[Line, ...]:
        """The transcript's lines from ``mark`` on (those still kept); by default from
        :attr:`start`."""
        mark = self.start if mark is None else mark
        kept = len(self._transcript)
        first_kept = self._count - kept
        start = max(mark, first_kept) - first_kept
        return tuple(itertools.islice(self._transcript, start, None))

    # --- sending and receiving --------------------------------------------------------
    def next_id(self) -> int:
        return next(self._ids)

    async def send(self, message: Any) -> None:
        """Send ``message``: bytes as they are (a newline is added unless they end with
        one), anything else as its JSON on one line."""
        data = message if isinstance(message, bytes) else _ENCODER.encode(message)
        self.note("→", data.rstrip(b"\n").decode("utf-8", "replace"))
        value = message
        if isinstance(message, bytes):
            try:
                value = _DECODER.decode(message)
            except msgspec.DecodeError:
                value = None
        self.outstanding += request_ids(value)
        await self._write(data if data.endswith(b"\n") else data + b"\n")

    async def receive(self, timeout: float) -> Received | None:
        """The next line within ``timeout`` seconds; None on silence or at the end."""
        if self.closed:
            return None
        with trio.move_on_after(timeout):
            raw = await self._read()
            if isinstance(raw, _Unanswered):
                return None
            if raw is None:
                self.closed = True
                self.note("·", "the server closed the connection")
                return None
            self.received += 1
            self.note("←", raw.decode("utf-8", "replace"))
            try:
                value = _DECODER.decode(raw)
            except msgspec.DecodeError:
                value = NOT_JSON
            self._answered(value)
            await self._serve(raw)
            return Received(raw, value)
        return None

    def _answered(self, value: Any) -> None:
        """Take the ids ``value`` answers (a response, or a batch's array of them) off
        :attr:`outstanding`."""
        for message in value if isinstance(value, list) else [value]:
            if isinstance(message, dict) and "method" not in message and "id" in message:
                self.forget([message["id"]])

    def forget(self, ids: list[Any]) -> None:
        """Take ``ids`` off :attr:`outstanding`: answered, or known never to be."""
        for id_ in ids:
            self.outstanding = [i for i in self.outstanding if not same_id(i, id_)]

    async def _serve(self, raw: bytes) -> None:
        """Answer the server's own requests by the host's rules (protocol/envelope.py and
        batch.py, DESIGN 3.2 and 3.4): ``ping`` with an empty result, any other request
        with -32601 (the checker offers no client feature), an invalid one with -32600;
        a batch's in one array where the revision takes batches. A batch the revision
        does not take is not refused: the refusal would land in the evidence of the probe
        that drew it. On 2026-07-28, where servers send no requests and clients no
        responses, a request is only noted."""
        classified = decode_line(raw)
        if isinstance(classified, Batch):
            plan = plan_batch(classified, PROFILES.get(self.version or ""))
            entries = plan.entries if isinstance(plan, BatchPlan) else ()
        else:
            entries = (classified,)
        answers = [a for a in map(_answer_to, entries) if a is not None]
        if not answers:
            return
        if self.version == MODERN:
            self.note("·", "a request from the server, which 2026-07-28 has none of: not answered")
            return
        if self.busy():
            self.note("·", "a request from the server not answered: too many answers in flight")
            return
        await self.send(answers if isinstance(classified, Batch) else answers[0])

    def busy(self) -> bool:
        """Whether writing one more line would hold more than the wire allows in flight:
        never on a byte stream (a write waits for the server to read); over HTTP, where
        each line is a POST of its own, past :data:`~.httpwire.MAX_POSTS` at once."""
        return False

    async def read_until(self, timeout: float, until: Callable[[Received], bool]) -> bool:
        """Read lines within ``timeout`` until ``until(line)`` is true (True) or the time,
        the stream or an HTTP exchange ends (False). Nothing is kept here: ``until`` keeps
        what it needs, the transcript bounds the rest, so any number of lines is read."""
        with trio.move_on_after(timeout):
            while True:
                line = await self.receive(timeout)
                if line is None:
                    return False
                if until(line):
                    return True
        return False

    async def answer(self, id_: Any, timeout: float) -> dict[str, Any] | None:
        """Read until the response whose id is ``id_`` (type and value) arrives, within
        ``timeout``; None if it never does. Other lines are read past (they stay in the
        transcript only); :meth:`answer_and_lines` keeps them."""
        found: list[dict[str, Any]] = []

        def match(line: Received) -> bool:
            if is_response(line.value, id_):
                found.append(line.value)
            return bool(found)

        self.awaiting = id_
        try:
            await self.read_until(timeout, match)
        finally:
            self.awaiting = None
        return found[0] if found else None

    async def answer_and_lines(
        self, id_: Any, timeout: float
    ) -> tuple[dict[str, Any] | None, list[Received]]:
        """As :meth:`answer`, with every line read meanwhile (bounded as
        :meth:`received_within` keeps them), the response last."""
        self.awaiting = id_
        try:
            lines = await self.received_within(timeout, until=lambda r: is_response(r.value, id_))
        finally:
            self.awaiting = None
        if lines and is_response(lines[-1].value, id_):
            value: dict[str, Any] = lines[-1].value
            return value, lines
        return None, lines

    async def received_within(
        self, timeout: float, until: Any = None, limit: int = 1000
    ) -> list[Received]:
        """Every line received within ``timeout``, stopping early at the first line
        ``until(line)`` is true for (it is the last in the list). Reading goes on until
        then, however many lines come (a tool may report progress a thousand times before
        its result); what is kept is bounded, to ``limit`` lines and
        :data:`KEPT_BYTES` bytes: the first half of each and the last half, the lines
        between dropped (the transcript says how many)."""
        head: list[Received] = []
        tail: deque[Received] = deque()
        head_bytes = tail_bytes = dropped = 0
        with trio.move_on_after(timeout):
            while True:
                line = await self.receive(timeout)
                if line is None:
                    break
                size = len(line.raw)
                if not tail and len(head) < limit // 2 and head_bytes + size <= KEPT_BYTES // 2:
                    head.append(line)
                    head_bytes += size
                else:
                    tail.append(line)
                    tail_bytes += size
                    while len(tail) > 1 and (
                        len(tail) > limit - limit // 2 or tail_bytes > KEPT_BYTES // 2
                    ):
                        tail_bytes -= len(tail.popleft().raw)
                        dropped += 1
                if until is not None and until(line):
                    break
        if dropped:
            self.note("·", f"({dropped} lines read but not kept: past the checker's bound)")
        return [*head, *tail]

    def request(self, method: str, params: Any = None, id_: Any = None) -> dict[str, Any]:
        """A request message (with the 2026-07-28 ``_meta`` when this wire speaks it);
        ``id_`` None takes the next integer."""
        message: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": self.next_id() if id_ is None else id_,
            "method": method,
        }
        if self.version == MODERN:
            params = dict(params or {})
            params["_meta"] = {**request_meta(MODERN, {}, CLIENT_INFO), **params.get("_meta", {})}
        if params is not None:
            message["params"] = params
        return message

    async def call(
        self, method: str, params: Any = None, *, timeout: float, id_: Any = None
    ) -> dict[str, Any] | None:
        """Send a request and return its response (None if none came within ``timeout``)."""
        message = self.request(method, params, id_)
        await self.send(message)
        return await self.answer(message["id"], timeout)

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)


def _answer_to(message: Classified) -> Any:
    """The checker's answer to one message of the server's (None: it needs none)."""
    if isinstance(message, Request):
        if message.method == "ping":
            return ResultAnswer(id=message.id, result={})
        return error_answer(message.id, METHOD_NOT_FOUND, "Method not found")
    if isinstance(message, InvalidRequest):
        return error_answer(message.answer_id, INVALID_REQUEST, message.message)
    return None


def request_ids(value: Any) -> list[Any]:
    """The ids of the requests ``value`` holds (a message, or a batch's entries)."""
    messages = value if isinstance(value, list) else [value]
    return [m["id"] for m in messages if isinstance(m, dict) and "id" in m and "method" in m]


class StreamWire(Wire):
    """A wire over a byte stream: newline-delimited JSON, as stdio, TCP, Unix sockets and
    this project's WebSocket transport carry it. ``process`` is the stdio server's."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        redactor: Redactor,
        *,
        close: Any,
        process: trio.Process | None = None,
    ) -> None:
        super().__init__(redactor)
        self.stream = stream
        self.process = process
        self._close = close
        self._decoder = LineDecoder(MAX_LINE_BYTES)
        self._lines: deque[bytes | OversizedLine] = deque()
        self._eof = False

    async def _write(self, data: bytes) -> None:
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self.note("·", f"could not write: {exc.__class__.__name__}")

    async def _read(self) -> bytes | None:
        while True:
            while self._lines:
                line = self._lines.popleft()
                if isinstance(line, OversizedLine):
                    self.note("·", f"a line of over {MAX_LINE_BYTES} bytes, dropped unread")
                    continue
                return bytes(line)
            if self._eof:
                return None
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                self._eof = True
                self._lines.extend(self._decoder.close())
            else:
                self._lines.extend(self._decoder.feed(data))

    async def close_input(self) -> None:
        """End what the server reads (stdin's EOF on stdio), keeping its output open."""
        self.note("·", "closed the server's input")
        if self.process is not None and self.process.stdin is not None:
            await self.process.stdin.aclose()
        elif isinstance(self.stream, trio.SocketStream):
            await self.stream.send_eof()

    async def aclose(self) -> None:
        await self._close()
