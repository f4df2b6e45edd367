"""The shell's parts that need no terminal: reading a command's arguments, an
elicitation's form (MCP 2025-11-25's restricted schema: types, choices with titles,
multi-select, bounds, defaults) and how it is shown, completion from a catalogue, the
bound on waiting requests and on a server's lines, the session's loop without a
terminal (a question during a command, the catalogue's re-reading)."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from mcpl_host import RequestError, ServerRequest
from mcpl_host.cli.args import Options, ShellFlags
from mcpl_host.cli.shell.commands import parse_arguments, split
from mcpl_host.cli.shell.complete import ShellCompleter
from mcpl_host.cli.shell.data import Catalogue, Data, Entry
from mcpl_host.cli.shell.questions import MAX_WAITING, Question, Questions, _convert, _describe
from mcpl_host.cli.shell.screen import Screen
from mcpl_host.cli.shell.session import _Session
from mcpl_host.cli.shell.watch import Watch
from mcpl_host.client.hooks import HookContext
from mcpl_host.client.types import CreateMessageParams, ElicitParams, ElicitResult
from mcpl_host.driver.responder import Responder
from mcpl_host.events import ServerLog
from mcpl_host.manager import ServerStatus
from mcpl_host.protocol.errors import McplHostError
from mcpl_host.protocol.redact import Redactor


def test_arguments_are_key_value_pairs_or_one_json_object() -> None:
    line = split('call demo__echo text="two words" n=5 flag=true raw=five')
    assert (line.command, line.name) == ("call", "demo__echo")
    assert parse_arguments(line.rest, typed=True) == {
        "text": "two words",
        "n": 5,
        "flag": True,
        "raw": "five",
    }
    assert parse_arguments('{"a": 2, "b": [1]}', typed=True) == {"a": 2, "b": [1]}
    # A prompt's arguments are strings, as written.
    assert parse_arguments("n=5", typed=False) == {"n": "5"}


def test_bad_arguments_are_said_without_repeating_them() -> None:
    with pytest.raises(ValueError, match="not JSON") as bad_json:
        parse_arguments('{"token": "sekrit"', typed=True)
    assert "sekrit" not in str(bad_json.value)
    with pytest.raises(ValueError, match="KEY=VALUE") as no_eq:
        parse_arguments("sekrit", typed=True)
    assert "sekrit" not in str(no_eq.value)
    with pytest.raises(ValueError, match="No closing quotation"):
        parse_arguments('text="open', typed=True)


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("Ada", {"type": "string"}, "Ada"),
        ("42", {"type": "integer"}, 42),
        ("4.0", {"type": "integer"}, 4),
        ("2.5", {"type": "number"}, 2.5),
        ("yes", {"type": "boolean"}, True),
        ("N", {"type": "boolean"}, False),
        ("b", {"type": "string", "enum": ["a", "b"]}, "b"),
    ],
)
def test_an_elicitation_field_takes_its_schemas_type(
    text: str, schema: dict[str, Any], value: Any
) -> None:
    assert _convert(text, schema) == value
    assert type(_convert(text, schema)) is type(value)


@pytest.mark.parametrize(
    ("text", "schema", "said"),
    [
        ("4.5", {"type": "integer"}, "an integer"),
        ("many", {"type": "number"}, "a number"),
        ("true", {"type": "number"}, "a number"),
        ("maybe", {"type": "boolean"}, "yes or no"),
        ("c", {"enum": ["a", "b"]}, "one of: a, b"),
    ],
)
def test_a_value_that_does_not_fit_is_asked_again(
    text: str, schema: dict[str, Any], said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        _convert(text, schema)


def _data() -> Data:
    data = Data(None)  # type: ignore[arg-type]  # completion reads the catalogue only
    echo = {"name": "echo", "inputSchema": {"properties": {"text": {}, "times": {}}}}
    data.catalogue = Catalogue(
        entries={
            "tools": [
                Entry("demo__echo", "demo", echo),
                Entry("demo__add", "demo", {"name": "add"}),
            ],
            "resources": [Entry("demo__demo://readme", "demo", {"uri": "demo://readme"})],
            "prompts": [Entry("demo__greet", "demo", {"arguments": [{"name": "name"}]})],
        }
    )
    return data


def _complete(text: str) -> list[str]:
    completer = ShellCompleter(_data(), ["demo", "other"])
    found = completer.get_completions(Document(text), CompleteEvent(completion_requested=True))
    return [c.text for c in found]


def test_completion_offers_commands_names_and_the_arguments_not_yet_given() -> None:
    assert _complete("ca") == ["call"]
    assert _complete("call demo__") == ["demo__echo", "demo__add"]
    assert _complete("call demo__echo ") == ["text=", "times="]
    assert _complete("call demo__echo text=hi t") == ["times="]
    assert _complete("call demo__echo {") == []
    assert _complete("prompt demo__greet ") == ["name="]
    assert _complete("read demo") == ["demo__demo://readme", "demo://readme"]
    assert _complete("loglevel o") == ["other"]
    assert _complete("loglevel demo war") == ["warning"]
    assert _complete("trace o") == ["on", "off"]
    assert _complete("call nothing__here ") == []


def test_requests_waiting_for_the_person_are_bounded_and_withdrawn_when_cancelled() -> None:
    async def main() -> None:
        questions = Questions(Screen(Redactor()), ShellFlags())
        hook = questions.options()["sampling"]
        params = CreateMessageParams(messages=[], max_tokens=1)
        context = HookContext(server="demo", request_id=1, protocol_version=None)
        waiting = [asyncio.create_task(hook(params, context)) for _ in range(MAX_WAITING)]
        await asyncio.sleep(0)
        assert len(questions.waiting) == MAX_WAITING
        with pytest.raises(RequestError, match="too many"):
            await hook(params, context)
        # The server cancels one: it leaves the queue, and is never asked.
        waiting[0].cancel()
        await asyncio.sleep(0)
        assert len(questions.waiting) == MAX_WAITING - 1
        assert waiting[0].cancelled()
        for task in waiting[1:]:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        assert questions.next() is None

    asyncio.run(main())


def test_a_roots_request_is_asked_as_its_servers() -> None:
    # Several servers share the one roots handler: the question names the one asking.
    async def main() -> None:
        questions = Questions(Screen(Redactor()), ShellFlags())
        handler = questions.options()["handlers"]["roots/list"]
        request = ServerRequest("roots/list", 1, None, Responder(None, 1, "roots/list"), server="b")
        asking = asyncio.create_task(handler(request))
        await asyncio.sleep(0)
        question = questions.next()
        assert question is not None
        assert (question.kind, question.server) == ("roots", "b")
        asking.cancel()
        await asyncio.gather(asking, return_exceptions=True)

    asyncio.run(main())


# The multi-select and titled fields of MCP 2025-11-25's elicitation schema, as
# server-everything's trigger-elicitation-request asks them.
MULTI = {
    "type": "array",
    "minItems": 1,
    "maxItems": 2,
    "items": {"type": "string", "enum": ["Guitar", "Piano", "Violin"]},
}
TITLED = {
    "type": "string",
    "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2", "title": "Flash"}],
}
LEGACY = {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]}


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("Guitar", MULTI, ["Guitar"]),
        ("Guitar, Violin", MULTI, ["Guitar", "Violin"]),
        ("hero-2", TITLED, "hero-2"),
        ("superman", TITLED, "hero-1"),  # a choice's title stands for it
        ("Green", LEGACY, "g"),
        ("100", {"type": "integer", "minimum": 1, "maximum": 100}, 100),
        ("abc", {"type": "string", "minLength": 3}, "abc"),
    ],
)
def test_an_elicitation_field_takes_its_choices_and_bounds(
    text: str, schema: dict[str, Any], value: Any
) -> None:
    assert _convert(text, schema) == value


@pytest.mark.parametrize(
    ("text", "schema", "said"),
    [
        ("Banjo", MULTI, "one of: Guitar, Piano, Violin"),
        ("Guitar, Piano, Violin", MULTI, "at most 2 choices"),
        ("", MULTI, "at least 1 choices"),
        ("hero-9", TITLED, "one of: hero-1, hero-2"),
        ("500", {"type": "integer", "minimum": 1, "maximum": 100}, "at most 100"),
        ("-1", {"type": "number", "minimum": 0}, "at least 0"),
        ("0", {"type": "number", "exclusiveMinimum": 0}, "more than 0"),
        ("ab", {"type": "string", "minLength": 3}, "at least 3 characters"),
        ("abcd", {"type": "string", "maxLength": 3}, "at most 3 characters"),
    ],
)
def test_a_value_outside_the_fields_choices_or_bounds_is_asked_again(
    text: str, schema: dict[str, Any], said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        _convert(text, schema)


def _elicit(schema: dict[str, Any], answers: list[str]) -> tuple[ElicitResult, list[str]]:
    """The form of ``schema`` answered with ``answers`` (after "a" for accept): the
    result and every prompt's message."""
    asked: list[str] = []
    typed = ["a", *answers]

    async def read(message: str) -> str:
        asked.append(message)
        return typed[len(asked) - 1]

    async def main() -> Any:
        questions = Questions(Screen(Redactor()), ShellFlags())
        params = ElicitParams(message="Fill in", requested_schema=schema)
        future = asyncio.get_running_loop().create_future()
        await questions.answer(Question("elicitation", "demo", params, future), read)
        return future.result()

    result = asyncio.run(main())
    assert isinstance(result, ElicitResult)
    return result, asked


def test_the_titled_choices_are_shown_when_the_field_is_asked() -> None:
    schema = {"type": "object", "properties": {"hero": TITLED}, "required": ["hero"]}
    result, asked = _elicit(schema, ["hero-2"])
    assert result.content == {"hero": "hero-2"}
    assert "hero-1 (Superman)|hero-2 (Flash)" in asked[-1]


def test_an_empty_answer_takes_the_default_and_is_refused_for_a_required_field() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "size": {"type": "integer", "default": 3},
            "note": {"type": "string"},
        },
        "required": ["name"],
    }
    result, asked = _elicit(schema, ["", "Ada", "", ""])
    assert result.content == {"name": "Ada", "size": 3}
    assert "a value is required" in asked[2]
    assert "empty: 3" in asked[3]


def test_an_elicitations_field_text_reaches_the_prompt_escaped() -> None:
    # The prompt is ANSI(): a control sequence in a server's text would reach the
    # terminal as is (\x01...\x02 is passed through by prompt_toolkit; OSC 0 sets the
    # window's title; BEL rings).
    evil = "\x01\x1b]0;PWNED-TITLE\x07\x02"
    schema = {
        "type": "object",
        "properties": {
            "note": {"type": "string", "description": "a note " + evil},
            "pick": {"type": "string", "enum": ["one" + evil, "two"]},
        },
        "required": ["note", "pick"],
    }
    result, asked = _elicit(schema, ["hello", "three", "two"])
    assert result.content == {"note": "hello", "pick": "two"}
    assert "one of:" in asked[-1]  # the refusal, which lists the choices
    for message in asked:
        assert not any(ch in message for ch in "\x01\x02\x07\x1b"), message


def test_a_url_mode_request_gets_no_content_from_the_elicitation_reply_flag() -> None:
    async def main() -> Any:
        flags = ShellFlags(elicitation_reply=("accept", {"name": "Flagged"}))
        questions = Questions(Screen(Redactor()), flags)
        hook = questions.options()["elicitation"]
        params = ElicitParams(message="Sign in", mode="url", url="https://example.com/x")
        context = HookContext(server="demo", request_id=1, protocol_version=None)
        return await hook(params, context)

    result = asyncio.run(main())
    assert result == ElicitResult(action="accept")


def test_a_servers_lines_are_bounded_per_kind(capsys: pytest.CaptureFixture[str]) -> None:
    # No event loop: the count is said when the kind next comes after the interval.
    screen = Screen(Redactor(), burst=2, interval=0.05)
    for n in range(5):
        screen.limited("demo", "log", f"line {n}")
    screen.limited("demo", "stderr", "other kind")
    time.sleep(0.06)
    screen.limited("demo", "log", "line 5")
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "[demo] line 0",
        "[demo] line 1",
        "[demo] other kind",
        "[demo] 2 more log lines not shown in 0.05 s",
        "[demo] line 4",
        "[demo] line 5",
    ]


def test_a_failing_server_is_said_to_fail_once_per_reason_and_when_it_gives_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    watch = Watch(Screen(Redactor()), lambda _server: None)
    lost, refused = McplHostError("lost"), McplHostError("refused")
    for state, error, retrying in [
        ("connecting", None, False),
        ("failed", lost, True),
        ("connecting", None, False),
        ("failed", lost, True),
        ("connecting", None, False),
        ("failed", refused, True),
        ("connecting", None, False),
        ("failed", refused, False),
    ]:
        watch.on_status(ServerStatus("s", state, error=error, retrying=retrying))  # type: ignore[arg-type]
    assert capsys.readouterr().out.splitlines() == [
        "[s] connecting",
        "[s] failed: lost (will retry)",
        "[s] failed: refused (will retry)",
        "[s] failed: refused (not retried)",
    ]


def _session(**options: Any) -> _Session:
    flags = ShellFlags()
    return _Session(
        Options("shell", shell=flags, **options),
        {"demo": object()},
        Redactor(),
        lambda _stream: None,
    )


def test_a_flood_of_requests_answered_from_the_flags_costs_a_bounded_number_of_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # --sampling-reply answers each request at once and says so: a server sending
    # thousands makes thousands of lines (docs: "at most 32 lines per kind every 3 s").
    async def main() -> None:
        flags = ShellFlags(sampling_reply="ok")
        questions = Questions(Screen(Redactor()), flags)
        hook = questions.options()["sampling"]
        params = CreateMessageParams(messages=[], max_tokens=1)
        context = HookContext(server="demo", request_id=1, protocol_version=None)
        for _ in range(500):
            await hook(params, context)

    asyncio.run(main())
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 40, f"{len(lines)} lines"


def test_a_question_withdrawn_between_its_prompts_is_asked_no_further() -> None:
    # The server cancels the elicitation just as the person answers "accept" (the
    # question's prompt has already ended, so abort() closes nothing): its fields must
    # not be asked one by one for a request that is gone.
    async def main() -> list[str]:
        questions = Questions(Screen(Redactor()), ShellFlags())
        hook = questions.options()["elicitation"]
        schema = {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        }
        params = ElicitParams(message="Fill in", requested_schema=schema)
        context = HookContext(server="demo", request_id=1, protocol_version=None)
        task = asyncio.create_task(hook(params, context))
        await asyncio.sleep(0)
        question = questions.next()
        assert question is not None
        asked: list[str] = []

        async def read(message: str) -> str:
            asked.append(message)
            if len(asked) == 1:
                task.cancel()  # withdrawn while "a" is being taken
                await asyncio.sleep(0)
                return "a"
            return "x"

        async with asyncio.timeout(5):
            await questions.answer(question, read)
        return asked

    asked = asyncio.run(main())
    assert len(asked) == 1, asked


def test_a_repeated_choice_does_not_count_twice_toward_min_items() -> None:
    multi = {
        "type": "array",
        "minItems": 2,
        "items": {"type": "string", "enum": ["Guitar", "Piano"]},
    }
    with pytest.raises(ValueError, match="at least 2"):
        _convert("Guitar, Guitar", multi)


def test_sigterm_during_a_command_asks_no_more_questions() -> None:
    # SIGTERM while a question is asked during a command: that question is refused, but
    # the next one waiting is asked, and the shell waits for the person instead of
    # leaving.
    async def main() -> tuple[bool, list[str]]:
        session = _session(timeout=30.0)
        asked: list[str] = []

        async def ask(message: str) -> str:
            asked.append(message)
            if len(asked) == 1:
                session._on_signal(signal.SIGTERM)
                raise EOFError  # what the asking prompt's exit gives
            await asyncio.Event().wait()  # the person is not there: SIGTERM said leave
            return ""

        session._ask = ask  # type: ignore[method-assign]
        loop = asyncio.get_running_loop()
        for _ in range(2):
            params = CreateMessageParams(messages=[], max_tokens=1)
            session.questions.waiting.append(
                Question("sampling", "demo", params, loop.create_future())
            )

        class Commands:
            async def run(self, _text: str) -> bool:
                await asyncio.Event().wait()
                return True

        async with asyncio.timeout(2):  # the fixed shell leaves at once
            going_on = await session._command(Commands(), "call demo__x")  # type: ignore[arg-type]
        return going_on, asked

    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        going_on, asked = asyncio.run(main())
    assert going_on is False
    assert len(asked) == 1


def test_a_list_that_keeps_failing_is_said_within_the_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A server floods notifications/tools/list_changed while its tools/list fails: the
    # notification lines are bounded, but every catalogue reading they cause says
    # "not listed: ..." again, without bound.
    async def main() -> None:
        session = _session()

        class Data:
            async def refresh(self) -> Catalogue:
                await asyncio.sleep(0)
                return Catalogue(errors={"demo": "boom"})

        session.data = Data()  # type: ignore[assignment]
        session._entered.set()
        for _ in range(200):
            session._changed("demo")
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        assert session._refreshing is not None
        await session._refreshing

    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        asyncio.run(main())
    lines = [line for line in capsys.readouterr().out.splitlines() if "not listed" in line]
    assert len(lines) <= 40, f"{len(lines)} lines"


def test_an_error_log_in_a_flood_of_debug_logs_is_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # After `loglevel demo debug` a chatty server's debug lines use up the one "log"
    # budget: its error message in the middle of them is counted, never shown (only the
    # last line held back is). The library's PeerLogBudget keys a kind by level.
    watch = Watch(Screen(Redactor()), lambda _server: None)
    for n in range(100):
        watch.on_event("demo", ServerLog(level="debug", logger=None, data=f"tick {n}"))
        if n == 50:
            watch.on_event("demo", ServerLog(level="error", logger=None, data="disk full"))
    assert "disk full" in capsys.readouterr().out


def test_a_required_text_field_refuses_a_blank_answer() -> None:
    async def main() -> list[str]:
        questions = Questions(Screen(Redactor()), ShellFlags())
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        }
        params = ElicitParams(message="Fill in", requested_schema=schema)
        future = asyncio.get_running_loop().create_future()
        typed = iter(["a", "   ", "Ada"])
        asked: list[str] = []

        async def read(message: str) -> str:
            asked.append(message)
            return next(typed)

        await questions.answer(Question("elicitation", "demo", params, future), read)
        assert future.result().content == {"name": "Ada"}
        return asked

    asyncio.run(main())


def test_a_flood_of_withdrawn_requests_costs_a_bounded_number_of_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A server that sends a request and cancels it, again and again: each makes a
    # "withdrawn" line (and interrupts the prompt), without bound.
    async def main() -> None:
        questions = Questions(Screen(Redactor()), ShellFlags())
        hook = questions.options()["sampling"]
        params = CreateMessageParams(messages=[], max_tokens=1)
        context = HookContext(server="demo", request_id=1, protocol_version=None)
        for _ in range(200):
            task = asyncio.create_task(hook(params, context))
            await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 40, f"{len(lines)} lines"


def test_a_command_that_fails_unexpectedly_is_said_and_the_shell_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def main() -> bool:
        session = _session()

        class Commands:
            async def run(self, _text: str) -> bool:
                raise RuntimeError("bug \x1b[31m")

        return await session._command(Commands(), "tools")  # type: ignore[arg-type]

    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        assert asyncio.run(main()) is True
    out = capsys.readouterr().out
    assert "error (unexpected): RuntimeError: bug" in out
    assert "\x1b[31m" not in out


def test_a_catalogue_that_cannot_be_read_is_said_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def main() -> None:
        session = _session()

        class Data:
            async def refresh(self) -> Catalogue:
                await asyncio.sleep(0)
                raise RuntimeError("down")

        session.data = Data()  # type: ignore[assignment]
        session._entered.set()
        for _ in range(20):
            session._changed("demo")
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        assert session._refreshing is not None
        await session._refreshing

    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        asyncio.run(main())
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["the catalogue was not read: down"]


def test_what_the_budget_holds_back_is_said_at_leaving(
    capsys: pytest.CaptureFixture[str],
) -> None:
    screen = Screen(Redactor(), burst=1)
    for n in range(3):
        screen.limited("demo", "log", f"line {n}")
    screen.flush()
    screen.flush()  # nothing twice
    assert capsys.readouterr().out.splitlines() == [
        "[demo] line 0",
        "[demo] 1 more log line not shown in 3 s",
        "[demo] line 2",
    ]


def test_a_fields_bounds_read_as_words() -> None:
    text = {"type": "string", "minLength": 3, "maxLength": 8}
    assert "at least 3 characters, at most 8 characters" in _describe(text, False, str)
    multi = {"type": "array", "minItems": 1, "items": {"enum": ["a", "b"]}}
    assert "at least 1 choices" in _describe(multi, False, str)
