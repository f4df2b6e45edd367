"""TAB completion at the shell's prompt: the command, then the catalogue name it takes
(a tool, a prompt, a resource), then that item's argument names (a tool's
``inputSchema`` properties, a prompt's ``arguments``), each offered as ``NAME=``
until given. Read from the catalogue last read (:class:`.data.Data`): completing
never waits for a server."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from .commands import COMMANDS, HELP, LEVELS, NAMED
from .data import Data

__all__ = ["ShellCompleter"]

_CHOICES = {"trace": ("on", "off"), "help": tuple(HELP)}


class ShellCompleter(Completer):
    def __init__(self, data: Data, servers: Iterable[str]) -> None:
        self._data = data
        self._servers = tuple(servers)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        del complete_event  # TAB and typing complete alike
        text = document.text_before_cursor
        words = text.split(" ")
        current = words[-1]
        if len(words) == 1:
            return _matching(COMMANDS, current)
        command = words[0]
        if len(words) == 2:
            if command in NAMED:
                entries = self._data.catalogue.of(NAMED[command])
                names = [e.name for e in entries]
                if command == "read":  # a listed resource's URI reads it too
                    names += [str(e.item.get("uri")) for e in entries]
                return _matching(dict.fromkeys(names), current)
            if command == "loglevel":
                return _matching(self._servers, current)
            return _matching(_CHOICES.get(command, ()), current)
        if command == "loglevel" and len(words) == 3:
            return _matching(LEVELS, current)
        if command in ("call", "prompt") and "=" not in current and "{" not in text:
            return _matching([f"{a}=" for a in self._arguments(command, words)], current)
        return []

    def _arguments(self, command: str, words: list[str]) -> list[str]:
        entry = self._data.catalogue.get(NAMED[command], words[1])
        if entry is None:
            return []
        names = _tool_arguments(entry.item) if command == "call" else _prompt_arguments(entry.item)
        try:
            typed = shlex.split(" ".join(words[2:-1]))
        except ValueError:
            typed = words[2:-1]
        given = {word.partition("=")[0] for word in typed}
        return [name for name in names if name not in given]


def _matching(options: Iterable[str], prefix: str) -> list[Completion]:
    return [
        Completion(option, start_position=-len(prefix))
        for option in options
        if option.startswith(prefix)
    ]


def _tool_arguments(item: dict[str, Any]) -> list[str]:
    schema = item.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return [str(k) for k in properties] if isinstance(properties, dict) else []


def _prompt_arguments(item: dict[str, Any]) -> list[str]:
    arguments = item.get("arguments")
    if not isinstance(arguments, list):
        return []
    return [str(a["name"]) for a in arguments if isinstance(a, dict) and "name" in a]
