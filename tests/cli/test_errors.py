"""Each way a connect fails: its kind in the JSON report and its exit status."""

from __future__ import annotations

import time
from pathlib import Path

from .helpers import run, run_json, server

ERROR_FIELDS = {"kind", "message", "code", "data"}


def test_a_server_that_exits_at_once_is_transport_closed(tmp_path: Path) -> None:
    argv = server(tmp_path, "quits", 'print("no config found", file=sys.stderr)\n')
    report, done = run_json("connect", "--json", "--", *argv)
    assert done.returncode == 6  # the process ended before answering: unreachable
    assert report["ok"] is False
    error = report["error"]
    assert set(error) >= ERROR_FIELDS
    assert error["kind"] == "transport-closed"
    assert error["reason"] == "eof"
    assert error["code"] is None
    assert report["stderr"] == ["no config found"]  # why it quit, kept for the report


def test_the_stderr_tail_in_the_report_is_escaped_and_cut(tmp_path: Path) -> None:
    argv = server(
        tmp_path,
        "noisy",
        r"""
        err = sys.stderr.buffer
        err.write("\x1b[31mred\x1b[0m\u2028next\ttab\x7f\n".encode())
        # 249 + 2 (a surrogate pair) UTF-16 units: past the 250 left before the cut mark
        err.write(("a" * 249 + "\U0001F600" + "b" * 800 + "\n").encode())
        err.flush()
        sys.exit(3)
        """,
    )
    report, done = run_json("connect", "--json", "--", *argv)
    assert done.returncode == 6
    assert report["error"]["kind"] == "transport-closed"
    # Control, format and separator characters as \uXXXX text; cut at 256 UTF-16 units,
    # the cut mark included, never inside the surrogate pair.
    assert report["stderr"] == [
        r"\u001b[31mred\u001b[0m\u2028next\u0009tab\u007f",
        "a" * 249 + "…[cut]",
    ]


def test_an_initialize_error_carries_the_servers_code_and_data(tmp_path: Path) -> None:
    argv = server(
        tmp_path,
        "refuses",
        """
        request = read_initialize()
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32000, "message": "license expired", "data": {"until": 1}}})
        sys.stdin.read()
        """,
    )
    report, done = run_json("connect", "--json", "--", *argv)
    assert done.returncode == 1
    error = report["error"]
    assert error["kind"] == "initialize-error"
    assert error["code"] == -32000
    assert error["data"] == {"until": 1}
    assert "license expired" in error["message"]


def test_a_version_outside_the_allowlist_is_rejected(tmp_path: Path) -> None:
    argv = server(
        tmp_path,
        "old",
        """
        initialized(read_initialize(), version="2024-11-05")
        sys.stdin.read()
        """,
    )
    report, done = run_json("connect", "--json", "--versions", "2025-06-18,2025-11-25", "--", *argv)
    assert done.returncode == 1
    error = report["error"]
    assert error["kind"] == "version-rejected"
    assert error["offered"] == "2025-11-25"
    assert error["answered"] == "2024-11-05"
    assert error["allowed"] == ["2025-11-25", "2025-06-18"]


def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    argv = server(tmp_path, "silent", "sys.stdin.read()\n")
    started = time.monotonic()
    report, done = run_json("connect", "--json", "--timeout", "0.3", "--", *argv)
    assert done.returncode == 1
    assert report["error"]["kind"] == "timeout"
    # The opening exchange's first request is the one still waiting: server/discover.
    assert report["error"]["method"] == "server/discover"
    assert time.monotonic() - started < 10
    only_handshake = ("--versions", "2025-11-25")
    report, done = run_json("connect", "--json", "--timeout", "0.3", *only_handshake, "--", *argv)
    assert report["error"]["kind"] == "timeout"
    assert report["error"]["method"] == "initialize"


def test_a_missing_program_is_spawn_failed(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-server")
    report, done = run_json("connect", "--json", "--", missing, "--flag")
    assert done.returncode == 6
    assert report["error"]["kind"] == "spawn-failed"
    assert "no-such-server" in report["error"]["message"]


def test_a_list_refused_by_the_server_is_a_request_error(tmp_path: Path) -> None:
    argv = server(
        tmp_path,
        "no_list",
        """
        for line in sys.stdin:
            request = json.loads(line)
            if request.get("method") == "initialize":
                initialized(request, capabilities={"prompts": {}})
            elif "id" in request:
                send({"jsonrpc": "2.0", "id": request["id"],
                      "error": {"code": -32603, "message": "database down"}})
        """,
    )
    report, done = run_json("connect", "--json", "--", *argv)
    assert done.returncode == 1
    assert report["protocolVersion"] == "2025-11-25"  # what was known before it failed
    assert report["error"]["kind"] == "request-error"
    assert report["error"]["code"] == -32603
    assert report["error"]["method"] == "prompts/list"


NO_CODE = """
for line in sys.stdin:
    request = json.loads(line)
    if request.get("method") == "initialize":
        initialized(request, capabilities={"prompts": {}})
    elif "id" in request:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"message": "database down"}})
"""


def test_an_error_without_a_code_is_reported_without_one(tmp_path: Path) -> None:
    argv = server(tmp_path, "no_code", NO_CODE)
    report, done = run_json("connect", "--json", "--", *argv)
    assert done.returncode == 1
    error = report["error"]
    assert error["kind"] == "request-error"
    assert error["code"] is None  # absent on the wire: not an invented -32603
    assert error["message"] == "database down"
    readable = run("connect", "--", *argv)
    assert readable.returncode == 1
    assert "-32603" not in readable.stdout
    assert "request-error (no code) in prompts/list" in readable.stdout


def test_an_initialize_error_without_a_code_is_reported_without_one(tmp_path: Path) -> None:
    argv = server(
        tmp_path,
        "refuses_no_code",
        """
        request = read_initialize()
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"message": "go away"}})
        sys.stdin.read()
        """,
    )
    report, _done = run_json("connect", "--json", "--", *argv)
    assert report["error"]["kind"] == "initialize-error"
    assert report["error"]["code"] is None
    assert "initialize-error (no code)" in run("connect", "--", *argv).stdout


def test_a_socket_nobody_listens_on(tmp_path: Path) -> None:
    report, done = run_json("connect", "--json", f"unix:{tmp_path / 'none.sock'}")
    assert done.returncode == 6
    assert report["error"]["kind"] == "transport-closed"
    assert report["error"]["reason"] == "connect-failed"


def test_the_readable_report_of_a_failure_has_the_same_exit_status(tmp_path: Path) -> None:
    argv = server(tmp_path, "quits", "")
    done = run("connect", "--", *argv)
    assert done.returncode == 6
    assert "transport-closed" in done.stdout
    assert done.stdout.count("{") == 0  # not JSON
