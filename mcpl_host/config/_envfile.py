"""``envFile``: the KEY=VALUE file an entry's environment is read from (VS Code, Cursor).

Accepted, as dotenv files are usually written: blank lines and ``#`` comment lines;
an optional ``export`` before the name; ``KEY=VALUE`` with space around either side
trimmed; a value in double quotes (``\\n``, ``\\t``, ``\\"`` and ``\\\\`` escapes) or single
quotes (taken literally); after an unquoted value, `` #`` starts a comment. No variable
is expanded inside the file and a value cannot span lines. Any other line is skipped and
reported by number (never by content: values are secrets).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

__all__ = ["MAX_ENV_FILE_BYTES", "EnvFile", "parse_env_file"]

MAX_ENV_FILE_BYTES: Final = 1 << 20
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


class EnvFile(NamedTuple):
    """The variables of an env file, in file order (a later line wins), and the numbers
    (from 1) of the lines that were not ``KEY=VALUE``."""

    values: dict[str, str]
    bad_lines: list[int]


def parse_env_file(text: str) -> EnvFile:
    """Parse an env file's text (see the module's docstring). Raises nothing."""
    values: dict[str, str] = {}
    bad: list[int] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export ") or line.startswith("export\t"):
            line = line[len("export") :].lstrip()
        name, eq, rest = line.partition("=")
        name = name.strip()
        value = _value(rest.strip()) if eq else None
        if not _NAME.fullmatch(name) or value is None:
            bad.append(number)
            continue
        values[name] = value
    return EnvFile(values, bad)


def _value(text: str) -> str | None:
    """The value after ``=``; None when a quote is not closed or text follows it."""
    if text[:1] == "'":
        end = text.find("'", 1)
        if end < 0 or not _only_comment(text[end + 1 :]):
            return None
        return text[1:end]
    if text[:1] == '"':
        out: list[str] = []
        index = 1
        while index < len(text):
            ch = text[index]
            if ch == "\\" and index + 1 < len(text):
                nxt = text[index + 1]
                out.append(_ESCAPES.get(nxt, "\\" + nxt))
                index += 2
                continue
            if ch == '"':
                return "".join(out) if _only_comment(text[index + 1 :]) else None
            out.append(ch)
            index += 1
        return None
    cut = re.search(r"\s#", text)
    return (text[: cut.start()] if cut else text).rstrip()


def _only_comment(rest: str) -> bool:
    rest = rest.strip()
    return not rest or rest.startswith("#")
