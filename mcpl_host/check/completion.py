"""The completion rule: with the completions capability, ``completion/complete`` for a
real prompt argument or template variable is answered with a well-formed completion
(server/utilities/completion)."""

from __future__ import annotations

import re
from typing import Any, Final

from .context import Context
from .listing import LISTS, exchange, read_list
from .rules import probe, rule
from .wire import Wire, error_code, shown

MAX_VALUES: Final = 100
# A URI template's first variable (RFC 6570): {name}, {+name}, {#name}, {name*}...
_VARIABLE: Final = re.compile(r"\{[+#./;?&]?([A-Za-z0-9_%.]+)")

COMPLETION = rule(
    "utilities.completion",
    "with the completions capability, completion/complete is answered with "
    "{completion: {values}}: at most 100 strings, total and hasMore typed right",
    revision="2025-03-26",
    section="server/utilities/completion#requesting-completions",
)


async def _reference(ctx: Context, wire: Wire, caps: dict[str, Any]) -> dict[str, Any] | None:
    """completion/complete's params for the first prompt argument, else the first
    template variable (None: the server lists neither)."""
    if "prompts" in caps:
        listing = await read_list(wire, LISTS[3], ctx.timeout)
        for prompt in listing.items:
            arguments = prompt.get("arguments") if isinstance(prompt, dict) else None
            if isinstance(arguments, list) and arguments and isinstance(arguments[0], dict):
                name, argument = prompt.get("name"), arguments[0].get("name")
                if isinstance(name, str) and isinstance(argument, str):
                    return {
                        "ref": {"type": "ref/prompt", "name": name},
                        "argument": {"name": argument, "value": ""},
                    }
    if "resources" in caps:
        listing = await read_list(wire, LISTS[2], ctx.timeout)
        for template in listing.items:
            uri = template.get("uriTemplate") if isinstance(template, dict) else None
            found = _VARIABLE.search(uri) if isinstance(uri, str) else None
            if found is not None:
                return {
                    "ref": {"type": "ref/resource", "uri": uri},
                    "argument": {"name": found.group(1), "value": ""},
                }
    return None


def _problem(answer: dict[str, Any] | None) -> str | None:
    if answer is None:
        return "not answered"
    if "error" in answer:
        return f"answered with error {shown(error_code(answer))}"
    result = answer.get("result")
    completion = result.get("completion") if isinstance(result, dict) else None
    if not isinstance(completion, dict):
        return "the result has no completion object"
    values, total, more = (
        completion.get("values"),
        completion.get("total"),
        completion.get("hasMore"),
    )
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return "completion.values is not a list of strings"
    if len(values) > MAX_VALUES:
        return f"completion.values holds {len(values)} values, over {MAX_VALUES}"
    if total is not None and (isinstance(total, bool) or not isinstance(total, int)):
        return f"completion.total {shown(total)} is not an integer"
    if more is not None and not isinstance(more, bool):
        return f"completion.hasMore {shown(more)} is not a boolean"
    return None


@probe(COMPLETION)
async def completion(ctx: Context) -> None:
    caps = (await ctx.facts()).capabilities
    if "completions" not in caps:
        ctx.not_applicable(COMPLETION, "the server does not declare completions")
        return
    async with ctx.borrow() as wire:
        params = await _reference(ctx, wire, caps)
        if params is None:
            ctx.not_applicable(COMPLETION, "no prompt argument or template variable to complete")
            return
        mark = wire.mark()
        answer, _ = await exchange(wire, wire.request("completion/complete", params), ctx.timeout)
        evidence = wire.since(mark)
        what = f"{params['ref']['type']} argument {shown(params['argument']['name'], 40)}"
        problem = _problem(answer)
        if answer is None:
            wire.broken = True
        if problem is None:
            count = len(answer["result"]["completion"]["values"]) if answer else 0
            ctx.passed(COMPLETION, f"{what}: {count} values", evidence)
        else:
            ctx.failed(COMPLETION, f"{what}: {problem}", evidence)
