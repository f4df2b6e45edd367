"""A call's arguments from the command line: ``--args`` (inline JSON, ``@FILE`` or ``-``
for stdin) and ``--arg KEY=VALUE`` pairs merged over it.

Every problem is a :class:`ArgumentsError` whose message names the source and what is
wrong (a missing file, JSON that is not JSON and where, a value that is not an object, a
pair without ``=``), never the text given: tool arguments may hold credentials.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec

__all__ = ["MAX_ARGS_BYTES", "ArgumentsError", "arguments"]

# A file or stdin is read up to this; JSON this large is not a command line's.
MAX_ARGS_BYTES: Final = 16 * 1024 * 1024
_BYTE: Final = re.compile(r"\s*\(byte (\d+)\)$")


class ArgumentsError(Exception):
    """The arguments given cannot be used; the message says which and why."""


def arguments(
    given: str | None,
    pairs: Sequence[str],
    read_stdin: Callable[[int], bytes],
    *,
    typed: bool = True,
) -> dict[str, Any]:
    """The arguments object ``--args`` (``given``) and the ``--arg`` ``pairs`` make:
    ``given`` decoded (``@FILE``: the file's JSON, ``-``: stdin's, read with
    ``read_stdin(limit)``; otherwise the text itself), then each pair's key set to its
    value: the value's JSON when it is valid JSON (``5``, ``true``, ``null``,
    ``{"a": 1}``, ``"5"``), else the text as a string (always the text when not
    ``typed``: a prompt's arguments are strings). A key given twice by ``--arg``
    is refused; a pair replaces the key ``--args`` gave.

    Raises :class:`ArgumentsError`.
    """
    found: dict[str, Any] = {}
    if given is not None:
        source, data = _read(given, read_stdin)
        value = _decode(data, source)
        if not isinstance(value, dict):
            raise ArgumentsError(f"{source} must be a JSON object, not {_kind(value)}")
        found = value
    seen: set[str] = set()
    for index, pair in enumerate(pairs, 1):
        key, eq, text = pair.partition("=")
        if not eq or not key:
            # The pair is not repeated: it may be a credential missing its '='.
            raise ArgumentsError(f"--arg number {index}: expected KEY=VALUE (a name, '=', a value)")
        if key in seen:
            raise ArgumentsError(f"--arg {key} is given twice")
        seen.add(key)
        if not typed:
            found[key] = text
            continue
        try:
            found[key] = msgspec.json.decode(text)
        except msgspec.DecodeError:
            found[key] = text
    return found


def _read(given: str, read_stdin: Callable[[int], bytes]) -> tuple[str, bytes]:
    if given == "-":
        data = read_stdin(MAX_ARGS_BYTES + 1)
        source = "--args - (stdin)"
    elif given.startswith("@"):
        path = given[1:]
        source = f"--args @{path}"
        if not path:
            raise ArgumentsError("--args @: name the file after the @ (--args @FILE)")
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_ARGS_BYTES + 1)
        except FileNotFoundError:
            raise ArgumentsError(f"{source}: no such file") from None
        except IsADirectoryError:
            raise ArgumentsError(f"{source}: is a directory") from None
        except OSError as exc:
            raise ArgumentsError(f"{source}: cannot read it ({exc.strerror or exc})") from None
    else:
        return "--args", given.encode("utf-8", "surrogateescape")
    if len(data) > MAX_ARGS_BYTES:
        raise ArgumentsError(f"{source}: more than {MAX_ARGS_BYTES} bytes")
    return source, data


def _decode(data: bytes, source: str) -> Any:
    if not data.strip():
        raise ArgumentsError(f"{source} is empty, not a JSON object")
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        # msgspec's words never quote the input; the byte offset becomes a line and column.
        said = str(exc)
        at = _BYTE.search(said)
        if at is None:
            raise ArgumentsError(f"{source} is not JSON: {said}") from None
        offset = int(at.group(1))
        line = data.count(b"\n", 0, offset) + 1
        column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        said = said[: at.start()]
        raise ArgumentsError(
            f"{source} is not JSON: {said} at line {line}, column {column}"
        ) from None


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
