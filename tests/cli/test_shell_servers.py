"""``mcpl-host shell`` over several servers, from start flags, and against
server-everything, on a real pseudo-terminal; and what it says when it cannot run."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pexpect

from mcpl_host.cli.shell.screen import BURST, INTERVAL
from tests.interop.servers import everything

from .helpers import run, server
from .shellterm import WAIT, Terminal

ROOT = Path(__file__).resolve().parents[2]

# Exits when a tool is called (no answer); at the end of its stdin, says so in a file.
FLAKY = """\
marker = sys.argv[1]
request = read_initialize()
initialized(request, capabilities={"tools": {}})
for line in sys.stdin:
    message = json.loads(line)
    if refused_discover(message) or "id" not in message:
        continue
    if message.get("method") == "tools/list":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [
            {"name": "crash", "inputSchema": {"type": "object"}}]}})
    elif message.get("method") == "tools/call":
        sys.exit(3)
    else:
        send({"jsonrpc": "2.0", "id": message["id"],
              "error": {"code": -32601, "message": "Method not found"}})
with open(marker, "a") as file:
    file.write("stdin closed\\n")
"""


def test_requests_are_answered_from_the_start_flags(tmp_path: Path) -> None:
    shell = Terminal(
        "--sampling-reply",
        "from the flag",
        "--elicitation-reply",
        '{"name": "Flagged"}',
        "--root",
        "/srv/flagged",
        "--demo",
    )
    try:
        shell.expect(r"\[demo\] 8 tools")
        shell.line("call demo__ask what=sample")
        shell.expect(r"\[demo\] sampling request answered from --sampling-reply")
        shell.expect("model mcpl-host-shell said: from the flag")
        shell.line("call demo__ask what=elicit")
        shell.expect("answered from --elicitation-reply: accept")
        shell.expect("hello, Flagged")
        shell.line("call demo__ask what=roots")
        shell.expect("roots: file:///srv/flagged")
        # SIGTERM: the servers closed as by exit, the status 128+15.
        shell.child.kill(signal.SIGTERM)
        shell.child.expect(pexpect.EOF, timeout=WAIT)
        shell.child.close()
        assert shell.child.exitstatus == 143
        assert "[demo] closed" in str(shell.child.before)
    finally:
        shell.close()


def test_several_servers_one_missing_one_that_exits_and_comes_back(tmp_path: Path) -> None:
    marker = tmp_path / "flaky.log"
    flaky = server(tmp_path, "flaky", FLAKY)
    config = tmp_path / "servers.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {"command": sys.executable, "args": ["-m", "mcpl_host.demo"]},
                    "missing": {"command": str(tmp_path / "no-such-program")},
                    "flaky": {"command": flaky[0], "args": [flaky[1], str(marker)]},
                }
            }
        )
    )
    shell = Terminal("--config", str(config), cwd=str(ROOT))
    try:
        shell.expect_all(
            r"\[missing\] failed: .*no-such-program.*\(not retried\)",
            r"\[flaky\] 1 tool",
            r"\[demo\] 8 tools",
        )
        # The missing one costs the others nothing.
        shell.line("call demo__add a=20 b=22")
        shell.expect(r'\{"sum": ?42\}')
        shell.line("call flaky__crash")
        shell.expect(r"\[flaky\] reconnecting: ")
        shell.expect(r"\[flaky\] ready: test-server")
        shell.line("servers")
        shell.expect(r"flaky +ready")
        shell.line("call demo__add a=1 b=2")
        shell.expect(r'\{"sum": ?3\}')
        assert shell.leave() == 0
        # exit closed the servers: the second flaky process saw its stdin end.
        assert marker.read_text() == "stdin closed\n"
        # Each state said once, in the shell's words: not again as the library's log line.
        assert "server state" not in shell.seen()
        assert "[warning" not in shell.seen()
    finally:
        shell.close()


def test_server_everything(tmp_path: Path) -> None:
    target = everything()
    config = tmp_path / "everything.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "everything": {"command": target.argv[0], "args": list(target.argv[1:])}
                }
            }
        )
    )
    # The server asks for roots now and then: answered from --root, never by a question
    # that would take the next typed line as its answer.
    shell = Terminal("--config", str(config), "--root", str(tmp_path))
    try:
        shell.expect(r"\[everything\] \d+ tools")
        shell.send("call everything__ec\t")
        shell.line(" message=from-the-shell")
        shell.expect("Echo: from-the-shell")
        shell.line("read demo://resource/static/document/features.md")
        # The resource's own text, not the URI (which the typed line echoes at once):
        # the read is over before `exit` is typed.
        shell.expect("Everything Server - Features")
        assert shell.leave() == 0
    finally:
        shell.close()


def test_without_prompt_toolkit_it_says_what_to_install(tmp_path: Path) -> None:
    # A prompt_toolkit that cannot be imported, first on the path.
    fake = tmp_path / "prompt_toolkit"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('not installed')\n")
    done = run("shell", "--demo", env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode == 2
    assert "pip install 'mcpl-host[shell]'" in done.stderr
    assert done.stdout == ""


def test_without_a_terminal_it_says_so() -> None:
    done = run("shell", "--demo")
    assert done.returncode == 2
    assert "the shell needs a terminal" in done.stderr


# A moment after the handshake, while nothing runs, asks two sampling questions in one
# write (they arrive together, as many requests at once do); then logs every answer it
# got: "answer ID ok TEXT" or "answer ID error CODE".
ASKER = """\
import time
request = read_initialize()
initialized(request, capabilities={"logging": {}})
for line in sys.stdin:
    message = json.loads(line)
    if refused_discover(message):
        continue
    if message.get("method") == "notifications/initialized":
        time.sleep(0.8)
        asks = [{"jsonrpc": "2.0", "id": f"ask-{n}", "method": "sampling/createMessage",
                 "params": {"messages": [{"role": "user", "content": {
                     "type": "text", "text": f"Idle question {n}"}}], "maxTokens": 5}}
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


def test_requests_that_come_together_while_idle_interrupt_the_prompt_and_keep_the_typing(
    tmp_path: Path,
) -> None:
    # The second request asks the prompt to end while it is ending already: nothing
    # may fail (once, its handler raised and the server got -32603).
    shell = Terminal("--", *server(tmp_path, "asker", ASKER))
    try:
        shell.expect(r"\[python\d*(\.\d+)?\] ready: test-server")
        shell.send("too")  # half a command, when the questions come
        for _ in range(2):
            shell.expect(r"user: Idle question \d")
            shell.expect(r"reply \(empty: decline\)>")
            shell.line("fine")
        shell.expect_all(r"answer ask-1 \S+ \S+", r"answer ask-2 \S+ \S+")
        seen = shell.seen()
        assert "answer ask-1 ok fine" in seen
        assert "answer ask-2 ok fine" in seen
        assert "handler failed" not in seen
        shell.line("ls")  # the prompt came back with "too" on it: "tools"
        shell.expect(r"\(no tools\)")
        assert shell.leave() == 0
    finally:
        shell.close()


# After the handshake, floods: 3000 log messages in one write, then one that says it
# is done.
FLOOD = """\
request = read_initialize()
initialized(request, capabilities={"logging": {}})
for line in sys.stdin:
    message = json.loads(line)
    if refused_discover(message):
        continue
    if message.get("method") == "notifications/initialized":
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
    # DESIGN 3.12: log lines bounded per kind and interval. A burst is shown, the rest
    # counted; at the interval's end, the count and the last line ("flood over").
    shell = Terminal("--", *server(tmp_path, "flood", FLOOD))
    try:
        shell.expect(rf"\d+ more info log lines not shown in {INTERVAL:g} s")
        shell.expect("log info: flood over")
        shown = len(re.findall(r"log info: flood \d+", shell.seen()))
        # One burst; a few more if reading the flood took longer than an interval.
        assert BURST <= shown < 5 * BURST
        assert shell.leave() == 0
    finally:
        shell.close()


# Says it started (in the file it is given), then exits: fails every attempt alike.
DIES = """\
with open(sys.argv[1], "a") as file:
    file.write("started\\n")
sys.exit(1)
"""


def test_a_server_that_keeps_failing_for_the_same_reason_is_said_once(tmp_path: Path) -> None:
    marker = tmp_path / "dies.log"
    shell = Terminal("--", *server(tmp_path, "dies", DIES), str(marker))
    try:
        shell.expect(r"failed: .*\(will retry\)")
        deadline = time.monotonic() + WAIT
        while marker.read_text().count("started") < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        shell.line("help")
        shell.expect("TAB completes")
        seen = shell.seen()
        assert len(re.findall(r"\] failed: ", seen)) == 1
        assert len(re.findall(r"\] connecting", seen)) == 1
        assert shell.leave() == 0
    finally:
        shell.close()


def test_an_unknown_protocol_revision_is_a_usage_error() -> None:
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


def test_a_history_file_that_cannot_be_written_is_a_usage_error(tmp_path: Path) -> None:
    shell = Terminal("--history", str(tmp_path / "no-such-dir" / "history"), "--demo")
    try:
        shell.child.expect(pexpect.EOF, timeout=WAIT)
        output = str(shell.child.before)
        shell.child.close()
        assert "--history" in output
        assert "no-such-dir" in output
        assert shell.child.exitstatus == 2
    finally:
        shell.close()


def test_a_terminal_that_hangs_up_ends_the_shell_with_129(tmp_path: Path) -> None:
    # A closed window, a dropped ssh: the kernel sends SIGHUP and every write fails
    # with EIO. The servers are closed, nothing is said (there is nowhere to), 129.
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
        assert errors.read_text() == ""
        assert status == 129
    finally:
        if status is None:
            os.kill(child.pid, 9)
            os.waitpid(child.pid, 0)
