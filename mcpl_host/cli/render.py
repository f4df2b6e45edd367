"""The readable report: the same facts as ``--json``, for a person at a terminal.

Everything a server wrote is shown through the redactor's ``log_value`` (secrets
masked, control characters escaped so a server cannot drive the terminal, long text
cut). Identifiers (tool, prompt and argument names, URIs, URI templates) are shown
whole: they are what a person copies into the next command. Only an absurd one, past
:data:`IDENTIFIER_LIMIT`, is cut. Prose (descriptions, instructions) is wrapped or cut
to the terminal's width, and only on a terminal: piped or redirected, nothing is
wrapped or cut to a width (:func:`terminal_width` is None). Colour only when stdout is a
terminal and ``NO_COLOR`` is not set (https://no-color.org).

Every renderer is total: a server's value of any JSON shape in any member (a number
where a list belongs, an object where a string does) is shown as its JSON, never a
crash. Items and results may still be raw JSON (:mod:`.jsonvalue`); each is decoded
only when it is shown.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Callable
from typing import Any, Final, TextIO

from ..protocol.redact import Redactor
from .jsonvalue import plain, text_of
from .signature import prompt_arguments, tool_arguments

__all__ = [
    "IDENTIFIER_LIMIT",
    "Style",
    "render_call",
    "render_connect",
    "render_items",
    "render_many",
    "render_result",
    "safe_text",
    "terminal_width",
]

# An identifier is shown whole up to this many UTF-16 units (escapes included): far past
# any real name or URI, short of a line that would flood the terminal.
IDENTIFIER_LIMIT: Final = 4096

_SIGNATURE_LIMIT: Final = 2 * IDENTIFIER_LIMIT  # a signature's arguments, escaped
_WHITESPACE: Final = re.compile(r"\s+")
_CELL_LIMIT: Final = 2000  # escaping budget for one cell, before the width cut
_LINE_LIMIT: Final = 4000  # one line of a call's text result
# Identifiers up to this long share an aligned column with their descriptions; a
# longer one takes a line of its own (on a terminal), the description under it.
_COLUMN: Final = 32
_MIN_WIDTH: Final = 40
# A description under its identifier when there is no column to align it with.
_HANG: Final = 6
_ELLIPSIS: Final = "…"
_PARAGRAPH_LINES: Final = 6
_FIELD_LINES: Final = 3
# Kinds that are a server's error answer, whose code the server may have left out.
_ANSWERED: Final = ("initialize-error", "request-error")
_HEADINGS: Final = (
    ("tools", "tools"),
    ("resources", "resources"),
    ("resourceTemplates", "resource templates"),
    ("prompts", "prompts"),
)


class Style:
    """ANSI styling, or none."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        """Colour when ``stream`` is a terminal and ``NO_COLOR`` is unset or empty.
        Raises nothing."""
        isatty = getattr(stream, "isatty", None)
        return cls(bool(isatty and isatty()) and not os.environ.get("NO_COLOR"))

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def good(self, text: str) -> str:
        return self._wrap("32", text)

    def bad(self, text: str) -> str:
        return self._wrap("31;1", text)

    def warn(self, text: str) -> str:
        return self._wrap("33", text)


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The width of the terminal ``stream`` (default: stdout) is, at least 40
    (``COLUMNS`` wins); None when it is not a terminal: a pipe or a file has no width,
    and ``COLUMNS`` is a terminal's setting. Raises nothing."""
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        if not (isatty and isatty()):
            return None
    except ValueError:  # closed
        return None
    return max(shutil.get_terminal_size((100, 24)).columns, _MIN_WIDTH)


def safe_text(redactor: Redactor, value: Any, limit: int = _CELL_LIMIT) -> str:
    """A server's value (any JSON) on one line: a string as it is, anything else as
    its JSON; whitespace runs collapsed, redacted, escaped, cut to ``limit``."""
    return redactor.log_value(_WHITESPACE.sub(" ", text_of(value)).strip(), limit)


class _Writer:
    def __init__(self, redactor: Redactor, style: Style, width: int | None) -> None:
        self.redactor = redactor
        self.style = style
        self.width = width
        self.lines: list[str] = []

    def safe(self, value: Any, limit: int = _CELL_LIMIT) -> str:
        return safe_text(self.redactor, value, limit)

    def ident(self, value: Any) -> str:
        """A server's identifier (any JSON) whole, on one line: redacted and escaped
        (a newline in it is shown as ``\\u000a``, not folded), cut only past
        :data:`IDENTIFIER_LIMIT`."""
        return self.redactor.log_value(text_of(value), IDENTIFIER_LIMIT)

    def cut(self, text: str, width: int | None) -> str:
        if width is None or len(text) <= width:
            return text
        return text[: max(width - len(_ELLIPSIS), 0)] + _ELLIPSIS

    def field(self, name: str, value: str, paint: Callable[[str], str] | None = None) -> None:
        self.paragraph(name, value, _FIELD_LINES, paint)

    def paragraph(
        self,
        name: str,
        value: str,
        max_lines: int = _PARAGRAPH_LINES,
        paint: Callable[[str], str] | None = None,
    ) -> None:
        """A long value wrapped under its label, at most ``max_lines`` lines, each line
        painted on its own (a colour code wrapped with the text could be split across
        two lines, and leave the terminal coloured)."""
        label = f"{name:<13} "
        if self.width is None:
            lines = [value]  # not a terminal: one line, whole
        else:
            lines = textwrap.wrap(value, max(self.width - len(label), 20)) or [""]
        if len(lines) > max_lines:
            lines = [
                *lines[: max_lines - 1],
                self.cut(lines[max_lines - 1] + " " + _ELLIPSIS, self.width),
            ]
        if paint is not None:
            lines = [paint(line) for line in lines]
        self.lines.append(self.style.bold(label) + lines[0])
        self.lines.extend(" " * len(label) + line for line in lines[1:])

    def table(self, rows: list[tuple[list[str], Any]]) -> None:
        """Rows of (identifier, description). An identifier is given as its parts,
        each already made safe: a signature may be wrapped between its arguments,
        never inside one, and a URI is one part, never broken."""
        column = max(
            (len(ident) for ident in self._joined(rows) if len(ident) <= _COLUMN), default=0
        )
        for parts, text in rows:
            ident = "".join(parts)
            described = self.safe(text) if text else ""
            if self.width is None or (len(ident) <= column and self.width - column - 4 >= 10):
                room = None if self.width is None else self.width - column - 4
                shown = self.style.dim(self.cut(described, room))
                self.lines.append(f"  {ident:<{column}}  {shown}".rstrip())
                continue
            # Too long for the column: the identifier on lines of its own (a part longer
            # than a line is left for the terminal to fold, whole), the description under.
            self.lines.extend(_wrap(parts, self.width))
            if described:
                indent = 2 + column + 2 if column and self.width - column - 4 >= 20 else _HANG
                shown = self.style.dim(self.cut(described, max(self.width - indent, 10)))
                self.lines.append(" " * indent + shown)

    @staticmethod
    def _joined(rows: list[tuple[list[str], Any]]) -> list[str]:
        return ["".join(parts) for parts, _ in rows]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _wrap(parts: list[str], width: int) -> list[str]:
    """An identifier's parts on lines of at most ``width`` (a part never broken: one
    longer than a line stands alone), further lines indented two more."""
    lines: list[str] = []
    line = "  "
    for part in parts:
        if line.strip() and len(line) + len(part.rstrip()) > width:
            lines.append(line.rstrip())
            line = "    "
        line += part
    lines.append(line.rstrip())
    return lines


def _object(value: Any) -> dict[str, Any]:
    value = plain(value)
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    """A member that should hold a list: its items; a lone value of any other kind is
    one item (shown for what it is); absent or null, none."""
    value = plain(value)
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _head(w: _Writer, report: dict[str, Any]) -> None:
    if report.get("protocolVersion") is not None:
        info = plain(report.get("serverInfo"))
        if isinstance(info, dict):
            name = w.safe(info.get("name", "(no name)"), 200)
            version = w.safe(info.get("version", ""), 64)
            w.field("server", f"{name} {version}".strip())
        else:
            w.field("server", w.safe(info if info is not None else "(no name)", 200))
    w.field("target", w.safe(report.get("target") or "(none)"))
    if report.get("transport") == "sse":
        w.field("transport", "legacy HTTP+SSE (2024-11-05)")
    if report.get("protocolVersion") is not None:
        era = report.get("era")
        shown = f" ({w.safe(era, 16)})" if era is not None else ""
        w.field("protocol", w.safe(report["protocolVersion"], 64) + shown)
    timings = _object(report.get("timings_ms"))
    if timings:
        w.field("timings", ", ".join(_timing(w, k, v) for k, v in timings.items()))


def _timing(w: _Writer, name: str, value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{w.safe(name, 32)} {value:.1f} ms"
    return f"{w.safe(name, 32)} {w.safe(value, 32)}"


def _failure(w: _Writer, report: dict[str, Any]) -> None:
    error = _object(report.get("error"))
    kind = w.safe(error.get("kind", "?"), 64)
    code = "" if error.get("code") is None else f" {w.safe(error['code'], 32)}"
    if not code and error.get("kind") in _ANSWERED:
        code = " (no code)"  # the server's error had none; none is made up
    method = f" in {w.safe(error['method'], 200)}" if error.get("method") else ""
    w.field("failed", f"{kind}{code}{method}", w.style.bad)
    w.field("message", w.safe(error.get("message", "")))
    if error.get("data") is not None:
        w.field("data", w.safe(error["data"]))
    # auth-failed: where the flow stopped and the rule the authorization server broke.
    for key in ("step", "rule", "oauth_error"):
        if error.get(key) is not None:
            w.field(key.replace("_", " "), w.safe(error[key], 200))
    challenge = _object(error.get("challenge"))
    if challenge:
        w.field("challenge", w.safe(", ".join(f"{k}={text_of(v)}" for k, v in challenge.items())))
    if error.get("detail"):
        w.field("detail", w.safe(error["detail"]))
    if error.get("login"):
        # One line, never wrapped: it is there to be copied whole.
        login = w.safe(error["login"], 1024)
        w.lines.append(w.style.bold(f"{'to log in':<13} ") + login)
    for line in _items(report.get("stderr")):
        w.field("server stderr", w.safe(line))


def render_connect(
    report: dict[str, Any], redactor: Redactor, style: Style, width: int | None
) -> str:
    """The ``connect`` report as text. Raises nothing."""
    w = _Writer(redactor, style, width)
    _head(w, report)
    if not report.get("ok"):
        _failure(w, report)
        return w.text()
    capabilities = plain(report.get("capabilities")) or {}
    if isinstance(capabilities, dict):
        shown = ", ".join(w.safe(k, 64) for k in sorted(capabilities, key=text_of))
    else:
        shown = w.safe(capabilities)
    w.field("capabilities", shown or "(none)")
    if report.get("instructions"):
        w.paragraph("instructions", w.safe(report["instructions"]))
    for key, heading in _HEADINGS:
        items = report.get(key)
        w.lines.append("")
        if items is None:
            w.lines.append(style.bold(heading) + style.dim(" (not advertised)"))
            continue
        listed = _items(items)
        w.lines.append(style.bold(f"{heading} ({len(listed)})"))
        w.table([_row(w, key, item) for item in listed])
    w.lines.append("")
    w.lines.append(style.good("ok"))
    return w.text()


def _row(w: _Writer, key: str, item: Any) -> tuple[list[str], Any]:
    """(identifier as safe parts, description) of a listed item; the description is
    any JSON value (the table makes it safe)."""
    item = plain(item)
    if not isinstance(item, dict):
        return (["?"], item)
    description = item.get("description") or item.get("title") or ""
    if key == "resources":
        mime = f" [{text_of(item['mimeType'])}]" if item.get("mimeType") else ""
        return (
            [w.ident(item.get("uri", "?"))],
            f"{text_of(item.get('name', ''))}{mime} {text_of(description)}",
        )
    if key == "resourceTemplates":
        return (
            [w.ident(item.get("uriTemplate", "?"))],
            f"{text_of(item.get('name', ''))} {text_of(description)}",
        )
    if key == "tools":
        arguments = tool_arguments(item.get("inputSchema"))
        listed = ["…"] if arguments is None else arguments
    else:
        listed = prompt_arguments(item.get("arguments"))
    return (_signature(w, item.get("name", "?"), listed), description)


def _signature(w: _Writer, name: Any, arguments: list[str]) -> list[str]:
    """``name(a, b)`` as parts, one per argument, each escaped on its own, the
    separators kept with the part before. Arguments stop (``…``) once the signature
    passes :data:`_SIGNATURE_LIMIT`: 64 arguments of absurd names would make a line of
    hundreds of KB."""
    shown: list[str] = []
    total = 0
    for argument in arguments:
        if total > _SIGNATURE_LIMIT:
            shown.append(_ELLIPSIS)
            break
        shown.append(w.ident(argument))
        total += len(shown[-1])
    shown = shown or [""]
    parts = [f"{w.ident(name)}({shown[0]}", *shown[1:]]
    return [*(part + ", " for part in parts[:-1]), parts[-1] + ")"]


def render_call(
    report: dict[str, Any], method: str, redactor: Redactor, style: Style, width: int | None
) -> str:
    """The ``call`` report: the server line, then the result as text, then what was
    found about it (the outputSchema check, the files saved) and the failure, if any.
    Raises nothing."""
    w = _Writer(redactor, style, width)
    _head(w, report)
    if "result" in report:
        _result(w, report, method)
        _call_facts(w, report)
    if not report.get("ok"):
        _failure(w, report)
    return w.text()


def _call_facts(w: _Writer, report: dict[str, Any]) -> None:
    """``output_schema`` (said only when the tool declared one) and ``saved``."""
    checked = _object(report.get("output_schema"))
    status = checked.get("status")
    if status == "matched":
        w.field("output", "structuredContent matches the tool's outputSchema", w.style.good)
    elif status == "mismatched":
        w.field("output", "structuredContent does not match the tool's outputSchema", w.style.bad)
    elif status is not None:
        w.field("output", "not checked: " + w.safe(checked.get("reason", "")))
    if "saved" in report:
        saved = [_object(entry) for entry in _items(report.get("saved"))]
        if not saved and report.get("ok"):
            w.field("saved", "nothing: the result has no image, audio or blob content")
        for entry in saved:
            mime = entry.get("mimeType")
            what = f"{w.safe(entry.get('from', '?'), 64)}"
            what += f" {w.safe(mime, 64)}" if mime else ""
            # One line, never wrapped: a path is there to be copied whole.
            line = f"{what}, {w.safe(entry.get('bytes'), 32)} bytes -> "
            line += w.safe(entry.get("path", "?"), 1024)
            w.lines.append(w.style.bold(f"{'saved':<13} ") + line)


def _result(w: _Writer, report: dict[str, Any], method: str) -> None:
    style = w.style
    result = plain(report.get("result"))
    w.lines.append("")
    if not isinstance(result, dict):
        w.lines.append(w.safe(result))
    elif method == "tools/call":
        if result.get("isError") is True:
            w.lines.append(style.bad("the tool reported an error (isError)"))
        _blocks(w, _items(result.get("content")))
        if result.get("structuredContent") is not None:
            w.lines.append(style.dim("structured: ") + w.safe(result["structuredContent"]))
    elif method == "resources/read":
        for item in _items(result.get("contents")):
            if isinstance(item, dict):
                _resource(w, None, item)
                _text_or_blob(w, item)
            else:
                w.lines.append(style.dim(w.safe(item)))
    else:
        if result.get("description"):
            w.lines.append(style.dim(w.safe(result["description"])))
        for message in _items(result.get("messages")):
            if isinstance(message, dict):
                w.lines.append(style.bold(f"{w.safe(message.get('role', '?'), 32)}:"))
                _blocks(w, [message.get("content")])
            else:
                w.lines.append(style.dim(w.safe(message)))


def _blocks(w: _Writer, blocks: list[Any]) -> None:
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text" and _text(w, block):
            continue
        if isinstance(block, dict) and block.get("type") == "resource":
            resource = block.get("resource")
            if isinstance(resource, dict):
                _resource(w, "[resource]", resource)
                _text_or_blob(w, resource)
                continue
        if isinstance(block, dict) and block.get("type") == "resource_link":
            _resource(w, "[resource link]", block)
            continue
        if isinstance(block, dict) and isinstance(block.get("data"), str):
            mime = w.safe(block.get("mimeType", "?"), 64)
            w.lines.append(
                w.style.dim(
                    f"[{w.safe(block.get('type'), 32)} {mime}, "
                    f"{len(block['data'])} characters of base64]"
                )
            )
        else:
            w.lines.append(w.style.dim(w.safe(block)))


def _resource(w: _Writer, label: str | None, item: dict[str, Any]) -> None:
    """A resource's line, alike for a link, an embedded resource and a read's contents:
    the label, the URI whole, then its name and MIME type when it has them."""
    name = f"  {w.safe(item['name'], 200)}" if item.get("name") else ""
    mime = f" [{w.safe(item['mimeType'], 64)}]" if item.get("mimeType") else ""
    head = f"{w.style.dim(label)} " if label else ""
    w.lines.append(head + w.style.bold(w.ident(item.get("uri", "?"))) + name + mime)


def _text_or_blob(w: _Writer, item: dict[str, Any]) -> None:
    if _text(w, item):
        return
    if isinstance(item.get("blob"), str):
        w.lines.append(w.style.dim(f"[blob, {len(item['blob'])} characters of base64]"))
    elif "text" in item or "blob" in item:
        shown = {k: v for k, v in item.items() if k in ("text", "blob")}
        w.lines.append(w.style.dim(w.safe(shown)))


def _text(w: _Writer, item: dict[str, Any]) -> bool:
    """Show ``item``'s string ``text`` line by line; False when it has none."""
    text = item.get("text")
    if not isinstance(text, str):
        return False
    # Line by line: the text keeps its shape, each line escaped on its own.
    for line in text.splitlines() or [""]:
        w.lines.append(w.redactor.log_value(line, _LINE_LIMIT))
    return True


def render_many(report: dict[str, Any], redactor: Redactor, style: Style, width: int | None) -> str:
    """``--all``: each server's connect report under its name, then a summary. Raises
    nothing."""
    parts: list[str] = []
    servers = _object(report.get("servers"))
    for name, entry in servers.items():
        server = _object(entry)
        status = style.good("ok") if server.get("ok") else style.bad("failed")
        parts.append(style.bold(f"== {redactor.log_value(name, 64)}: ") + status)
        parts.append(render_connect(server, redactor, style, width))
    for name, reason in _object(report.get("skipped")).items():
        shown = redactor.log_value(text_of(reason), 64)
        parts.append(style.dim(f"== {redactor.log_value(name, 64)}: skipped ({shown})\n"))
    failed = sum(1 for server in servers.values() if not _object(server).get("ok"))
    parts.append(f"{len(servers)} servers: {len(servers) - failed} ok, {failed} failed\n")
    return "\n".join(parts)


def render_items(
    key: str, items: list[Any], redactor: Redactor, style: Style, width: int | None
) -> str:
    """One listing's rows as ``connect`` shows them (``key``: ``tools``, ``resources``,
    ``resourceTemplates`` or ``prompts``), without a heading: what the shell prints
    for its ``tools``, ``resources`` and ``prompts``. Raises nothing."""
    w = _Writer(redactor, style, width)
    w.table([_row(w, key, item) for item in items])
    return w.text() if w.lines else ""


def render_result(
    result: Any, method: str, redactor: Redactor, style: Style, width: int | None
) -> str:
    """A result alone, as ``call`` shows it without the lines about the server (the
    shell's answer to a command). Raises nothing."""
    w = _Writer(redactor, style, width)
    _result(w, {"result": result}, method)
    return "\n".join(w.lines[1:]) + "\n"  # _result opens with a blank line
