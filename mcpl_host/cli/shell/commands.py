"""The shell's commands: what a typed line means, and doing it.

``call NAME a=2 b=40`` or ``call NAME {"a": 2, "b": 40}``: the arguments are
``--arg``'s KEY=VALUE pairs (a value is its JSON when it is JSON, else the text) or
one JSON object, as ``mcpl-host call`` reads them (:mod:`..callargs`). Words are split
as a POSIX shell splits them (quotes group, ``\\`` escapes).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ...manager import ConnectionManager
from ...protocol.errors import McplHostError
from ..callargs import ArgumentsError, arguments
from ..render import render_items, render_result
from .data import Data, Entry
from .screen import Screen
from .watch import Watch

__all__ = ["COMMANDS", "HELP", "Commands", "Line", "split"]

# name -> (synopsis, what it does); the order of the help.
HELP: Final = {
    "help": ("help [COMMAND]", "this list, or one command's use"),
    "servers": ("servers", "every server: its state, protocol and last error"),
    "tools": ("tools [TEXT]", "the tools of every ready server (names containing TEXT)"),
    "call": (
        "call TOOL [KEY=VALUE ...] | call TOOL {JSON}",
        "call a tool; Ctrl-C cancels it (the server is sent notifications/cancelled)",
    ),
    "resources": ("resources [TEXT]", "the resources and resource templates"),
    "read": ("read NAME|URI", "read a resource (by its catalogue name or its URI)"),
    "prompts": ("prompts [TEXT]", "the prompts"),
    "prompt": ("prompt NAME [KEY=VALUE ...] | prompt NAME {JSON}", "get a prompt"),
    "loglevel": ("loglevel SERVER LEVEL", "ask a server for its logs at LEVEL and above"),
    "trace": ("trace on|off", "show every wire line (redacted, escaped, cut), or stop"),
    "history": ("history", "the lines typed in this session"),
    "exit": ("exit", "close every server and leave (also: quit, Ctrl-D)"),
}
COMMANDS: Final = (*HELP, "quit")
# The commands whose second word is a catalogue name, and the kind it names.
NAMED: Final = {"call": "tools", "prompt": "prompts", "read": "resources"}
_HEADINGS: Final = {"resources": "resources", "resourceTemplates": "resource templates"}
LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@dataclass(frozen=True, slots=True)
class Line:
    """A typed line: its command, the name after it, and the rest as typed."""

    command: str
    name: str
    rest: str


def split(text: str) -> Line:
    """The command word, the next word, and the rest (untouched: it may be JSON)."""
    head, _, tail = text.strip().partition(" ")
    name, _, rest = tail.strip().partition(" ")
    return Line(head, name, rest.strip())


def parse_arguments(rest: str, *, typed: bool) -> dict[str, Any]:
    """The arguments of ``call``/``prompt``. Raises ``ValueError`` saying what is wrong
    (never repeating the text: it may hold a credential)."""
    try:
        if rest.startswith("{"):
            return arguments(rest, (), _no_stdin, typed=typed)
        return arguments(None, shlex.split(rest), _no_stdin, typed=typed)
    except ArgumentsError as exc:
        said = str(exc).replace("--args", "the JSON object").replace("--arg", "argument")
        raise ValueError(said) from None
    except ValueError as exc:  # shlex: an unclosed quote
        raise ValueError(f"cannot split the arguments: {exc}") from None


def _no_stdin(_limit: int) -> bytes:
    raise ArgumentsError("read from a JSON object typed on the line, not stdin")


class Commands:
    """Does what a line says. ``history`` gives the lines typed so far."""

    def __init__(
        self,
        manager: ConnectionManager,
        data: Data,
        screen: Screen,
        watch: Watch,
        history: Callable[[], list[str]],
    ) -> None:
        self.manager = manager
        self.data = data
        self.screen = screen
        self.watch = watch
        self._history = history

    async def run(self, text: str) -> bool:
        """Do ``text``; False when it says to leave."""
        line = split(text)
        if not line.command:
            return True
        if line.command in ("exit", "quit"):
            return False
        handler = getattr(self, f"_do_{line.command}", None)
        if handler is None:
            self.screen.problem(
                f"unknown command {self.screen.safe(line.command, 64)!s}: type help"
            )
            return True
        try:
            await handler(line)
        except McplHostError as exc:
            self.screen.error(exc)
        except LookupError as exc:
            kind = NAMED.get(line.command, "").removesuffix("s")  # "tools": "tool"
            self.screen.problem(
                f"no {kind} {self.screen.safe(str(exc.args[0] if exc.args else ''), 300)} in "
                "the catalogue (tools, resources, prompts list it)"
            )
        except ValueError as exc:
            self.screen.problem(str(exc))
        return True

    # -- the commands ------------------------------------------------------------------

    async def _do_help(self, line: Line) -> None:
        s = self.screen
        if line.name:
            found = HELP.get(line.name)
            if found is None:
                raise ValueError(f"no command {s.safe(line.name, 64)}: type help")
            s.write(f"{s.style.bold(found[0])}\n  {found[1]}")
            return
        width = max(len(synopsis) for synopsis, _ in HELP.values())
        rows = [f"  {s.style.bold(f'{syn:<{width}}')}  {what}" for syn, what in HELP.values()]
        s.write(
            "\n".join(rows)
            + "\n\nTAB completes commands, tool, prompt and resource names, and argument "
            "names.\nRequests of the servers (sampling, elicitation, roots) are asked "
            "here as they come."
        )

    async def _do_servers(self, _line: Line) -> None:
        s = self.screen
        for name, status in self.manager.status().items():
            info = status.server_info or {}
            shown = f"{info.get('name', '')} {info.get('version', '')}".strip()
            parts = [s.style.bold(s.safe(name, 64)), status.state]
            if shown:
                parts.append(s.safe(shown, 200))
            if status.protocol_version:
                parts.append(f"protocol {s.safe(status.protocol_version, 32)}")
            if status.error is not None:
                parts.append(s.style.bad(s.safe(str(status.error))))
            if status.state == "failed":
                parts.append(s.style.dim("retrying" if status.retrying else "not retried"))
            s.write("  ".join(parts))

    async def _listing(self, kinds: tuple[str, ...], line: Line) -> None:
        s = self.screen
        found = await self.data.refresh()
        wanted = line.name.lower()
        for kind in kinds:
            entries = [e for e in found.of(kind) if wanted in e.name.lower()]
            if len(kinds) > 1:
                s.write(s.style.bold(f"{_HEADINGS[kind]} ({len(entries)})"))
            elif not entries:
                s.write(s.style.dim(f"(no {kind})"))
            items = [_named(kind, e) for e in entries]
            s.write(render_items(kind, items, s.redactor, s.style, s.width))
        for server, error in found.errors.items():
            s.note(server, s.style.bad(f"not listed: {s.safe(error)}"))

    async def _do_tools(self, line: Line) -> None:
        await self._listing(("tools",), line)

    async def _do_resources(self, line: Line) -> None:
        await self._listing(("resources", "resourceTemplates"), line)

    async def _do_prompts(self, line: Line) -> None:
        await self._listing(("prompts",), line)

    async def _do_call(self, line: Line) -> None:
        if not line.name:
            raise ValueError("call TOOL [KEY=VALUE ...]: name the tool (TAB lists them)")
        given = parse_arguments(line.rest, typed=True)
        await self._known("tools", line.name)
        entry = self.data.catalogue.get("tools", line.name)
        server = entry.server if entry is not None else None
        result = await self.data.call_tool(line.name, given, self.watch.progress(server))
        self._show(result, "tools/call")  # an isError result opens with saying so

    async def _do_prompt(self, line: Line) -> None:
        if not line.name:
            raise ValueError("prompt NAME [KEY=VALUE ...]: name the prompt (TAB lists them)")
        given = parse_arguments(line.rest, typed=False)
        await self._known("prompts", line.name)
        self._show(await self.data.get_prompt(line.name, given), "prompts/get")

    async def _do_read(self, line: Line) -> None:
        if not line.name:
            raise ValueError("read NAME|URI: name the resource (TAB lists them)")
        await self._known("resources", line.name)
        self._show(await self.data.read_resource(line.name), "resources/read")

    async def _do_loglevel(self, line: Line) -> None:
        level = line.rest.strip().lower()
        if not line.name or level not in LEVELS:
            raise ValueError(f"loglevel SERVER LEVEL (one of {', '.join(LEVELS)})")
        if line.name not in self.manager.status():
            raise ValueError(f"no server {self.screen.safe(line.name, 64)}: type servers")
        await self.data.set_level(line.name, level)
        self.screen.note(line.name, f"logs at {level} and above")

    async def _do_trace(self, line: Line) -> None:
        if line.name not in ("on", "off"):
            raise ValueError("trace on|off")
        self.watch.trace(line.name == "on", sys.stdout)
        self.screen.write(self.screen.style.dim(f"trace {line.name}"))

    async def _do_history(self, _line: Line) -> None:
        lines = self._history()
        self.screen.write(
            "\n".join(f"{i:>4}  {self.screen.safe(t)}" for i, t in enumerate(lines, 1))
            or self.screen.style.dim("(no history)")
        )

    async def _known(self, kind: str, name: str) -> None:
        """Read the catalogue again when ``name`` is not in it (it may have come since);
        a resource may be named by its listed URI too."""
        catalogue = self.data.catalogue
        if catalogue.get(kind, name) is not None:
            return
        if kind == "resources" and any(e.item.get("uri") == name for e in catalogue.of(kind)):
            return
        await self.data.refresh()

    def _show(self, result: Any, method: str) -> None:
        s = self.screen
        s.write(render_result(result, method, s.redactor, s.style, s.width))


def _named(kind: str, entry: Entry) -> dict[str, Any]:
    """The item as listed, shown under its catalogue name (tools and prompts); a
    resource keeps its URI, which is what ``read`` takes."""
    if kind in ("tools", "prompts"):
        return {**entry.item, "name": entry.name}
    return entry.item
