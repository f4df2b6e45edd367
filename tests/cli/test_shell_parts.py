"""The shell's parts that need no terminal: reading a command's arguments, checking an
elicitation's fields, completion from a catalogue, and the bound on waiting requests."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from mcpl_host import RequestError
from mcpl_host.cli.args import ShellFlags
from mcpl_host.cli.shell.commands import parse_arguments, split
from mcpl_host.cli.shell.complete import ShellCompleter
from mcpl_host.cli.shell.data import Catalogue, Data, Entry
from mcpl_host.cli.shell.questions import MAX_WAITING, Questions, _convert
from mcpl_host.cli.shell.screen import Screen
from mcpl_host.client.hooks import HookContext
from mcpl_host.client.types import CreateMessageParams
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
        questions = Questions(Screen(Redactor()), ShellFlags(), ["demo"])
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
