"""``mcpl-host shell --demo`` on a real pseudo-terminal: one session for the module,
each test one exchange at its prompt (docs/cli.md, "mcpl-host shell")."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpl_host.cli.shell.commands import HELP

from .shellterm import Terminal

# The module's --timeout: short, for the tests of what it bounds.
TIMEOUT = 3


@pytest.fixture(scope="module")
def shell() -> Iterator[Terminal]:
    terminal = Terminal("--timeout", str(TIMEOUT), "--demo")
    try:
        # Read once the demo is up: its catalogue is what completion offers.
        terminal.expect(r"\[demo\] 8 tools, 1 resource, 1 resource template, 1 prompt")
        yield terminal
    finally:
        terminal.close()


def test_tab_completes_a_tool_name_and_the_call_shows_its_result(shell: Terminal) -> None:
    # "demo__ad" is no tool: the call works only if TAB made it demo__add.
    shell.send("call demo__ad\t")
    shell.line(" a=2 b=40")
    shell.expect("structured: ")
    shell.expect(r'\{"sum": ?42\}')


def test_tab_completes_an_argument_name(shell: Terminal) -> None:
    # "t" then TAB: the log tool's "text=" (level is given), so the value follows at
    # once; without the completion "tcompleted" would be no KEY=VALUE at all.
    shell.send("call demo__log level=info t\t")
    shell.line("completed")
    shell.expect(r"\[demo\] log info demo: completed")


def test_a_resource_is_read(shell: Terminal) -> None:
    shell.line("read demo://readme")
    shell.expect(r"demo://readme \[text/markdown\]")
    shell.expect("# mcpl-host demo server")


def test_a_prompt_is_got_with_its_arguments(shell: Terminal) -> None:
    shell.line("prompt demo__greet name=Ada")
    shell.expect("Please greet Ada.")


def test_a_log_message_and_progress_are_shown_as_they_come(shell: Terminal) -> None:
    shell.line("call demo__log level=warning text=watch-this")
    shell.expect(r"\[demo\] log warning demo: watch-this")
    shell.line("call demo__countdown steps=2 delay=0.05")
    shell.expect(r"\[demo\] progress 1/2: 1 to go")
    shell.expect(r"\[demo\] progress 2/2: 0 to go")
    shell.expect("liftoff after 2 steps")


def test_a_sampling_request_is_answered_at_the_prompt(shell: Terminal) -> None:
    shell.line("call demo__ask what=sample")
    shell.expect(r"\[demo\] sampling request \(maxTokens 50\)")
    shell.expect("user: Say hello")
    shell.expect(r"reply \(empty: decline\)>")
    shell.line("hello from the prompt")
    # The server's own account of what came back.
    shell.expect("model mcpl-host-shell said: hello from the prompt")


def test_an_elicitation_is_filled_in_field_by_field(shell: Terminal) -> None:
    shell.line("call demo__ask what=elicit")
    shell.expect("elicitation request: What is your name?")
    shell.expect(r"\[a/d/c\] \(a\)>")
    shell.line("a")
    shell.expect(r"name \(string, required\)>")
    shell.line("Grace")
    shell.expect("hello, Grace")
    shell.line("call demo__ask what=elicit")
    shell.expect(r"\[a/d/c\] \(a\)>")
    shell.line("d")
    shell.expect("elicitation decline")


def test_a_roots_request_is_answered_at_the_prompt(shell: Terminal) -> None:
    shell.line("call demo__ask what=roots")
    shell.expect("roots request")
    shell.expect(r"space-separated \(empty: none\)>")
    shell.line("file:///srv/project")
    shell.expect("roots: file:///srv/project")


def test_trace_on_shows_the_wire_lines_and_off_stops_them(shell: Terminal) -> None:
    shell.line("trace on")
    shell.line("call demo__echo text=traced")
    shell.expect(r'trace \[demo\] \+[0-9.]+s -> \{"jsonrpc":"2.0","id":\d+,"method":"tools/call"')
    shell.expect(r'trace \[demo\] \+[0-9.]+s <- \{"jsonrpc":"2.0","id":\d+,"result":')
    shell.line("trace off")
    shell.expect("trace off")
    shell.line("call demo__add a=3 b=4")
    shell.expect(r'\{"sum": ?7\}')
    after = shell.seen().rsplit("trace off", 1)[-1]
    assert "trace [demo]" not in after


def test_ctrl_c_cancels_the_running_call_not_the_shell(shell: Terminal) -> None:
    # countdown stops when told notifications/cancelled; the next call is answered
    # only then (the demo does one thing at a time).
    shell.line("call demo__countdown steps=100 delay=0.2")
    # The line accepted (the prompt left, the terminal back in its cooked mode, where
    # Ctrl-C is a signal): the countdown is under way.
    shell.expect(r"call demo__countdown steps=100 delay=0.2")
    shell.expect(r"\x1b\[\?2004l")  # bracketed paste off: the prompt has ended
    time.sleep(0.5)
    shell.child.sendintr()
    shell.expect("cancelled")
    shell.line("call demo__add a=1 b=1")
    shell.expect(r'\{"sum": ?2\}', timeout=5)
    assert "liftoff after 100" not in shell.seen()


def test_a_tool_error_is_said_once(shell: Terminal) -> None:
    # The result opens with saying so; the shell does not say it again after.
    shell.line("call demo__countdown steps=1000")
    shell.expect("steps: an integer from 0 to 100")
    shell.line("help")
    shell.expect("TAB completes")
    after = shell.seen().rsplit("call demo__countdown steps=1000", 1)[-1]
    assert after.count("the tool reported an error (isError)") == 1


def test_the_time_spent_answering_a_question_is_not_counted_against_the_timeout(
    shell: Terminal,
) -> None:
    # Reading the request and typing take longer than --timeout: the call that made
    # the server ask is not failed under the person's fingers.
    shell.line("call demo__ask what=sample")
    shell.expect(r"reply \(empty: decline\)>")
    time.sleep(TIMEOUT + 0.5)
    shell.line("a considered answer")
    shell.expect(r"model mcpl-host-shell said: a considered answer|error \(timeout\)")
    assert "error (timeout)" not in shell.seen()


def test_a_call_that_takes_longer_than_the_timeout_is_cancelled(shell: Terminal) -> None:
    shell.line("call demo__countdown steps=100 delay=0.1")
    shell.expect(rf"error \(timeout\): no answer within {TIMEOUT} s")
    # The demo does one thing at a time: this is answered once the countdown stopped.
    shell.line("call demo__add a=1 b=1")
    shell.expect(r'\{"sum": ?2\}', timeout=5)
    assert "liftoff after 100" not in shell.seen()


def test_help_and_servers(shell: Terminal) -> None:
    shell.line("help")
    shell.expect(r"call TOOL \[KEY=VALUE \.\.\.\]")
    shell.line("servers")
    shell.expect(r"demo +ready +mcpl-host-demo 1\.0\.0 +protocol 2025-11-25")


def test_exit_closes_the_server_and_ends_with_status_0(shell: Terminal) -> None:
    assert shell.leave() == 0
    assert "[demo] closed" in shell.seen()


def test_the_docs_list_every_command() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    section = page.split("## `mcpl-host shell`", 1)[1].split("\n## ", 1)[0]
    for synopsis, what in HELP.values():
        assert re.search(rf"\n{re.escape(synopsis)} +{re.escape(what)}\n", section), synopsis
