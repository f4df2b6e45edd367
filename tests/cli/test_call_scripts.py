"""``call`` in scripts: arguments from a file, stdin and KEY=VALUE pairs; the exit status
that tells a tool error (3), an unreachable server (6) and a request error (1) apart;
the outputSchema check in the report; ``--output``. Every run is the real command."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcpl_host.cli.args import UsageError, parse
from mcpl_host.cli.failure import exit_status
from mcpl_host.cli.save import MAX_SAVE_FILES, SaveError, save

from .helpers import CLI, TIMEOUT, closed_port_url, run_json, server

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
WAV = b"RIFF\x00\x00\x00\x00WAVEfmt " + b"\x01" * 40
PDF = b"%PDF-1.4 not really"
CONTENT = {"PNG": PNG, "WAV": WAV, "PDF": PDF}

# One server for every test: tools/list declares which tool has an outputSchema; each
# tool answers as its name says; resources/read gives blobs under hostile URIs.
TOOLS = r"""
B64 = __import__("base64").b64encode
PNG = __import__("base64").b64decode(CONTENT["PNG"])
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
TOOLS = [
    {"name": "args", "inputSchema": {"type": "object"}},
    {"name": "fails", "inputSchema": {"type": "object"}},
    {"name": "refused", "inputSchema": {"type": "object"}},
    {"name": "good", "inputSchema": {"type": "object"}, "outputSchema": SCHEMA},
    {"name": "bad", "inputSchema": {"type": "object"}, "outputSchema": SCHEMA},
    {"name": "media", "inputSchema": {"type": "object"}},
    {"name": "image", "inputSchema": {"type": "object"}},
    {"name": "broken", "inputSchema": {"type": "object"}},
]

def answer(request):
    name = request["params"].get("name")
    arguments = request["params"].get("arguments")
    if name == "args":
        return {"content": [{"type": "text", "text": json.dumps(arguments, sort_keys=True)}]}
    if name == "fails":
        return {"content": [{"type": "text", "text": "disk full\nat /var"}], "isError": True}
    if name == "good":
        return {"content": [{"type": "text", "text": "7"}], "structuredContent": {"n": 7}}
    if name == "bad":
        return {"content": [{"type": "text", "text": "x"}], "structuredContent": {"n": "seven"}}
    if name == "image":
        return {"content": [{"type": "image", "data": B64(PNG).decode(), "mimeType": "image/png"}]}
    if name == "broken":
        return {"content": [{"type": "image", "data": "not base64!!", "mimeType": "image/png"}]}
    if name == "media":
        return {"content": [
            {"type": "text", "text": "three files"},
            {"type": "image", "data": B64(PNG).decode(), "mimeType": "image/png"},
            {"type": "audio", "data": CONTENT["WAV"], "mimeType": "audio/wav"},
            {"type": "resource", "resource": {
                "uri": "file:///../../escape/..%2F../.hidden\u202e.pdf",
                "mimeType": "application/pdf", "blob": CONTENT["PDF"]}},
            {"type": "resource", "resource": {"uri": "file:///etc/passwd", "blob": ""}},
        ]}
    return None

for line in sys.stdin:
    request = json.loads(line)
    if refused_discover(request):
        continue
    method = request.get("method")
    if method == "initialize":
        initialized(request, capabilities={"tools": {}, "resources": {}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": TOOLS}})
    elif method == "tools/call":
        result = answer(request)
        if result is None:
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": -32602, "message": "no such tool"}})
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})
    elif method == "resources/read":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"contents": [
            {"uri": request["params"]["uri"], "mimeType": "application/pdf",
             "blob": CONTENT["PDF"]}]}})
    elif "id" in request:
        send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
"""


@pytest.fixture
def tools(tmp_path: Path) -> list[str]:
    """The argv of the test server, the bytes it sends written into it."""
    content = {name: base64.b64encode(data).decode() for name, data in CONTENT.items()}
    return server(tmp_path, "tools", f"CONTENT = {content!r}\n{TOOLS}")


def _call(
    *args: str, stdin: str | None = None, columns: int = 100
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    environment["COLUMNS"] = str(columns)
    return subprocess.run(
        [*CLI, "call", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment,
        input=stdin,
    )


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    report = json.loads(done.stdout)
    assert isinstance(report, dict), done.stdout
    return report


def _echoed(report: dict[str, Any]) -> Any:
    return json.loads(report["result"]["content"][0]["text"])


# -- arguments -------------------------------------------------------------------------


def test_args_from_a_file_from_stdin_and_typed_pairs(tmp_path: Path, tools: list[str]) -> None:
    given = tmp_path / "args.json"
    given.write_text('{"city": "Oslo", "days": 3}')
    from_file = _call("--json", "--tool", "args", "--args", f"@{given}", "--", *tools)
    assert from_file.returncode == 0, from_file.stderr
    assert _echoed(_report(from_file)) == {"city": "Oslo", "days": 3}

    piped = _call("--json", "--tool", "args", "--args", "-", "--", *tools, stdin='{"q": [1, 2]}')
    assert _echoed(_report(piped)) == {"q": [1, 2]}

    pairs = _call(
        "--json",
        "--tool",
        "args",
        "--args",
        '{"days": 1, "keep": "me"}',
        "--arg",
        "days=5",  # a pair replaces the key --args gave
        "--arg",
        "ratio=0.5",
        "--arg",
        "on=true",
        "--arg",
        "none=null",
        "--arg",
        'filter={"a": [1, "b"]}',
        "--arg",
        "city=Oslo",  # not JSON: the text
        "--arg",
        'zip="0150"',  # a JSON string: the digits stay a string
        "--arg",
        "empty=",
        "--arg",
        "eq=a=b",  # split at the first '='
        "--",
        *tools,
    )
    assert pairs.returncode == 0, pairs.stderr
    assert _echoed(_report(pairs)) == {
        "days": 5,
        "keep": "me",
        "ratio": 0.5,
        "on": True,
        "none": None,
        "filter": {"a": [1, "b"]},
        "city": "Oslo",
        "zip": "0150",
        "empty": "",
        "eq": "a=b",
    }


def test_a_prompts_pairs_are_strings_as_written() -> None:
    options = parse(["call", "--prompt", "greet", "--arg", "n=5", "--arg", "b=true", "--demo"])
    assert options.call is not None  # type: ignore[union-attr]
    assert options.call.params["arguments"] == {"n": "5", "b": "true"}  # type: ignore[union-attr]


def test_an_args_file_that_is_missing_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    report, done = run_json("call", "--json", "--tool", "t", "--args", f"@{missing}", "--demo")
    assert done.returncode == 2
    assert report["error"]["kind"] == "config-error"
    assert report["error"]["message"] == f"--args @{missing}: no such file"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            '{"a": 1,\n  "b": }',
            "--args @FILE is not JSON: JSON is malformed: invalid character at line 2, column 8",
        ),
        ("[1, 2]", "--args @FILE must be a JSON object, not an array"),
        ('"sk-secret"', "--args @FILE must be a JSON object, not a string"),
        ("  \n", "--args @FILE is empty, not a JSON object"),
    ],
)
def test_an_args_file_that_is_not_an_object_says_why_and_where(
    tmp_path: Path, text: str, says: str
) -> None:
    given = tmp_path / "a.json"
    given.write_text(text)
    with pytest.raises(UsageError) as refused:
        parse(["call", "--tool", "t", "--args", f"@{given}", "--demo"])
    assert refused.value.message == says.replace("@FILE", f"@{given}")


def test_stdin_that_is_not_json_gives_the_position() -> None:
    with pytest.raises(UsageError) as refused:
        parse(["call", "--tool", "t", "--args", "-", "--demo"], stdin=lambda _: b"{\n\n  @}")
    assert refused.value.message == (
        "--args - (stdin) is not JSON: JSON is malformed: object keys must be strings at line 3, column 3"
    )


def test_a_pair_without_its_equals_sign_is_refused_without_its_text() -> None:
    with pytest.raises(UsageError) as refused:
        parse(["call", "--tool", "t", "--arg", "a=1", "--arg", "sk-live-0123456789", "--demo"])
    assert refused.value.message == "--arg number 2: expected KEY=VALUE (a name, '=', a value)"
    with pytest.raises(UsageError) as twice:
        parse(["call", "--tool", "t", "--arg", "a=1", "--arg", "a=2", "--demo"])
    assert twice.value.message == "--arg a is given twice"


# -- exit statuses ---------------------------------------------------------------------


def test_a_tool_error_exits_3_with_the_result_printed_whole(tools: list[str]) -> None:
    done = _call("--json", "--tool", "fails", "--", *tools)
    assert done.returncode == 3, done.stderr
    report = _report(done)
    assert report["ok"] is True  # the request succeeded; the tool says it failed
    assert report["result"]["isError"] is True
    assert report["result"]["content"][0]["text"] == "disk full\nat /var"
    readable = _call("--tool", "fails", "--", *tools)
    assert readable.returncode == 3
    assert "the tool reported an error (isError)" in readable.stdout
    assert "disk full\nat /var\n" in readable.stdout


def test_a_tool_error_with_output_still_exits_3_and_saves_nothing(
    tmp_path: Path, tools: list[str]
) -> None:
    target = tmp_path / "x.png"
    done = _call("--json", "--tool", "fails", "--output", str(target), "--", *tools)
    assert done.returncode == 3, done.stderr
    assert _report(done)["saved"] == []
    assert not target.exists()


def test_a_request_error_exits_1(tools: list[str]) -> None:
    done = _call("--json", "--tool", "refused", "--", *tools)
    assert done.returncode == 1
    assert _report(done)["error"]["kind"] == "request-error"


@pytest.mark.parametrize("target", ["http", "tcp", "spawn"])
def test_a_server_that_cannot_be_reached_exits_6(tmp_path: Path, target: str) -> None:
    url = closed_port_url()
    where = {
        "http": [url],
        "tcp": [url.replace("http://", "tcp://").removesuffix("/mcp")],
        "spawn": ["--", str(tmp_path / "no-such-server")],
    }[target]
    report, done = run_json("call", "--json", "--tool", "t", *where)
    assert done.returncode == 6, (report, done.stderr)
    assert report["ok"] is False
    assert "protocolVersion" not in report


# -- outputSchema ----------------------------------------------------------------------


def test_structured_content_that_matches_the_output_schema_is_said_to(tools: list[str]) -> None:
    done = _call("--json", "--tool", "good", "--", *tools)
    assert done.returncode == 0, done.stderr
    assert _report(done)["output_schema"] == {"status": "matched"}
    readable = _call("--tool", "good", "--", *tools)
    assert "output        structuredContent matches the tool's outputSchema" in readable.stdout


def test_structured_content_that_does_not_match_fails_with_the_result_kept(
    tools: list[str],
) -> None:
    done = _call("--json", "--tool", "bad", "--", *tools)
    assert done.returncode == 1
    report = _report(done)
    assert report["ok"] is False
    assert report["result"]["structuredContent"] == {"n": "seven"}
    assert report["output_schema"]["status"] == "mismatched"
    assert report["output_schema"]["violations"] == [
        {"path": "/n", "keyword": "type", "message": '<value> is not of type "integer"'}
    ]
    assert report["error"]["kind"] == "output-schema-mismatch"
    assert "seven" not in report["error"]["message"]  # the library never shows values
    readable = _call("--tool", "bad", "--", *tools, columns=200)
    assert readable.returncode == 1
    assert "output        structuredContent does not match the tool's outputSchema" in (
        readable.stdout
    )
    assert "failed        output-schema-mismatch in tools/call" in readable.stdout
    assert '/n: <value> is not of type "integer"' in readable.stdout


def test_a_tool_without_an_output_schema_says_nothing_of_one(tools: list[str]) -> None:
    done = _call("--json", "--tool", "args", "--", *tools)
    assert "output_schema" not in _report(done)


# -- --output --------------------------------------------------------------------------


def test_an_image_is_saved_to_a_file(tmp_path: Path, tools: list[str]) -> None:
    target = tmp_path / "picture.png"
    done = _call("--json", "--tool", "image", "--output", str(target), "--", *tools)
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == PNG
    assert _report(done)["saved"] == [
        {"path": str(target), "bytes": len(PNG), "mimeType": "image/png", "from": "content[0]"}
    ]
    readable = _call("--tool", "image", "--output", str(target), "--", *tools)
    assert f"saved         content[0] image/png, {len(PNG)} bytes -> {target}" in readable.stdout
    assert "outputSchema" not in readable.stdout  # the tool declared none: nothing said


def test_media_is_saved_into_a_directory_under_safe_names(tmp_path: Path, tools: list[str]) -> None:
    into = tmp_path / "out"
    into.mkdir()
    done = _call("--json", "--tool", "media", "--output", str(into), "--", *tools)
    assert done.returncode == 0, done.stderr
    saved = _report(done)["saved"]
    names = [Path(entry["path"]).name for entry in saved]
    # The hostile URI's last segment, reduced to safe characters; never a path.
    assert names == ["1-image.png", "2-audio.wav", "3-hidden_.pdf", "4-passwd.bin"]
    assert sorted(p.name for p in into.iterdir()) == sorted(names)
    assert (into / "1-image.png").read_bytes() == PNG
    assert (into / "2-audio.wav").read_bytes() == WAV
    assert (into / "3-hidden_.pdf").read_bytes() == PDF
    assert (into / "4-passwd.bin").read_bytes() == b""
    assert [entry["from"] for entry in saved] == [
        "content[1]",
        "content[2]",
        "content[3].resource",
        "content[4].resource",
    ]
    assert not (tmp_path / "escape").exists()
    # Text is printed, not saved.
    assert "three files" in _call("--tool", "media", "--output", str(into), "--", *tools).stdout


def test_a_resource_blob_is_saved_and_a_planted_symlink_is_not_followed(
    tmp_path: Path, tools: list[str]
) -> None:
    into = tmp_path / "out"
    into.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    (into / "1-report.pdf").symlink_to(victim)
    done = _call(
        "--json",
        "--resource",
        "https://x.example/a/report.pdf",
        "--output",
        str(into),
        "--",
        *tools,
    )
    assert done.returncode == 1
    report = _report(done)
    assert report["error"]["kind"] == "save-failed"
    assert report["error"]["reason"] == "write-failed"
    assert victim.read_bytes() == b"keep"
    (into / "1-report.pdf").unlink()
    done = _call(
        "--json",
        "--resource",
        "https://x.example/a/report.pdf",
        "--output",
        str(into),
        "--",
        *tools,
    )
    assert done.returncode == 0, done.stderr
    assert (into / "1-report.pdf").read_bytes() == PDF


def test_invalid_base64_and_a_file_for_several_items_save_nothing(
    tmp_path: Path, tools: list[str]
) -> None:
    target = tmp_path / "x.png"
    done = _call("--json", "--tool", "broken", "--output", str(target), "--", *tools)
    assert done.returncode == 1
    report = _report(done)
    assert report["error"]["kind"] == "save-failed"
    assert report["error"]["reason"] == "invalid-base64"
    assert report["error"]["message"] == "content[0] is not valid base64: nothing saved"
    assert report["result"]["content"][0]["type"] == "image"  # the result is still there
    assert not target.exists()
    done = _call("--json", "--tool", "media", "--output", str(target), "--", *tools)
    assert done.returncode == 1
    assert _report(done)["error"]["reason"] == "not-one-item"
    assert not target.exists()


def _failed(kind: str, **facts: Any) -> dict[str, Any]:
    return {"ok": False, "target": "x", "error": {"kind": kind, **facts}}


UNREACHABLE = _failed("spawn-failed", reason="spawn-failed")
# The connection lost after the handshake: the server was reached.
LOST = _failed("transport-closed", reason="eof") | {"protocolVersion": "2025-11-25"}


@pytest.mark.parametrize(
    ("servers", "status"),
    [
        ({"a": {"ok": True}, "b": {"ok": True}}, 0),
        ({"a": UNREACHABLE, "b": _failed("request-error")}, 6),
        ({"a": _failed("request-error"), "b": _failed("auth-required"), "c": UNREACHABLE}, 4),
        ({"a": _failed("auth-failed"), "b": UNREACHABLE}, 5),
        ({"a": _failed("config-error"), "b": {"ok": True}}, 1),  # that entry's failure
        ({"a": LOST}, 1),
        ({"a": _failed("timeout", reason="connect-timeout"), "b": {"ok": True}}, 6),
        ({"a": _failed("timeout", method="initialize")}, 1),  # reached, did not answer
    ],
)
def test_the_all_status_is_the_first_of_4_5_6_1_a_failed_server_has(
    servers: dict[str, Any], status: int
) -> None:
    ok = all(entry.get("ok") for entry in servers.values())
    assert exit_status({"ok": ok, "servers": servers}) == status


def test_a_tool_list_never_answered_leaves_the_result_unchecked(tmp_path: Path) -> None:
    argv = server(
        tmp_path,
        "deaf_list",
        """
        initialized(read_initialize())
        for line in sys.stdin:
            request = json.loads(line)
            if request.get("method") == "tools/call":
                send({"jsonrpc": "2.0", "id": request["id"],
                      "result": {"content": [{"type": "text", "text": "done"}]}})
        """,
    )
    only = ("--versions", "2025-11-25", "--timeout", "2")
    done = _call("--json", *only, "--tool", "t", "--", *argv)
    assert done.returncode == 0, done.stderr
    report = _report(done)
    assert report["output_schema"]["status"] == "unchecked"
    assert report["output_schema"]["reason"].startswith(
        "the tool list could not be read (RequestTimeout"
    )
    assert report["timings_ms"]["call"] < 10_000


def test_a_result_of_more_items_than_files_are_written_saves_none(tmp_path: Path) -> None:
    # Empty items cost no bytes: the count is bounded on its own.
    many = [{"type": "image", "data": "", "mimeType": "image/png"}] * (MAX_SAVE_FILES + 1)
    with pytest.raises(SaveError) as info:
        save({"content": many}, "tools/call", f"{tmp_path}/out/")
    assert info.value.reason == "too-many"
    assert not (tmp_path / "out").exists()
