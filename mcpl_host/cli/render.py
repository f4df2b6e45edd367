"""The readable report: the same facts as ``--json``, for a person at a terminal.

Everything a server wrote is shown through the redactor's ``log_value`` (secrets
masked, control characters escaped so a server cannot drive the terminal, long text
cut); table cells are also cut to the terminal's width. Colour only when stdout is a
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
import textwrap
from collections.abc import Callable
from typing import Any, Final, TextIO

from ..protocol.redact import Redactor
from .jsonvalue import plain, text_of

__all__ = ["Style", "render_call", "render_connect", "render_many", "terminal_width"]

_WHITESPACE: Final = re.compile(r"\s+")
_CELL_LIMIT: Final = 2000  # escaping budget for one cell, before the width cut
_LINE_LIMIT: Final = 4000  # one line of a call's text result
_NAME_WIDTH: Final = 32
_MIN_WIDTH: Final = 40
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


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` wins; 100 when stdout is not a terminal), at
    least 40. Raises nothing."""
    return max(shutil.get_terminal_size((100, 24)).columns, _MIN_WIDTH)


class _Writer:
    def __init__(self, redactor: Redactor, style: Style, width: int) -> None:
        self.redactor = redactor
        self.style = style
        self.width = width
        self.lines: list[str] = []

    def safe(self, value: Any, limit: int = _CELL_LIMIT) -> str:
        """A server's value (any JSON) on one line: a string as it is, anything else as
        its JSON; whitespace runs collapsed, redacted, escaped."""
        return self.redactor.log_value(_WHITESPACE.sub(" ", text_of(value)).strip(), limit)

    def cut(self, text: str, width: int) -> str:
        if len(text) <= width:
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

    def table(self, rows: list[tuple[str, str]]) -> None:
        names = [self.cut(self.safe(name, _NAME_WIDTH * 2), _NAME_WIDTH) for name, _ in rows]
        column = max((len(n) for n in names), default=0)
        room = max(self.width - 2 - column - 2, 10)
        for name, (_, text) in zip(names, rows, strict=True):
            described = self.cut(self.safe(text), room) if text else ""
            self.lines.append(f"  {name:<{column}}  {self.style.dim(described)}".rstrip())

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


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


def render_connect(report: dict[str, Any], redactor: Redactor, style: Style, width: int) -> str:
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
        w.table([_row(key, item) for item in listed])
    w.lines.append("")
    w.lines.append(style.good("ok"))
    return w.text()


def _row(key: str, item: Any) -> tuple[Any, Any]:
    """(name, description) of a listed item, each any JSON value (the table shows it)."""
    item = plain(item)
    if not isinstance(item, dict):
        return ("?", item)
    description = item.get("description") or item.get("title") or ""
    if key == "tools":
        return (item.get("name", "?"), description)
    if key == "resources":
        mime = f" [{text_of(item['mimeType'])}]" if item.get("mimeType") else ""
        return (
            item.get("uri", "?"),
            f"{text_of(item.get('name', ''))}{mime} {text_of(description)}",
        )
    if key == "resourceTemplates":
        return (
            item.get("uriTemplate", "?"),
            f"{text_of(item.get('name', ''))} {text_of(description)}",
        )
    names = [_argument(argument) for argument in _items(item.get("arguments"))]
    return (f"{text_of(item.get('name', '?'))}({', '.join(names)})", description)


def _argument(argument: Any) -> str:
    if not isinstance(argument, dict):
        return text_of(argument)
    return f"{text_of(argument.get('name', '?'))}{'' if argument.get('required') else '?'}"


def render_call(
    report: dict[str, Any], method: str, redactor: Redactor, style: Style, width: int
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
                mime = f" [{w.safe(item['mimeType'], 64)}]" if item.get("mimeType") else ""
                w.lines.append(style.bold(w.safe(item.get("uri", "?"), 400)) + mime)
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
                w.lines.append(w.style.dim(f"[resource {w.safe(resource.get('uri', '?'), 400)}]"))
                _text_or_blob(w, resource)
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


def render_many(report: dict[str, Any], redactor: Redactor, style: Style, width: int) -> str:
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
