"""The readable listing through the real command: identifiers (tool, prompt and
argument names, URIs, URI templates) are shown whole at every width and when piped,
tools with their signatures, and widths taken from the terminal only when stdout is
one (a real pseudo-terminal with its window size set)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from .helpers import CLI, TIMEOUT, TerminalReader, run, run_json, server

LONG_URI = "file:///" + "very/long/path/" * 12 + "quarterly-report.txt"
TEMPLATE = "github://repos/{owner}/{repo}/issues/{issue_number}/comments{?page,per_page}"
SEARCH = 'search(query: string, mode: "fast"|"deep", limit?: integer, tags?: string[], '
SEARCH += "filter?: string|null, extra?: any)"
PROMPT = "review_code(code, style_guide_url, language_of_the_code?)"
HOSTILE = "evil\x1b[2J\u202ename"
HUGE = "t" * 100_000
# What the report may not contain: a terminal's controls and bidi overrides, raw.
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

BODY = f"""
LONG_URI = {LONG_URI!r}
TEMPLATE = {TEMPLATE!r}
HOSTILE = {HOSTILE!r}
deep = {{"type": "string"}}
for _ in range(200):
    deep = {{"type": "array", "items": deep}}
TOOLS = [
    {{"name": "search", "description": "Search the index for documents; " * 8,
      "inputSchema": {{"type": "object", "required": ["query", "mode"], "properties": {{
          "query": {{"type": "string"}}, "limit": {{"type": "integer"}},
          "tags": {{"type": "array", "items": {{"type": "string"}}}},
          "mode": {{"enum": ["fast", "deep"]}},
          "filter": {{"anyOf": [{{"type": "string"}}, {{"type": "null"}}]}},
          "extra": {{}}}}}}}},
    {{"name": "noargs", "description": "Takes nothing.", "inputSchema": {{"type": "object"}}}},
    {{"name": "matrix", "inputSchema": {{"type": "object", "required": ["rows"], "properties": {{
          "rows": {{"type": "array", "items": {{"type": "array",
                   "items": {{"type": ["number", "null"]}}}}}},
          "options": {{"type": "object", "properties": {{"a": {{"type": "string"}}}}}},
          "choice": {{"oneOf": [{{"type": "integer"}}, {{"type": "array", "items": {{"type": "boolean"}}}}]}}}}}}}},
    {{"name": "many", "inputSchema": {{"type": "object",
          "properties": {{f"p{{i}}": {{"type": "boolean"}} for i in range(5000)}}}}}},
    {{"name": "deep", "inputSchema": {{"type": "object", "properties": {{"x": deep}}}}}},
    {{"name": HOSTILE, "inputSchema": {{"type": "object",
          "properties": {{"ar\\x1b]0;owned\\x07g": {{"type": "string"}}}}}}}},
    {{"name": "t" * 100000, "inputSchema": {{"type": "object"}}}},
    {{"name": "wide", "inputSchema": {{"type": "object",
          "properties": {{"w" * 5000 + str(i): {{}} for i in range(10)}}}}}},
]
LISTS = {{
    "tools/list": {{"tools": TOOLS}},
    "resources/list": {{"resources": [{{"uri": LONG_URI, "name": "report",
        "mimeType": "text/plain", "description": "The quarterly report, in full. " * 6}}]}},
    "resources/templates/list": {{"resourceTemplates": [{{"uriTemplate": TEMPLATE,
        "name": "comments", "description": "Comments on an issue."}}]}},
    "prompts/list": {{"prompts": [{{"name": "review_code", "description": "Review code.",
        "arguments": [{{"name": "code", "required": True}},
                      {{"name": "language_of_the_code"}},
                      {{"name": "style_guide_url", "required": True}}]}}]}},
}}
CAPABILITIES = {{"tools": {{}}, "resources": {{}}, "prompts": {{}}}}
for line in sys.stdin:
    request = json.loads(line)
    if refused_discover(request):
        continue
    if request.get("method") == "initialize":
        initialized(request, capabilities=CAPABILITIES)
    elif request.get("method") in LISTS:
        send({{"jsonrpc": "2.0", "id": request["id"], "result": LISTS[request["method"]]}})
"""


@pytest.fixture(scope="module")
def listing_server(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return server(tmp_path_factory.mktemp("listing"), "listing", BODY)


def on_terminal(args: list[str], columns: int) -> str:
    """Run the command with stdout (and stderr) on a pseudo-terminal ``columns`` wide;
    what it wrote, newlines as written (the terminal's CR dropped). COLUMNS is unset:
    the width is the terminal's."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["NO_COLOR"] = "1"
    try:
        process = subprocess.Popen(
            [*CLI, *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env
        )
        os.close(follower)  # the child holds its own copy
        reader = TerminalReader(leader)
        try:
            assert process.wait(timeout=TIMEOUT) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            reader.join()
    finally:
        os.close(leader)
    return reader.text().replace("\r\n", "\n")


def section(out: str, heading: str) -> list[str]:
    """The lines of one list's table."""
    lines = out.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i])
    return lines[start + 1 : end]


@pytest.mark.parametrize("columns", [40, 80, 200])
def test_identifiers_are_whole_on_a_terminal_of_any_width(
    listing_server: list[str], columns: int
) -> None:
    out = on_terminal(["connect", "--", *listing_server], columns)
    assert not _CONTROL.search(out), ascii(out)
    # A URI and a template are never cut nor broken: a line of their own when too long.
    assert f"  {LONG_URI}\n" in out
    assert TEMPLATE in out
    tools = section(out, "tools (8)")
    # A signature too long for the line is wrapped between its arguments, never inside one.
    joined = " ".join(line.strip() for line in tools)
    assert SEARCH in joined
    assert "noargs()" in joined
    assert "matrix(rows: (number|null)[][], options?: object, choice?: integer|boolean[])" in joined
    assert PROMPT in " ".join(line.strip() for line in section(out, "prompts (1)"))
    # Descriptions (prose) are cut to the terminal's width; only an identifier longer
    # than the line is left for the terminal to fold.
    for line in out.split("\n"):
        if len(line) > columns:
            assert "  " not in line.strip(), line  # one identifier, or one argument, alone
    assert "Search the index" in out
    assert ("Search the index for documents; " * 8).strip() not in out
    assert ("The quarterly report, in full. " * 6).strip() not in out
    if columns == 200:  # longer than the column: a line of its own, the description under it
        assert f"  {SEARCH}\n" in out


def test_identifiers_and_prose_are_whole_when_piped(listing_server: list[str]) -> None:
    # COLUMNS is a terminal's setting: piped, no width applies, it included.
    done = run("connect", "--", *listing_server, env={"COLUMNS": "40"})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert not _CONTROL.search(out), ascii(out)
    lines = out.split("\n")
    # One line per item: the identifier whole, then the description whole.
    assert any(line.startswith(f"  {SEARCH}  Search the index") for line in lines)
    search = next(line for line in lines if line.startswith(f"  {SEARCH}"))
    assert search.endswith(("Search the index for documents; " * 8).strip())
    assert (
        f"  {LONG_URI}  report [text/plain] " + ("The quarterly report, in full. " * 6).strip()
        in lines
    )
    assert any(line.startswith(f"  {TEMPLATE}  comments Comments on an issue.") for line in lines)
    assert any(line.startswith(f"  {PROMPT}  Review code.") for line in lines)
    # The server's instructions and every other paragraph: not wrapped either.
    assert all(not line.startswith(" " * 14) for line in lines)


def test_hostile_schemas_and_identifiers_are_bounded_and_escaped(listing_server: list[str]) -> None:
    done = run("connect", "--", *listing_server)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert not _CONTROL.search(out), ascii(out)
    # Escaped, but whole: the name and the argument name.
    assert "evil\\u001b[2J\\u202ename(ar\\u001b]0;owned\\u0007g?: string)" in out
    # Thousands of properties: the first 64, then an ellipsis.
    many = next(line for line in out.split("\n") if line.startswith("  many("))
    assert "p0?: boolean, p1?: boolean" in many
    assert "p63?: boolean, …)" in many
    assert "p64" not in many
    # Nesting past a bound: an ellipsis where the rest would be.
    assert "  deep(x?: …[][][][][])" in out
    # An absurd identifier is cut at its bound (4096 characters), marked.
    huge = next(line for line in out.split("\n") if line.startswith("  ttt"))
    assert huge.startswith("  " + "t" * 4000)
    assert "…[cut]" in huge
    assert len(huge) < 4200
    # So is a signature of absurd argument names, after a few.
    wide = next(line for line in out.split("\n") if line.startswith("  wide("))
    assert wide.endswith(", …)")
    assert len(wide) < 13_000
    # --json is unchanged: the schema whole.
    report, done = run_json("connect", "--json", "--", *listing_server)
    assert len(report["tools"][3]["inputSchema"]["properties"]) == 5000
    assert report["tools"][6]["name"] == HUGE


def test_resource_links_and_embedded_resources_are_printed_alike(tmp_path: Path) -> None:
    content = [
        {"type": "resource_link", "uri": LONG_URI, "name": "report", "mimeType": "text/plain"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "line one\nline two"}},
        {"type": "resource", "resource": {"uri": "x://b", "mimeType": "image/png", "blob": "AAAA"}},
    ]
    argv = server(
        tmp_path,
        "linking",
        f"""
        for line in sys.stdin:
            request = json.loads(line)
            if refused_discover(request):
                continue
            if request.get("method") == "initialize":
                initialized(request)
            elif request.get("method") == "tools/call":
                send({{"jsonrpc": "2.0", "id": request["id"],
                      "result": {{"content": {content!r}}}}})
            elif request.get("method") == "tools/list":  # the outputSchema check's
                send({{"jsonrpc": "2.0", "id": request["id"], "result": {{"tools": []}}}})
        """,
    )
    done = run("call", "--tool", "t", "--", *argv)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    at = lines.index(f"[resource link] {LONG_URI}  report [text/plain]")
    assert lines[at + 1 : at + 6] == [
        "[resource] file:///a.txt",
        "line one",
        "line two",
        "[resource] x://b [image/png]",
        "[blob, 4 characters of base64]",
    ]
