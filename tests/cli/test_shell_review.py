"""Review of ``mcpl-host shell`` (issue 22, item 4): defects shown on a real
pseudo-terminal against scripted stdio servers. Each test fails on 78478bc."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pexpect

from .helpers import server
from .shellterm import WAIT, Terminal

# After the handshake, while the prompt is idle, asks two sampling questions at once
# (one write: they arrive together, as many requests at once do); then reports every
# answer it got as a log message: "answer ID ok TEXT" or "answer ID error CODE".
TWO_AT_ONCE = """\
import time
request = read_initialize()
initialized(request, capabilities={"logging": {}})
for line in sys.stdin:
    message = json.loads(line)
    if refused_discover(message):
        continue
    if message.get("method") == "notifications/initialized":
        time.sleep(1.2)
        asks = [{"jsonrpc": "2.0", "id": f"ask-{n}", "method": "sampling/createMessage",
                 "params": {"messages": [{"role": "user", "content": {
                     "type": "text", "text": f"Question {n}"}}], "maxTokens": 5}}
                for n in (1, 2)]
        sys.stdout.write("".join(json.dumps(a) + "\\n" for a in asks))
        sys.stdout.flush()
    elif str(message.get("id", "")).startswith("ask-") and "method" not in message:
        if "result" in message:
            said = "ok " + message["result"]["content"]["text"]
        else:
            said = "error " + str(message["error"]["code"])
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": f"answer {message['id']} {said}"}})
    elif "id" in message and "method" in message:
        send({"jsonrpc": "2.0", "id": message["id"],
              "error": {"code": -32601, "message": "Method not found"}})
"""


def test_two_requests_that_come_together_while_idle_are_both_asked_and_answered(
    tmp_path: Path,
) -> None:
    # The first request ends the idle prompt (app.exit); the second comes before the
    # prompt has finished ending and calls app.exit again, which raises "Return value
    # already set": its handler fails, the server gets -32603, and yet the question
    # stays queued and is asked later, its answer going nowhere ("sampling answered").
    shell = Terminal("--", *server(tmp_path, "two", TWO_AT_ONCE))
    try:
        shell.expect(r"\] ready: test-server")
        for _ in range(2):
            shell.expect(r"user: Question \d")
            shell.expect(r"reply \(empty: decline\)>")
            shell.line("fine")
        shell.expect_all(r"answer ask-1 \S+ \S+", r"answer ask-2 \S+ \S+")
        seen = shell.seen()
        assert "answer ask-1 ok fine" in seen
        assert "answer ask-2 ok fine" in seen
        assert "handler failed" not in seen
        assert shell.leave() == 0
    finally:
        shell.close()


# While idle, asks an elicitation whose field description and enum choices carry
# terminal control sequences: an OSC that sets the window title, wrapped in the
# \\x01...\\x02 that prompt_toolkit's ANSI() passes to the terminal as is, and a bell.
EVIL_ELICITATION = """\
import time
EVIL = "\\x01\\x1b]0;PWNED-TITLE\\x07\\x02"
request = read_initialize()
initialized(request, capabilities={})
for line in sys.stdin:
    message = json.loads(line)
    if refused_discover(message):
        continue
    if message.get("method") == "notifications/initialized":
        time.sleep(1.2)
        send({"jsonrpc": "2.0", "id": "e-1", "method": "elicitation/create", "params": {
            "message": "Fill this in",
            "requestedSchema": {"type": "object", "properties": {
                "note": {"type": "string", "description": "a note " + EVIL},
                "pick": {"type": "string", "enum": ["one" + EVIL, "two"]}},
                "required": ["note", "pick"]}}})
    elif "id" in message and "method" in message:
        send({"jsonrpc": "2.0", "id": message["id"],
              "error": {"code": -32601, "message": "Method not found"}})
"""


def test_an_elicitations_field_description_and_choices_reach_the_terminal_escaped(
    tmp_path: Path,
) -> None:
    # questions.py's _describe() (a field's description, title, type and enum values)
    # and _convert()'s "one of: ..." are put in the question's prompt unescaped, and
    # that prompt is ANSI(): the server writes raw escape sequences to the terminal.
    shell = Terminal("--", *server(tmp_path, "evil", EVIL_ELICITATION))
    try:
        shell.expect(r"\[a/d/c\] \(a\)>")
        shell.line("a")
        shell.expect(r"\(a note .*required\)>")
        shell.line("hello")
        shell.expect(r"\(one of .*required\)>")
        shell.line("three")  # not a choice: the error lists the choices
        shell.expect(r"\(one of .*required\)>")
        shell.line("two")
        shell.expect(r"elicitation answered")
        raw = "".join(shell._log)
        assert "\x1b]0;PWNED-TITLE" not in raw
        assert "\x07" not in raw
        assert shell.leave() == 0
    finally:
        shell.close()


# After the handshake, floods: 3000 log messages, then one that says it is done.
FLOOD = """\
import time
request = read_initialize()
initialized(request, capabilities={"logging": {}})
for line in sys.stdin:
    message = json.loads(line)
    if refused_discover(message):
        continue
    if message.get("method") == "notifications/initialized":
        time.sleep(0.5)
        lines = [json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "data": f"flood {n}"}})
                 for n in range(3000)]
        sys.stdout.write("\\n".join(lines) + "\\n")
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "flood over"}})
    elif "id" in message and "method" in message:
        send({"jsonrpc": "2.0", "id": message["id"],
              "error": {"code": -32601, "message": "Method not found"}})
"""


def test_a_flood_of_log_messages_costs_a_bounded_number_of_lines(tmp_path: Path) -> None:
    # DESIGN 3.12 bounds "log lines per kind and interval" (the library's own
    # PeerLogBudget); the shell prints every notification a server sends, so one
    # server makes the terminal scroll without end. A bound (a burst per server per
    # interval, then "N more not shown") keeps the screen usable.
    shell = Terminal("--", *server(tmp_path, "flood", FLOOD))
    try:
        shell.expect("flood over", timeout=60)
        shown = len(re.findall(r"log info: flood \d+", shell.seen()))
        assert shown < 500, f"{shown} of 3000 log lines printed"
        assert shell.leave() == 0
    finally:
        shell.close()


def test_a_server_that_keeps_failing_for_the_same_reason_is_said_once(tmp_path: Path) -> None:
    # docs/cli.md: "the same reason twice is said once". Each retry goes connecting ->
    # failed, so watch.py's (state, error) memory never matches: two lines per attempt,
    # for as long as the shell runs.
    shell = Terminal("--", *server(tmp_path, "dies", "sys.exit(1)\n"))
    try:
        shell.expect(r"failed: .*\(will retry\)")
        time.sleep(6)
        shell.line("help")
        shell.expect("TAB completes")
        assert len(re.findall(r"\] failed: ", shell.seen())) == 1
        assert shell.leave() == 0
    finally:
        shell.close()


def test_an_unknown_protocol_revision_is_a_usage_error_not_a_traceback() -> None:
    # `connect --versions 1999-01-01` exits 2 with a message; the shell skips that
    # check (cli/__init__.py returns into shell.main before validate_allowlist) and
    # the manager's ConfigurationError ends it with a traceback and status 1.
    shell = Terminal("--versions", "1999-01-01", "--demo")
    try:
        shell.child.expect(pexpect.EOF, timeout=WAIT)
        output = str(shell.child.before)
        shell.child.close()
        assert "Traceback" not in output
        assert "unknown protocol revision" in output
        assert shell.child.exitstatus == 2
    finally:
        shell.close()


def test_a_tool_error_is_said_once() -> None:
    # render_result already opens an isError result with "the tool reported an error
    # (isError)"; commands._do_call says it again after the result.
    shell = Terminal("--demo")
    try:
        shell.expect(r"\[demo\] 8 tools")
        shell.line("call demo__countdown steps=1000")
        shell.expect("steps: an integer from 0 to 100")
        shell.line("help")
        shell.expect("TAB completes")
        assert shell.seen().count("the tool reported an error (isError)") == 1
        assert shell.leave() == 0
    finally:
        shell.close()


def test_a_terminal_that_hangs_up_ends_the_shell_with_129(tmp_path: Path) -> None:
    # docs/cli.md: "SIGTERM and SIGHUP close them too and leave with 128+N". When the
    # terminal itself goes away (a closed window, a dropped ssh), the kernel sends
    # SIGHUP and every write then fails with EIO: prompt_toolkit's redraw raises
    # OSError out of prompt_async, the shell ends with a traceback and status 1.
    errors = tmp_path / "stderr.txt"
    child = pexpect.spawn(
        "/bin/sh",
        ["-c", f'exec "{sys.executable}" -m mcpl_host.cli shell --demo 2>"{errors}"'],
        env={**os.environ, "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm"},
        encoding="utf-8",
        timeout=WAIT,
        dimensions=(50, 200),
    )
    status: int | None = None
    try:
        child.expect(r"\[demo\] 8 tools")
        os.close(child.child_fd)  # the terminal is gone
        child.closed = True
        deadline = time.monotonic() + WAIT
        while status is None and time.monotonic() < deadline:
            pid, raw = os.waitpid(child.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(raw)
            else:
                time.sleep(0.1)
        assert "Traceback" not in errors.read_text()
        assert status == 129
    finally:
        if status is None:
            os.kill(child.pid, 9)
            os.waitpid(child.pid, 0)


def test_a_history_file_that_cannot_be_written_is_said_once_not_per_line(
    tmp_path: Path,
) -> None:
    # --history FILE in a directory that does not exist: each Enter raises in
    # FileHistory.store_string, and prompt_toolkit prints "Unhandled exception in
    # event loop", the traceback and "Press ENTER to continue..." over the session.
    # Either refused at start (status 2) or said once and the commands still run.
    shell = Terminal("--history", str(tmp_path / "no-such-dir" / "history"), "--demo")
    try:
        if shell.child.expect([r"\[demo\] 8 tools", pexpect.EOF], timeout=WAIT) == 1:
            shell.child.close()
            assert shell.child.exitstatus == 2
            return
        shell._log.append(str(shell.child.before) + str(shell.child.after))
        shell.line("help")
        shell.expect("TAB completes", timeout=5)
        seen = shell.seen()
        assert "Unhandled exception" not in seen
        assert "store_string" not in seen
        assert shell.leave() == 0
    finally:
        shell.close()


def test_the_time_spent_answering_a_question_does_not_time_the_call_out() -> None:
    # The call that made the server ask runs under the request timeout (--timeout,
    # default 30 s) while the person reads and types: filling in a form of a dozen
    # fields (server-everything's trigger-elicitation-request) takes longer than that.
    # The call fails "no answer to 'tools/call' within N s", the question is withdrawn
    # under the person's fingers, and what they typed runs as a command.
    shell = Terminal("--timeout", "3", "--demo")
    try:
        shell.expect(r"\[demo\] 8 tools")
        shell.line("call demo__ask what=sample")
        shell.expect(r"reply \(empty: decline\)>")
        time.sleep(4.5)  # reading the request, thinking, typing
        shell.line("a considered answer")
        shell.expect(r"model mcpl-host-shell said: a considered answer|error \(timeout\)")
        assert "error (timeout)" not in shell.seen()
        assert shell.leave() == 0
    finally:
        shell.close()
