"""Content rules: what the lists hold (tools' schemas and names, each item's required
members) and what a called tool returns (server/tools, server/resources, server/prompts).
Capabilities against the methods that answer are in :mod:`.capabilities`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from ..client.schema import UnsupportedSchema, compile_schema, validator_for
from .calls import tool_calls
from .context import Context
from .listing import LISTS, Listing, ListKind, declared_lists, read_list
from .rules import Line, Verdict, probe, rule
from .wire import MODERN, shown

TOOL_SCHEMAS = rule(
    "content.tool-schemas",
    "every tool's inputSchema is a valid JSON Schema of type object, and every "
    "outputSchema a valid JSON Schema",
    revision="2024-11-05",
    section="server/tools#tool",
)
TOOL_NAMES = rule(
    "content.tool-names",
    "tool names are 1 to 128 characters of A-Z, a-z, 0-9, _, - and ., and unique",
    revision="2025-11-25",
    section="server/tools#tool-names",
    level="SHOULD",
)
LIST_SHAPES = rule(
    "content.list-shapes",
    "each listed tool, resource, template and prompt has the members its schema "
    "requires, typed right",
    revision="2024-11-05",
    section="server/tools#data-types",
)
_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_MAX_PROBLEMS: Final = 5

# What each list's items require: member -> the type it must have.
_REQUIRED: Final[dict[str, dict[str, type]]] = {
    "tools/list": {"name": str, "inputSchema": dict},
    "resources/list": {"uri": str, "name": str},
    "resources/templates/list": {"uriTemplate": str, "name": str},
    "prompts/list": {"name": str},
}


def _item_problem(kind: ListKind, item: Any) -> str | None:
    label = f"a {kind.key[:-1]} in {kind.method}"
    if not isinstance(item, dict):
        return f"{label} is not an object"
    ident = shown(item.get(kind.ident), 40)
    for member, kind_type in _REQUIRED[kind.method].items():
        if not isinstance(item.get(member), kind_type):
            need = "a string" if kind_type is str else "an object"
            return f"{label} ({ident}) has no {member} that is {need}"
    arguments = item.get("arguments")
    if (
        kind.method == "prompts/list"
        and arguments is not None
        and (
            not isinstance(arguments, list)
            or not all(isinstance(a, dict) and isinstance(a.get("name"), str) for a in arguments)
        )
    ):
        return f"prompt {ident}'s arguments are not a list of objects with a name"
    return None


def _schema_problem(tool: dict[str, Any], version: str | None) -> tuple[str, bool] | None:
    """What is wrong with ``tool``'s schemas, and whether it is the server's fault: True
    for a schema that is not a valid JSON Schema (a failure), False for one the checker
    will not check here (a remote ``$ref``, an unknown dialect, past its bounds: the rule
    is not settled). None: both schemas are valid."""
    name = shown(tool.get("name"), 40)
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return f"tool {name}'s inputSchema is not of type object", True
    try:
        compile_schema(schema)
    except UnsupportedSchema as exc:
        return _refused(f"tool {name}'s inputSchema", exc)
    if "outputSchema" not in tool:
        return None
    output = tool["outputSchema"]
    if version != MODERN and (not isinstance(output, dict) or output.get("type") != "object"):
        return f"tool {name}'s outputSchema is not of type object", True
    try:
        compile_schema(output)
    except UnsupportedSchema as exc:
        return _refused(f"tool {name}'s outputSchema", exc)
    return None


def _refused(what: str, exc: UnsupportedSchema) -> tuple[str, bool]:
    if exc.malformed:
        return f"{what} is not a valid JSON Schema: {exc}", True
    return f"{what} was not checked: {exc}", False


def _name_problems(tools: list[Any]) -> list[str]:
    problems, seen = [], set()
    for tool in tools:
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str):
            continue  # list-shapes' finding
        if not _NAME.fullmatch(name):
            problems.append(f"tool name {shown(name, 40)} breaks the naming rules")
        elif name in seen:
            problems.append(f"tool name {shown(name, 40)} is listed twice")
        seen.add(name)
    return problems


def _judge_problems(
    ctx: Context,
    rule_id: str,
    problems: list[str],
    ok: str,
    evidence: Any,
    *,
    unsettled: Sequence[str] = (),
) -> None:
    """Fail on ``problems``; else warn on ``unsettled`` (what the checker could not
    judge either way); else pass."""
    if problems:
        ctx.failed(rule_id, _listed(problems), evidence)
    elif unsettled:
        ctx.judge(rule_id, Verdict.WARN, _listed(unsettled), evidence)
    else:
        ctx.passed(rule_id, ok, evidence)


def _listed(found: Sequence[str]) -> str:
    more = len(found) - _MAX_PROBLEMS
    return "; ".join(found[:_MAX_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")


@probe(TOOL_SCHEMAS, TOOL_NAMES, LIST_SHAPES)
async def listed_content(ctx: Context) -> None:
    facts = await ctx.facts()
    kinds = declared_lists(facts.capabilities)
    listings: dict[str, Listing] = {}
    async with ctx.borrow() as wire:
        for kind in kinds:
            listings[kind.method] = await read_list(wire, kind, ctx.timeout)
        version = wire.version
    tools = listings.get(LISTS[0].method)
    if tools is None:
        ctx.not_applicable(TOOL_SCHEMAS, "the server does not declare tools")
        ctx.not_applicable(TOOL_NAMES, "the server does not declare tools")
    elif tools.problem is not None and not tools.items:
        ctx.failed(TOOL_SCHEMAS, f"could not read the tools: {tools.problem}", tools.evidence)
        ctx.failed(TOOL_NAMES, f"could not read the tools: {tools.problem}", tools.evidence)
    else:
        items = [t for t in tools.items if isinstance(t, dict)]
        judged = [p for p in (_schema_problem(t, version) for t in items) if p is not None]
        problems = [problem for problem, malformed in judged if malformed]
        unchecked = [problem for problem, malformed in judged if not malformed]
        ok = f"{len(items)} tools, each schema valid"
        _judge_problems(ctx, TOOL_SCHEMAS, problems, ok, tools.evidence, unsettled=unchecked)
        if version is not None and version < "2025-11-25":
            ctx.not_applicable(
                TOOL_NAMES, f"the server speaks {version}: the rules came in 2025-11-25"
            )
        else:
            ok = f"{len(items)} tool names, each well formed and unique"
            _judge_problems(ctx, TOOL_NAMES, _name_problems(tools.items), ok, tools.evidence)
    if not listings:
        ctx.not_applicable(LIST_SHAPES, "the server declares no tools, resources or prompts")
        return
    shape_problems: list[str] = []
    unread: list[str] = []  # lists read only up to the checker's page bound
    evidence: list[Line] = []
    count = 0
    for listing in listings.values():
        found = [p for p in (_item_problem(listing.kind, i) for i in listing.items) if p]
        if listing.problem is not None:
            if listing.bounded:
                unread.append(listing.problem)
            else:
                found.insert(0, listing.problem)
        shape_problems += found
        count += len(listing.items)
        if found or listing.bounded or not evidence:
            evidence += listing.evidence
    ok = f"{count} items in {len(listings)} lists, each with its required members"
    _judge_problems(ctx, LIST_SHAPES, shape_problems, ok, evidence, unsettled=unread)


STRUCTURED_CONTENT = rule(
    "content.structured-content",
    "a called tool's result is a CallToolResult, and its structuredContent matches "
    "the tool's outputSchema",
    revision="2025-06-18",
    section="server/tools#output-schema",
)


def _call_problem(result: Any, tool: dict[str, Any] | None) -> str | None:
    """What is wrong with a call's ``result``. Raises UnsupportedSchema when the tool's
    outputSchema cannot be checked here (malformed: content.tool-schemas' finding)."""
    if not isinstance(result, dict):
        return "the result is not an object"
    content = result.get("content")
    if not isinstance(content, list) or not all(
        isinstance(block, dict) and isinstance(block.get("type"), str) for block in content
    ):
        return "the result has no content list of typed blocks"
    if "isError" in result and not isinstance(result["isError"], bool):
        return f"isError {shown(result['isError'])} is not a boolean"
    if result.get("isError") is True or tool is None or "outputSchema" not in tool:
        return None  # a tool error, or nothing promised: no structuredContent is due
    if "structuredContent" not in result:
        return "no structuredContent, though the tool declares an outputSchema"
    validator = validator_for(tool["outputSchema"])  # UnsupportedSchema: the caller's
    errors = validator.errors(result["structuredContent"], limit=1)
    if errors:
        where = errors[0].path or "/"
        return f"structuredContent breaks the outputSchema at {where}: {errors[0].message}"
    return None


@probe(STRUCTURED_CONTENT)
async def structured_content(ctx: Context) -> None:
    run = await tool_calls(ctx)
    if run is None:
        ctx.not_applicable(STRUCTURED_CONTENT, "no tool was called: use --call")
        return
    problems, unsettled, checked = [], [], 0
    for call in run.calls:
        name = shown(call.name, 40)
        if call.answer is None:
            unsettled.append(f"tool {name}: no answer within {ctx.timeout:g} s")
        elif "result" not in call.answer:
            unsettled.append(f"tool {name}: the call was answered with an error")
        else:
            try:
                problem = _call_problem(call.answer["result"], run.tools.get(call.name))
            except UnsupportedSchema as exc:
                why = "malformed" if exc.malformed else "not checked here"
                unsettled.append(f"tool {name}: its outputSchema is {why}: {exc}")
                continue
            checked += 1
            if problem is not None:
                problems.append(f"tool {name}: {problem}")
    evidence: tuple[Line, ...] = run.evidence[-20:]
    if problems:
        ctx.failed(STRUCTURED_CONTENT, "; ".join(problems), evidence)
    elif unsettled:
        ctx.judge(STRUCTURED_CONTENT, Verdict.WARN, "; ".join(unsettled), evidence)
    else:
        ctx.passed(STRUCTURED_CONTENT, f"{checked} calls, each result well formed", evidence)
