"""The examples of the documentation, as blocks the docs test runs (docs/testing.md,
"The docs test").

A page's fenced block is classified by its info string and by a marker, an HTML comment
on the line just before the fence (``<!-- docs-test: KIND[: DETAIL] -->``); a module
docstring's literal block (the indented block after a ``::`` paragraph, or after the
docstring's first paragraph) by whether it is a script or a fragment, and by an rst
comment (``.. docs-test: KIND[: DETAIL]``) before it. Nothing here runs anything.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# What a marker may say, and whether it needs a detail after the colon.
MARKER_KINDS = {"skip": True, "file": True, "config": False, "pytest": False, "tested-by": True}
# Unmarked blocks of these kinds are run; any other unmarked block fails the test.
SCRIPT_INFOS = frozenset({"python", "py"})
SHELL_INFOS = frozenset({"sh", "bash", "shell"})
CONSOLE_INFOS = frozenset({"console"})
JSON_INFOS = frozenset({"json"})

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)\s*$")
_HTML_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
_RST_MARKER = re.compile(r"^\s*\.\.\s+docs-test:\s*(?P<body>.*?)\s*$")
# A block that follows a paragraph ending so is the output of the block before it.
_PRINTS = re.compile(r"It prints:\s*$")
# The first words of a docstring block that is Python (the others are format sketches:
# JSON, tables of options).
_PYTHON_START = re.compile(r"^(import|from|async|await|with|def|class|print)\b")


@dataclass(frozen=True)
class Marker:
    kind: str
    detail: str


@dataclass
class Block:
    """One example: where it is, what it holds, how the page marked it."""

    source: Path
    line: int  # 1-based: the opening fence, or the first line of a docstring's block
    info: str
    text: str
    marker: Marker | None = None
    marker_error: str | None = None
    output: Block | None = None  # the "It prints:" block after it
    is_output: bool = False
    in_docstring: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        where = self.source.relative_to(ROOT) if self.source.is_relative_to(ROOT) else self.source
        return f"{where}:{self.line}"

    @property
    def page(self) -> str:
        return self.source.name


def parse_marker(body: str) -> tuple[Marker | None, str | None]:
    """The marker a comment's body names, or why it is not one."""
    kind, colon, detail = body.partition(":")
    kind, detail = kind.strip(), detail.strip()
    if kind not in MARKER_KINDS:
        return None, f"unknown docs-test marker {kind!r} (one of {', '.join(MARKER_KINDS)})"
    if MARKER_KINDS[kind] and not detail:
        return None, f"the docs-test marker {kind!r} needs a detail: '{kind}: ...'"
    if not MARKER_KINDS[kind] and colon:
        return None, f"the docs-test marker {kind!r} takes no detail"
    return Marker(kind, detail), None


def markdown_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown page, in order, outputs tied to their examples."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    since_last: list[str] = []  # the text between the previous block and this one
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            since_last.append(lines[index])
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        body: list[str] = []
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            line = lines[end]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            end += 1
        block = Block(path, index + 1, opening["info"].lower(), "\n".join(body) + "\n")
        previous = lines[index - 1] if index > 0 else ""
        found = _HTML_MARKER.match(previous)
        if found is not None:
            block.marker, block.marker_error = parse_marker(found["body"])
        prose = [line for line in since_last if line.strip()]
        if prose and _PRINTS.search(prose[-1]) and blocks:
            block.is_output = True
            blocks[-1].output = block
        blocks.append(block)
        since_last = []
        index = end + 1
    return blocks


def docstring_blocks(path: Path) -> list[Block]:
    """The Python literal blocks of a module's docstrings (module, classes, functions)."""
    tree = ast.parse(path.read_text())
    blocks: list[Block] = []
    for node in ast.walk(tree):
        if not isinstance(
            node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ) or not (node.body and isinstance(node.body[0], ast.Expr)):
            continue
        value = node.body[0].value
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            continue
        docstring = ast.get_docstring(node, clean=True) or ""
        for offset, text, marker_body in _literal_blocks(docstring):
            if not _is_python(text):
                continue
            block = Block(path, value.lineno + offset, "python", text, in_docstring=True)
            if marker_body is not None:
                block.marker, block.marker_error = parse_marker(marker_body)
            blocks.append(block)
    return blocks


def _is_python(text: str) -> bool:
    """Whether a docstring's literal block is Python: it starts as Python does, or it
    compiles and is not JSON (a config sketch is both): an example cannot escape the
    test by starting with an assignment."""
    if _PYTHON_START.match(text):
        return True
    try:
        json.loads(text)
    except ValueError:
        pass
    else:
        return False
    try:
        compile(text, "<docstring>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        return False
    return True


def _literal_blocks(docstring: str) -> Iterator[tuple[int, str, str | None]]:
    """(line offset, dedented text, marker) of each block indented under a paragraph."""
    lines = docstring.splitlines()
    marker: str | None = None
    index = 0
    while index < len(lines):
        found = _RST_MARKER.match(lines[index])
        if found is not None:
            marker = found["body"]
        starts_block = (
            lines[index].startswith("    ") and index > 0 and not lines[index - 1].strip()
        )
        heading = next((line for line in reversed(lines[:index]) if line.strip()), "")
        if not starts_block or heading.startswith(" "):
            index += 1
            continue
        end = index
        while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
            end += 1
        text = "\n".join(line[4:] for line in lines[index:end]).rstrip() + "\n"
        yield index, text, marker
        marker = None
        index = end


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def modules() -> list[Path]:
    return sorted((ROOT / "mcpl_host").rglob("*.py"))


def all_blocks() -> list[Block]:
    found: list[Block] = []
    for page in pages():
        found.extend(markdown_blocks(page))
    for module in modules():
        found.extend(docstring_blocks(module))
    return found


def console_steps(text: str) -> list[tuple[str, str]]:
    """A console block's ``$ `` commands, each with the output shown after it."""
    steps: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"a console block starts with '$ COMMAND', not {line!r}")
    return [(command, "".join(f"{out}\n" for out in shown)) for command, shown in steps]


def shell_commands(text: str) -> list[str]:
    """A shell block's commands: one a line (``\\`` continues it), comments left out."""
    commands: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1].strip() + " "
            continue
        command = (pending + line.strip()).strip()
        pending = ""
        if command and not command.startswith("#"):
            commands.append(command)
    return commands
