"""``Script``: a scripted MCP server, written once as a chain of steps.

The builder only collects data (:mod:`.steps`); it performs nothing. Steps run in
order across connections: those after a ``drop()`` or ``crash()`` run on the next
connection the host opens.
"""

from __future__ import annotations

import enum
import math
from typing import Any, Final

import msgspec

from ._wire import MIN_OVERSIZED
from .steps import (
    DEFAULT_TIMEOUT,
    DEFAULT_UNPLANNED,
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
    names,
)

__all__ = ["AUTO", "DEFAULT_TIMEOUT", "Expected", "Script"]

_DECODER: Final = msgspec.json.Decoder(ScriptData)


class _Auto(enum.Enum):
    AUTO = "auto"


class _Empty(enum.Enum):
    EMPTY = "empty"


_EMPTY: Final = _Empty.EMPTY


AUTO: Final = _Auto.AUTO
"""``send_request``'s default id: the next integer of the script's own counter (1, 2, ...)."""


class Script:
    """A fluent builder of a scripted server's steps; every method returns the script.

    ``timeout`` bounds every wait for the host (a step's own ``timeout`` overrides it), so
    a script that is not followed fails with an error instead of hanging. Likewise a
    request no step plans for is answered (-32601 unless :meth:`on_unplanned` or
    :meth:`ignore_unplanned` says otherwise), so the host does not hang on it either.

    Raises ``ValueError`` (a bad timeout, size or count) and ``TypeError`` (a value JSON
    cannot carry) when a step is added, not when it runs.
    """

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = _positive("timeout", timeout)
        self._steps: list[Step] = []
        self._next_id = 1

    # -- the connection ------------------------------------------------------------------

    def handshake(
        self,
        version: str = "2025-11-25",
        *,
        capabilities: dict[str, Any] | None = None,
        server_info: dict[str, Any] | None = None,
        instructions: str | None = None,
        timeout: float | None = None,
    ) -> Script:
        """Expect ``initialize``; answer ``protocolVersion: version`` plus only what is
        given here; expect ``notifications/initialized``."""
        return self._add(
            Handshake(
                version=version,
                capabilities=capabilities,
                server_info=server_info,
                instructions=instructions,
                timeout=_optional_timeout(timeout),
            )
        )

    def drop(self) -> Script:
        """Close the connection cleanly (the host reads end of file); the steps after
        this run on the next connection. With no connection open, the next one is
        accepted and closed at once."""
        return self._add(Drop())

    def crash(self) -> Script:
        """End the connection abruptly: a stdio server kills itself with SIGKILL, a
        socket is reset, an in-memory stream breaks under the host's reader."""
        return self._add(Crash())

    def refuse_connections(self, count: int) -> Script:
        """Make the next ``count`` connection attempts fail (memory: ``TransportError``
        from the target; socket: accepted and reset at once; stdio: the process exits
        with status 1 before reading anything)."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError("refuse_connections needs a count of at least 1")
        return self._add(RefuseConnections(count=count))

    def expect_close(self, *, timeout: float | None = None) -> Script:
        """Wait for the host to close the connection (end of file)."""
        return self._add(ExpectClose(timeout=_optional_timeout(timeout)))

    def serve_forever(self) -> Script:
        """Until the host closes the connection: answer ``ping`` with ``{}``,
        ``tools/list`` with ``{"tools": []}``, every other request with -32601."""
        return self._add(ServeForever())

    def wait(self, seconds: float) -> Script:
        """Let time pass (``trio.sleep`` in memory and socket mode, a real sleep in the
        subprocess), recording what arrives and answering ping meanwhile. If the host
        closes the connection, the wait ends there."""
        return self._add(Wait(seconds=_non_negative("seconds", seconds)))

    # -- what the host sends -------------------------------------------------------------

    def expect(
        self,
        method: str,
        params: Any = None,
        *,
        label: str | None = None,
        timeout: float | None = None,
    ) -> Script:
        """Wait for the host's next request or notification named ``method``; others
        arriving meanwhile are recorded (a ``ping`` is answered ``{}`` unless this step
        expects ``ping``). With ``params``, the message's params must equal them.
        ``label`` names it for ``reply(to=...)`` (by default its method does)."""
        return self._add(
            Expect(
                method=_text("method", method),
                params=_json("params", params),
                label=_label(label),
                timeout=_optional_timeout(timeout),
            )
        )

    def expect_all(self, *expected: str | Expected, timeout: float | None = None) -> Script:
        """Wait until the host has sent every one of ``expected`` (a method, or an
        :class:`Expected` with params and a label), in any order. A message goes to a
        member whose params it has, else to one of its method without params; one of an
        expected method with other params fails the script. Raises ``ValueError`` for no
        members or two of one name (label, else method)."""
        if not expected:
            raise ValueError("expect_all needs at least one message to expect")
        members = tuple(_expected(index, item) for index, item in enumerate(expected))
        given = [member.name for member in members]
        twice = sorted({name for name in given if given.count(name) > 1})
        if twice:
            raise ValueError(
                f"expect_all names {', '.join(map(repr, twice))} twice: give each a label"
            )
        return self._add(ExpectAll(expected=members, timeout=_optional_timeout(timeout)))

    def reply(self, result: Any = _EMPTY, *, to: str | None = None) -> Script:
        """Answer a request with ``result`` (default ``{}``; ``None`` writes
        ``"result": null``) under its own id: the one labelled ``to`` (its label, else
        its method), else the one the last ``expect`` took. Raises ``ValueError`` when
        no earlier step names ``to``, or ``to`` is missing after an ``expect_all`` of
        several."""
        if result is _EMPTY:
            result = {}
        return self._add(Reply(result=_json("result", result), to=self._to(to)))

    def reply_error(
        self, code: int, message: str, data: Any = None, *, to: str | None = None
    ) -> Script:
        """Answer a request, as :meth:`reply` picks it, with a JSON-RPC error."""
        if isinstance(code, bool) or not isinstance(code, int):
            raise TypeError("an error code must be an integer")
        return self._add(
            ReplyError(
                code=code,
                message=_text("message", message),
                data=_json("data", data),
                to=self._to(to),
            )
        )

    def on_unplanned(
        self,
        *,
        result: Any = _EMPTY,
        error: int | None = None,
        message: str | None = None,
        data: Any = None,
    ) -> Script:
        """From here on, answer a request that no step still to come on its connection
        will take (and that is not ``ping``) with ``result``, or else with the error
        ``error`` (default -32601), ``message`` (default ``Method not found:
        <method>``) and ``data``. Until a script says otherwise: -32601. Raises
        ``ValueError`` when given both a result and an error."""
        if result is not _EMPTY:
            if error is not None or message is not None or data is not None:
                raise ValueError("on_unplanned answers with a result or an error, not both")
            return self._add(OnUnplanned(answer="result", result=_json("result", result)))
        if error is not None and (isinstance(error, bool) or not isinstance(error, int)):
            raise TypeError("an error code must be an integer")
        # From the default itself when no code is given, so that its JSON leaves it out.
        how = DEFAULT_UNPLANNED if error is None else OnUnplanned(code=error)
        return self._add(
            msgspec.structs.replace(
                how,
                message=None if message is None else _text("message", message),
                data=_json("data", data),
            )
        )

    def ignore_unplanned(self) -> Script:
        """From here on, leave a request no step will take unanswered (recorded, and
        shown when a step fails), until an ``on_unplanned`` step says otherwise."""
        return self._add(OnUnplanned(answer="none"))

    def expect_answer(self, *, timeout: float | None = None) -> Script:
        """Wait for the host's answer to the last request the script sent: the response
        with its id (``null`` when that id was null or invalid). After ``send_batch``,
        ``send_raw`` or ``send_garbage``: the next response or array of responses."""
        return self._add(ExpectAnswer(timeout=_optional_timeout(timeout)))

    # -- what the script sends -----------------------------------------------------------

    def send_request(
        self,
        method: Any,
        params: Any = None,
        *,
        id: int | str | _Auto | None = AUTO,
        id_raw: str | None = None,
    ) -> Script:
        """Send a request. ``id``: an integer, a string, ``None`` for ``"id": null``, or
        by default the script's next integer. ``id_raw`` writes that JSON text as the id
        token instead (``'{"a":1}'``, ``'1e400'``). ``method`` may be any JSON value, to
        send a malformed request."""
        if id is AUTO:
            id = self._next_id
            self._next_id += 1
        elif isinstance(id, bool) or not isinstance(id, (int, str, type(None))):
            raise TypeError("a request id must be an int, a str or None (use id_raw for others)")
        if id_raw is not None and (not isinstance(id_raw, str) or not id_raw or "\n" in id_raw):
            raise ValueError("id_raw must be JSON text on one line")
        return self._add(
            SendRequest(
                method=_json("method", method),
                params=_json("params", params),
                id=id,
                id_raw=id_raw,
            )
        )

    def notify(self, method: str, params: Any = None) -> Script:
        """Send a notification (``params`` left out when None)."""
        return self._add(Notify(method=_text("method", method), params=_json("params", params)))

    def send_raw(self, data: bytes) -> Script:
        """Write exactly ``data``; no newline is added."""
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("send_raw takes bytes")
        return self._add(SendRaw(data=bytes(data)))

    def send_batch(self, messages: list[Any]) -> Script:
        """Write ``messages`` (plain JSON values, written as given) as one JSON array."""
        if not isinstance(messages, list):
            raise TypeError("send_batch takes a list of messages")
        return self._add(SendBatch(messages=_json("messages", messages)))

    def send_garbage(self, text: str = "this line is not JSON {") -> Script:
        """Write one line that is not JSON."""
        if "\n" in text or not text.strip():
            # An empty line is skipped as no line at all: that would not test anything.
            raise ValueError("garbage is one line with something on it")
        try:
            msgspec.json.decode(text)
        except msgspec.DecodeError:
            return self._add(SendGarbage(text=text))
        raise ValueError(f"{text!r} is JSON, not garbage")

    def send_oversized(self, size: int) -> Script:
        """Write one line of exactly ``size`` bytes, newline not counted (a padded
        notification, so only the size is wrong with it)."""
        if isinstance(size, bool) or not isinstance(size, int) or size < MIN_OVERSIZED:
            raise ValueError(f"send_oversized needs at least {MIN_OVERSIZED} bytes")
        return self._add(SendOversized(size=size))

    # -- the script as data --------------------------------------------------------------

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self._steps)

    def data(self) -> ScriptData:
        """The script as one immutable value."""
        return ScriptData(steps=tuple(self._steps), timeout=self.timeout)

    def to_json(self) -> bytes:
        """The script as a JSON document (what the stdio server reads)."""
        return msgspec.json.encode(self.data())

    @classmethod
    def from_json(cls, text: bytes | str) -> Script:
        """A script back from :meth:`to_json`. Raises ``msgspec.ValidationError``."""
        data = _DECODER.decode(text)
        script = cls(timeout=data.timeout)
        script._steps = list(data.steps)
        script._next_id = 1 + max(
            (s.id for s in data.steps if isinstance(s, SendRequest) and type(s.id) is int),
            default=0,
        )
        return script

    def __len__(self) -> int:
        return len(self._steps)

    def __repr__(self) -> str:
        return f"Script({len(self._steps)} steps, timeout={self.timeout:g})"

    def _add(self, step: Step) -> Script:
        self._steps.append(step)
        return self

    def _to(self, to: str | None) -> str | None:
        """``to`` checked against the steps so far: a reply must be able to find its
        request (whether it is on the same connection is known only when it runs)."""
        expecting = [step for step in self._steps if isinstance(step, (Expect, ExpectAll))]
        if to is None:
            if (
                expecting
                and isinstance(expecting[-1], ExpectAll)
                and len(expecting[-1].expected) > 1
            ):
                raise ValueError("the last step expects several messages: say which with to=")
            return None
        if _text("to", to) not in {name for step in expecting for name in names(step)}:
            raise ValueError(f"no step before this one expects a message named {to!r}")
        return to


def _json(name: str, value: Any) -> Any:
    """``value`` as plain JSON data (tuples become lists), so that the script is the
    same in memory and after its JSON trip to a subprocess. Raises ``TypeError``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{name} holds {value!r}, which JSON cannot carry")
        return value
    if isinstance(value, (list, tuple)):
        return [_json(f"{name}[{index}]", item) for index, item in enumerate(value)]
    if isinstance(value, dict):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{name} has a key {key!r}: JSON object keys are strings")
            plain[key] = _json(f"{name}[{key!r}]", item)
        return plain
    raise TypeError(f"{name} holds a {type(value).__name__}, which is not plain JSON data")


def _expected(index: int, item: str | Expected) -> Expected:
    """A member of ``expect_all`` as plain data, checked like ``expect``'s arguments."""
    if isinstance(item, str):
        return Expected(item)
    if not isinstance(item, Expected):
        raise TypeError(f"expect_all takes methods and Expected, not {type(item).__name__}")
    return Expected(
        _text(f"expected[{index}].method", item.method),
        _json(f"expected[{index}].params", item.params),
        _label(item.label),
    )


def _label(value: str | None) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError("a label must be a string")
    if value == "":
        raise ValueError("a label must not be empty")
    return value


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string")
    return value


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number above 0")
    return float(value)


def _non_negative(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number of at least 0")
    return float(value)


def _optional_timeout(value: float | None) -> float | None:
    return None if value is None else _positive("timeout", value)
