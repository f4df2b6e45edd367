"""Review of ``mcpl-host shell``: an elicitation's form as MCP 2025-11-25 defines its
fields (the requestedSchema's restricted subset), checked without a terminal. Each
test fails on 78478bc."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpl_host.cli.args import ShellFlags
from mcpl_host.cli.shell.questions import Question, Questions, _convert
from mcpl_host.cli.shell.screen import Screen
from mcpl_host.client.types import ElicitParams, ElicitResult
from mcpl_host.protocol.redact import Redactor

# The multi-select and titled fields of MCP 2025-11-25's elicitation schema, as
# server-everything's trigger-elicitation-request asks them.
MULTI = {
    "type": "array",
    "minItems": 1,
    "maxItems": 3,
    "items": {"type": "string", "enum": ["Guitar", "Piano", "Violin"]},
}
TITLED = {
    "type": "string",
    "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2", "title": "Flash"}],
}


def test_a_multi_select_field_is_answered_with_an_array() -> None:
    # _convert has no case for "array": the text goes back as a string, which the
    # requestedSchema refuses ("untitledMultipleSelectEnum": "Guitar").
    assert _convert("Guitar", MULTI) == ["Guitar"]


def test_a_multi_select_field_refuses_a_value_not_offered() -> None:
    with pytest.raises(ValueError, match=r".+"):
        _convert("Banjo", MULTI)


def test_a_titled_single_select_field_refuses_a_value_not_offered() -> None:
    # oneOf [{const, title}] is how 2025-11-25 writes choices with labels; the shell
    # neither shows them (the person sees "string") nor checks the answer against them.
    with pytest.raises(ValueError, match=r".+"):
        _convert("hero-9", TITLED)


@pytest.mark.parametrize(
    ("text", "schema"),
    [
        ("500", {"type": "integer", "minimum": 1, "maximum": 100}),
        ("-1", {"type": "number", "minimum": 0}),
        ("ab", {"type": "string", "minLength": 3}),
    ],
)
def test_a_value_outside_the_fields_bounds_is_asked_again(
    text: str, schema: dict[str, Any]
) -> None:
    # docs/cli.md: "A value is checked against its type ... and asked again when it
    # does not fit"; the schema's minimum/maximum/minLength are not looked at, so the
    # server gets a value its own schema refuses.
    with pytest.raises(ValueError, match=r".+"):
        _convert(text, schema)


def test_the_titled_choices_are_shown_when_the_field_is_asked() -> None:
    asked: list[str] = []

    async def read(message: str) -> str:
        asked.append(message)
        return "a" if len(asked) == 1 else "hero-2"

    async def main() -> Any:
        questions = Questions(Screen(Redactor()), ShellFlags(), ["demo"])
        params = ElicitParams(
            message="Pick",
            requested_schema={
                "type": "object",
                "properties": {"hero": TITLED},
                "required": ["hero"],
            },
        )
        future = asyncio.get_running_loop().create_future()
        await questions.answer(Question("elicitation", "demo", params, future), read)
        return future.result()

    result = asyncio.run(main())
    assert isinstance(result, ElicitResult)
    assert result.content == {"hero": "hero-2"}
    field_prompt = asked[-1]
    assert "Superman" in field_prompt
    assert "hero-2" in field_prompt
