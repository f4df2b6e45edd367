"""``mcpl-host shell`` over several servers, from start flags, and against
server-everything, on a real pseudo-terminal; and what it says when it cannot run."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pexpect

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
    shell = Terminal("--config", str(config))
    try:
        shell.expect(r"\[everything\] \d+ tools")
        shell.send("call everything__ec\t")
        shell.line(" message=from-the-shell")
        shell.expect("Echo: from-the-shell")
        shell.line("read demo://resource/static/document/features.md")
        shell.expect("demo://resource/static/document/features.md")
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


# Asks for a sampled message a moment after the handshake, while nothing runs, and
# logs what it got.
ASKER = """\
import time
request = read_initialize()
initialized(request, capabilities={"logging": {}})
for line in sys.stdin:
    message = json.loads(line)
    if refused_discover(message):
        continue
    if message.get("method") == "notifications/initialized":
        time.sleep(1.2)
        send({"jsonrpc": "2.0", "id": "ask-1", "method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Idle question"}}],
            "maxTokens": 5}})
    elif message.get("id") == "ask-1":
        said = message["result"]["content"]["text"]
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "got " + said}})
    elif "id" in message and "method" in message:
        send({"jsonrpc": "2.0", "id": message["id"],
              "error": {"code": -32601, "message": "Method not found"}})
"""


def test_a_request_that_comes_while_idle_interrupts_the_prompt_and_keeps_the_typing(
    tmp_path: Path,
) -> None:
    shell = Terminal("--", *server(tmp_path, "asker", ASKER))
    try:
        shell.expect(r"\[python\d*(\.\d+)?\] ready: test-server")
        shell.send("too")  # half a command, when the question comes
        shell.expect("Idle question")
        shell.expect(r"reply \(empty: decline\)>")
        shell.line("fine")
        shell.expect(r"log info: got fine")
        shell.line("ls")  # the prompt came back with "too" on it: "tools"
        shell.expect(r"\(no tools\)")
        assert shell.leave() == 0
    finally:
        shell.close()
