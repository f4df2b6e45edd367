"""The command against servers that answer in the wrong shape or without end: a report
is always printed, with the exit status docs/cli.md gives, and nothing a server wrote
drives the terminal."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from .helpers import run, run_json, server

# Everything but newline that a terminal would act on, escape first.
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_ESC = "\x1b]0;owned\x07\x1b[2J"


def answering(tmp_path: Path, method: str, result: Any, capabilities: Any = None) -> list[str]:
    """A stdio server that answers ``method`` with ``result`` and every list with an
    empty page."""
    caps = capabilities if capabilities is not None else {"tools": {}, "prompts": {}}
    return server(
        tmp_path,
        "shaped",
        f"""
        RESULT = json.loads({json.dumps(json.dumps(result))})
        EMPTY = {{"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources",
                  "resources/templates/list": "resourceTemplates"}}
        for line in sys.stdin:
            request = json.loads(line)
            if refused_discover(request):
                continue
            if request.get("method") == "initialize":
                initialized(request, capabilities={caps!r})
            elif request.get("method") == {method!r}:
                send({{"jsonrpc": "2.0", "id": request["id"], "result": RESULT}})
            elif request.get("method") in EMPTY:
                send({{"jsonrpc": "2.0", "id": request["id"],
                      "result": {{EMPTY[request["method"]]: []}}}})
        """,
    )


CALLS = {
    "tools/call": ("--tool", "t", "--args", "{}"),
    "resources/read": ("--resource", "x://a"),
    "prompts/get": ("--prompt", "p"),
}


@pytest.mark.parametrize(
    ("method", "result"),
    [
        ("tools/call", {"content": 5}),
        ("tools/call", {"content": [5, None, {"type": 5}, {"type": "text", "text": 7}]}),
        ("tools/call", {"content": "text", "isError": "yes", "structuredContent": [1]}),
        ("resources/read", {"contents": 5}),
        ("resources/read", {"contents": [5, {"uri": 5, "mimeType": [], "text": {}}]}),
        ("prompts/get", {"messages": 5}),
        ("prompts/get", {"messages": [5, {"role": 5, "content": 5}], "description": 5}),
        ("tools/call", [1, 2]),
        ("prompts/get", "just text"),
    ],
)
def test_a_result_of_the_wrong_shape_is_still_reported(
    tmp_path: Path, method: str, result: Any
) -> None:
    argv = answering(tmp_path, method, result)
    done = run("call", *CALLS[method], "--", *argv)
    # The request succeeded: what the result holds is the server's affair (as with --json).
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "server" in done.stdout
    assert "test-server" in done.stdout
    report, done = run_json("call", "--json", *CALLS[method], "--", *argv)
    assert done.returncode == 0
    assert report["result"] == result


def test_a_prompt_with_arguments_of_the_wrong_shape_is_still_listed(tmp_path: Path) -> None:
    prompts = {
        "prompts": [
            {"name": "p", "arguments": 5},
            {"name": "q", "arguments": [5, {"name": 7, "required": "x"}]},
            {"name": {"x": 1}, "description": ["a"]},
            {},
        ]
    }
    argv = answering(tmp_path, "prompts/list", prompts)
    done = run("connect", "--", *argv)
    assert done.returncode == 0, done.stderr
    assert "prompts (4)" in done.stdout
    assert "p(" in done.stdout
    assert "ok" in done.stdout.splitlines()[-1]


def test_a_servers_text_never_reaches_the_terminal_raw(tmp_path: Path) -> None:
    hostile = {
        "content": [
            {"type": "text", "text": f"line{_ESC}\r\nnext\u2028"},
            {"type": _ESC, "data": "AAAA", "mimeType": _ESC},
            {"type": "resource", "resource": {"uri": _ESC, "text": _ESC}},
            {_ESC: _ESC},
        ],
        "structuredContent": {_ESC: _ESC},
    }
    argv = answering(tmp_path, "tools/call", hostile)
    done = run("call", *CALLS["tools/call"], "--", *argv)
    assert done.returncode == 0, done.stderr
    assert not _CONTROL.search(done.stdout), done.stdout
    assert "\\u001b" in done.stdout


def test_a_list_item_that_is_not_an_object_is_a_protocol_error(tmp_path: Path) -> None:
    argv = answering(tmp_path, "prompts/list", {"prompts": [{"name": "p"}, 5]})
    report, done = run_json("connect", "--json", "--", *argv)
    assert done.returncode == 1
    assert report["error"]["kind"] == "protocol-error"
    assert "list of objects" in report["error"]["message"]
    assert report["error"]["method"] == "prompts/list"


FOREVER = """
for line in sys.stdin:
    request = json.loads(line)
    if refused_discover(request):
        continue
    if request.get("method") == "initialize":
        initialized(request)
    elif request.get("method") == "tools/list":
        cursor = int((request.get("params") or {}).get("cursor", "0"))
        send({"jsonrpc": "2.0", "id": request["id"], "result": {
            "tools": [{"name": f"t{cursor}_{i}"} for i in range(PER_PAGE)],
            "padding": PADDING,
            "nextCursor": str(cursor + 1)}})
"""


@pytest.mark.parametrize(
    ("per_page", "padding", "limit", "value"),
    [
        # 5,000 tools a page: past 100,000 items on page 21, before the 100-page cap.
        (5000, 0, "max_list_items", 100_000),
        # 12 MB pages: past 32 MiB on the third.
        (1, 12_000_000, "max_list_bytes", 32 * 1024 * 1024),
    ],
)
def test_a_listing_without_end_stops_at_the_total_bounds(
    tmp_path: Path, per_page: int, padding: int, limit: str, value: int
) -> None:
    prelude = f"PER_PAGE = {per_page}\nPADDING = 'x' * {padding}\n"
    argv = server(tmp_path, "forever", prelude + FOREVER)
    report, done = run_json("connect", "--json", "--", *argv)
    assert done.returncode == 1, done.stderr
    assert report["ok"] is False
    error = report["error"]
    assert (error["kind"], error["limit"], error["value"]) == ("limit-exceeded", limit, value)
    assert error["method"] == "tools/list"
    assert limit in error["message"]
    assert "tools" not in report  # nothing partial
    text = run("connect", "--", *argv)
    assert text.returncode == 1
    assert "limit-exceeded" in text.stdout
