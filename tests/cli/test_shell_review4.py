"""Review 4 of the shell's fixes: failing tests (see /work/prompts/review4.md)."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from mcpl_host.cli.args import Options, ShellFlags
from mcpl_host.cli.shell.data import Catalogue
from mcpl_host.cli.shell.questions import Question, Questions, _convert
from mcpl_host.cli.shell.screen import Screen
from mcpl_host.cli.shell.session import _Session
from mcpl_host.cli.shell.watch import Watch
from mcpl_host.client.hooks import HookContext
from mcpl_host.client.types import CreateMessageParams, ElicitParams
from mcpl_host.events import ServerLog
from mcpl_host.protocol.redact import Redactor


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
        questions = Questions(Screen(Redactor()), flags, ["demo"])
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
        questions = Questions(Screen(Redactor()), ShellFlags(), ["demo"])
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
        questions = Questions(Screen(Redactor()), ShellFlags(), ["demo"])
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
        questions = Questions(Screen(Redactor()), ShellFlags(), ["demo"])
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
