"""``Record``: everything the host sent a scripted server, connection by connection.

Every line the server read is kept verbatim (``raw``) with its decoded JSON value, in
order, and for a request no step planned for, the answer the script gave it. The
helpers select from it and assert on it; an assertion that fails shows everything the
host sent, so the failure explains itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from ._player import same_json
from ._wire import HostLine

__all__ = ["Received", "Record"]


@dataclass(frozen=True, slots=True)
class Received:
    """One line the host wrote on connection ``connection`` (1 for the first).

    ``raw`` is the line as read, without its newline; ``message`` its JSON value
    (``None`` when ``is_json`` is false); ``kind`` one of ``request``,
    ``notification``, ``response``, ``batch``, ``other``, ``not-json``.
    ``unplanned_answer`` is the line (without its newline) the script answered this
    request with because no step planned for it, else ``None``.
    """

    connection: int
    line: HostLine
    unplanned_answer: bytes | None = None

    @property
    def raw(self) -> bytes:
        return self.line.raw

    @property
    def message(self) -> Any:
        return self.line.message

    @property
    def kind(self) -> str:
        return self.line.kind

    @property
    def is_json(self) -> bool:
        return self.line.is_json


class Record:
    """What the host sent, in order; ``connections`` counts the connections the server
    accepted, ``refused`` the attempts it turned away.

    Every selector takes ``connection=`` to look at one connection only.
    """

    def __init__(self) -> None:
        self.entries: list[Received] = []
        self.connections = 0
        self.refused = 0

    # -- filled in by the runners --------------------------------------------------------

    def add_line(self, connection: int, raw: bytes) -> None:
        self.entries.append(Received(connection, HostLine.parse(raw)))

    def add_unplanned(self, connection: int, number: int, answer: bytes) -> None:
        """The script answered line ``number`` (from 0) of ``connection`` with
        ``answer``, as unplanned."""
        seen = 0
        for index, entry in enumerate(self.entries):
            if entry.connection == connection:
                if seen == number:
                    self.entries[index] = replace(entry, unplanned_answer=answer.rstrip(b"\n"))
                    return
                seen += 1
        raise ValueError(f"connection {connection} has no line {number}")

    # -- selecting -----------------------------------------------------------------------

    def lines(self, *, connection: int | None = None) -> list[bytes]:
        """The raw lines, newline removed."""
        return [entry.raw for entry in self._of(connection)]

    def messages(self, *, connection: int | None = None) -> list[Any]:
        """The decoded JSON values (lines that are not JSON are left out)."""
        return [entry.message for entry in self._of(connection) if entry.is_json]

    def requests(self, method: str | None = None, *, connection: int | None = None) -> list[Any]:
        """The host's requests (a string ``method`` and an ``id``), by method if given."""
        return self._with_method("request", method, connection)

    def notifications(
        self, method: str | None = None, *, connection: int | None = None
    ) -> list[Any]:
        """The host's notifications (a string ``method``, no ``id``), by method if given."""
        return self._with_method("notification", method, connection)

    def unplanned(self, method: str | None = None, *, connection: int | None = None) -> list[Any]:
        """The requests no step planned for, which the script answered as
        ``on_unplanned`` says (by method if given)."""
        return [
            entry.message
            for entry in self._of(connection)
            if entry.unplanned_answer is not None
            and (method is None or entry.line.method == method)
        ]

    def answers(self, *, connection: int | None = None) -> list[Any]:
        """The host's responses to what the script sent, an array's entries one by one."""
        found: list[Any] = []
        for entry in self._of(connection):
            if entry.kind == "response":
                found.append(entry.message)
            elif entry.kind == "batch":
                found += [m for m in entry.message if isinstance(m, dict) and "method" not in m]
        return found

    # -- asserting -----------------------------------------------------------------------

    def assert_sent(self, method: str, params: Any = None, *, connection: int | None = None) -> Any:
        """The first request or notification named ``method`` (with exactly these
        ``params``, when given). Raises ``AssertionError`` showing what was sent."""
        candidates = [m for m in self._with_method(None, method, connection) if isinstance(m, dict)]
        for message in candidates:
            if params is None or ("params" in message and same_json(message["params"], params)):
                return message
        wanted = f"{method!r}" if params is None else f"{method!r} with params {_json(params)}"
        raise AssertionError(f"the host sent no {wanted}{self._where(connection)}; {self}")

    def assert_not_sent(self, method: str, *, connection: int | None = None) -> None:
        """Raises ``AssertionError`` if the host sent a request or notification named
        ``method``, showing what was sent."""
        if self._with_method(None, method, connection):
            raise AssertionError(f"the host sent {method!r}{self._where(connection)}; {self}")

    def assert_cancelled(self, request_id: int | str, *, connection: int | None = None) -> Any:
        """The ``notifications/cancelled`` whose ``requestId`` is ``request_id``. Raises
        ``AssertionError`` showing what was sent."""
        for message in self.notifications("notifications/cancelled", connection=connection):
            params = message.get("params")
            if isinstance(params, dict) and same_json(params.get("requestId"), request_id):
                return message
        raise AssertionError(
            f"the host sent no notifications/cancelled for request {_json(request_id)}"
            f"{self._where(connection)}; {self}"
        )

    # -- showing -------------------------------------------------------------------------

    def __str__(self) -> str:
        if not self.entries:
            return "the host sent nothing"
        shown = "\n".join(
            f"  [connection {entry.connection}] {entry.line.describe()}"
            + (", answered as unplanned" if entry.unplanned_answer is not None else "")
            for entry in self.entries
        )
        return f"the host sent:\n{shown}"

    def __repr__(self) -> str:
        return (
            f"<Record {len(self.entries)} lines, {self.connections} connections, "
            f"{self.refused} refused>"
        )

    def __iter__(self) -> Iterator[Received]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def _of(self, connection: int | None) -> list[Received]:
        if connection is None:
            return self.entries
        return [entry for entry in self.entries if entry.connection == connection]

    def _with_method(
        self, kind: str | None, method: str | None, connection: int | None
    ) -> list[Any]:
        return [
            entry.message
            for entry in self._of(connection)
            if (entry.kind == kind if kind else entry.kind in ("request", "notification"))
            and (method is None or entry.line.method == method)
        ]

    @staticmethod
    def _where(connection: int | None) -> str:
        return "" if connection is None else f" on connection {connection}"


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()
