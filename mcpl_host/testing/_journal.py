"""The stdio server's journal: what each subprocess saw and did, one JSON line each.

The subprocesses append to it (flushing each line); the test process reads it back into
a :class:`~.record.Record` and learns from it whether the script is done or failed.
Lines are written whole, with one ``write`` each, so a reader sees complete lines or
none; a last line without its newline is still being written and is left for later.
Pure: stdlib and msgspec only (the subprocess imports it).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Final, TypeAlias

import msgspec

from .errors import ScriptFailed
from .record import Record

__all__ = [
    "At",
    "Connected",
    "Done",
    "Ended",
    "Entry",
    "Failed",
    "Journal",
    "Line",
    "Refused",
    "Started",
    "Unplanned",
    "read_journal",
    "record_of",
]


class _Entry(msgspec.Struct, tag_field="e", frozen=True, kw_only=True, omit_defaults=True):
    pass


class Started(_Entry, tag="started", frozen=True):
    """A subprocess began, to play from step ``resume`` (0-based)."""

    pid: int
    resume: int


class At(_Entry, tag="at", frozen=True):
    """The subprocess is running step ``step`` (0-based)."""

    step: int


class Connected(_Entry, tag="connected", frozen=True):
    """The subprocess became the host's connection number ``connection``."""

    connection: int
    pid: int


class Line(_Entry, tag="line", frozen=True):
    """A line from the host: as text when it is UTF-8, else as base64."""

    connection: int
    text: str | None = None
    b64: str | None = None

    @property
    def raw(self) -> bytes:
        return self.text.encode() if self.text is not None else base64.b64decode(self.b64 or "")


class Unplanned(_Entry, tag="unplanned", frozen=True):
    """The script answered the host's line ``line`` (from 0) on ``connection`` with
    ``answer`` (JSON text), as a request no step planned for."""

    connection: int
    line: int
    answer: str


class Refused(_Entry, tag="refused", frozen=True):
    """The subprocess was a connection attempt the script turned away."""


class Ended(_Entry, tag="ended", frozen=True):
    """A subprocess is about to exit; the script goes on from step ``resume``."""

    connection: int
    resume: int
    how: str


class Done(_Entry, tag="done", frozen=True):
    pass


class Failed(_Entry, tag="failed", frozen=True):
    detail: str
    step_number: int
    step: str
    connection: int | None = None

    def error(self) -> ScriptFailed:
        return ScriptFailed(
            self.detail, step_number=self.step_number, step=self.step, connection=self.connection
        )


Entry: TypeAlias = Started | At | Connected | Line | Unplanned | Refused | Ended | Done | Failed
_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(Entry)


class Journal:
    """The subprocess's writer: each entry is one ``write`` to a file opened for append."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, entry: Entry) -> None:
        os.write(self._fd, _ENCODER.encode(entry) + b"\n")

    def line(self, connection: int, raw: bytes) -> None:
        try:
            self.write(Line(connection=connection, text=raw.decode()))
        except UnicodeDecodeError:
            self.write(Line(connection=connection, b64=base64.b64encode(raw).decode()))


def read_journal(path: Path) -> list[Entry]:
    """Every complete entry written so far."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    complete = data[: data.rfind(b"\n") + 1]
    return [_DECODER.decode(line) for line in complete.splitlines() if line]


def record_of(entries: list[Entry]) -> Record:
    """The :class:`Record` the journal's entries describe."""
    record = Record()
    for entry in entries:
        if isinstance(entry, Line):
            record.add_line(entry.connection, entry.raw)
        elif isinstance(entry, Unplanned):
            record.add_unplanned(entry.connection, entry.line, entry.answer.encode())
        elif isinstance(entry, Connected):
            record.connections += 1
        elif isinstance(entry, Refused):
            record.refused += 1
    return record
