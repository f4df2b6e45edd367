"""A real MCP server written with the official Python SDK (`mcp==2.3.0`), for interop tests.

Run it over stdio, or over Streamable HTTP on 127.0.0.1:PORT at /mcp::

    python tests/interop/sdk_server.py
    python tests/interop/sdk_server.py --http PORT
    python tests/interop/sdk_server.py --sse PORT     # legacy HTTP+SSE: GET /sse

It uses the SDK's high-level API, which in mcp 2.x is `mcp.server.mcpserver.MCPServer`
(the successor of v1's `FastMCP`; `mcp.server.fastmcp` no longer exists). Everything it
answers is deterministic, so tests can assert exact results; tests/interop/README.md records
the wire facts.

A few things the high-level API does not offer are reached through the low-level server
that `MCPServer` wraps (`_lowlevel_server`, private in 2.3.0): advertising
`listChanged: true`, handling `logging/setLevel` and `resources/subscribe` /
`resources/unsubscribe`.
"""

from __future__ import annotations

import functools
import sys
import warnings
from typing import Any, TypedDict

import anyio
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.server.mcpserver.tools import Tool
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel, Field

# Logging, sampling and roots are "deprecated as of 2026-07-28" in this SDK, but they are
# exactly what the 2025-11-25 handshake era (which our client speaks) uses. Keep stderr quiet.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

SERVER_NAME = "mcpl-interop-sdk-server"
SERVER_VERSION = "1.0.0"
INSTRUCTIONS = "Interop test server for mcpl_host. Every answer is deterministic."

STATIC_TEXT_URI = "resource://static/greeting"
STATIC_TEXT = "Hello from the SDK interop server."
STATIC_BLOB_URI = "resource://static/bytes"
STATIC_BLOB = bytes(range(8))
USER_TEMPLATE = "resource://users/{user_id}/profile"
USERS = ["alice", "bob", "carol"]
STYLES = ["friendly", "formal", "pirate"]

# ---------------------------------------------------------------- an outputSchema the result breaks


# MCPServer validates a tool's result against the return annotation's model, so a typed tool
# cannot send mismatching structuredContent. A schema published without a model ("hand-built
# metadata") is advertised but not validated, and a returned CallToolResult goes out as is.
def _mismatched_output() -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text='{"result": "not a number"}')],
        structured_content={"result": "not a number"},
    )


_mismatch_tool = Tool.from_function(
    _mismatched_output,
    name="mismatched_output",
    description="Declares an integer `result` but returns a string: structuredContent breaks outputSchema.",
    structured_output=False,
)
_mismatch_tool.fn_metadata.output_schema = {
    "type": "object",
    "properties": {"result": {"type": "integer"}},
    "required": ["result"],
}

server = MCPServer(
    SERVER_NAME, version=SERVER_VERSION, instructions=INSTRUCTIONS, tools=[_mismatch_tool]
)


# ---------------------------------------------------------------- structured tools


@server.tool(title="Add", description="Add two integers (structured output).")
def add(a: int, b: int) -> int:
    return a + b


class Weather(BaseModel):
    """A weather report."""

    city: str
    temperature_c: float = Field(description="Temperature in Celsius")
    conditions: str
    humidity: int = Field(ge=0, le=100)
    alerts: list[str]


@server.tool(description="Deterministic weather report (pydantic model output).")
def weather(city: str) -> Weather:
    return Weather(city=city, temperature_c=21.5, conditions="Sunny", humidity=40, alerts=[])


class Stats(TypedDict):
    count: int
    total: float
    mean: float


@server.tool(description="Count, total and mean of a list of numbers (TypedDict output).")
def stats(numbers: list[float]) -> Stats:
    if not numbers:
        raise ToolError("numbers must not be empty")
    total = float(sum(numbers))
    return {"count": len(numbers), "total": total, "mean": total / len(numbers)}


# ---------------------------------------------------------------- plain tools


@server.tool(description="Echo the text back (unstructured).", structured_output=False)
def echo(text: str) -> str:
    return text


@server.tool(description="Always fails: the result has isError true.", structured_output=False)
def fail(message: str = "this tool always fails") -> str:
    raise ToolError(message)


@server.tool(description="Report progress for `steps` steps, then finish.", structured_output=False)
async def progress(ctx: Context, steps: int = 3, delay: float = 0.05) -> str:
    for i in range(1, steps + 1):
        await anyio.sleep(delay)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"done after {steps} steps"


LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
_min_level = {"level": "debug"}  # set by logging/setLevel


@server.tool(
    description="Log debug, info, notice (structured data, logger 'interop'), warning and error "
    "messages, skipping those below the level set by logging/setLevel.",
    structured_output=False,
)
async def log_levels(ctx: Context) -> str:
    messages: list[tuple[Any, Any, str | None]] = [
        ("debug", "debug message", None),
        ("info", "info message", None),
        ("notice", {"detail": "notice with structured data"}, "interop"),
        ("warning", "warning message", None),
        ("error", "error message", None),
    ]
    sent = 0
    for level, data, logger_name in messages:
        if LEVELS.index(level) >= LEVELS.index(_min_level["level"]):
            await ctx.log(level, data, logger_name=logger_name)
            sent += 1
    return f"logged {sent} messages"


# ---------------------------------------------------------------- server-to-client requests


class SampleAnswer(BaseModel):
    model: str
    role: str
    text: str | None
    stop_reason: str | None


@server.tool(description="Ask the client's LLM (sampling/createMessage) and return its answer.")
async def sample(prompt: str, ctx: Context, max_tokens: int = 50) -> SampleAnswer:
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=max_tokens,
        system_prompt="You are a test.",
        temperature=0.0,
        stop_sequences=["STOP"],
        related_request_id=ctx.request_id,
    )
    content = result.content
    text = content.text if isinstance(content, TextContent) else None
    return SampleAnswer(
        model=result.model, role=result.role, text=text, stop_reason=result.stop_reason
    )


class Contact(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, ge=0, le=150, description="Your age")
    subscribe: bool = Field(default=False, description="Subscribe to the newsletter")


class ElicitOutcome(BaseModel):
    action: str
    content: dict[str, Any] | None


@server.tool(description="Ask the user for a contact (form-mode elicitation).")
async def elicit_contact(ctx: Context) -> ElicitOutcome:
    result = await ctx.elicit("Please provide your contact details.", Contact)
    if result.action == "accept":
        return ElicitOutcome(action="accept", content=result.data.model_dump())
    return ElicitOutcome(action=result.action, content=None)


class RootEntry(BaseModel):
    uri: str
    name: str | None


class RootsAnswer(BaseModel):
    roots: list[RootEntry]


@server.tool(description="List the client's roots (roots/list) and return them.")
async def list_roots(ctx: Context) -> RootsAnswer:
    result = await ctx.session.list_roots()
    return RootsAnswer(roots=[RootEntry(uri=str(r.uri), name=r.name) for r in result.roots])


# ---------------------------------------------------------------- list changes and subscriptions


@server.tool(
    description="Register tool `extra_tool` and send notifications/tools/list_changed\n(to the session, and to each subscriptions/listen stream).",
    structured_output=False,
)
async def add_extra_tool(ctx: Context) -> str:
    def extra_tool() -> str:
        """A tool added at run time."""
        return "extra"

    server.add_tool(extra_tool, structured_output=False)
    await ctx.session.send_tool_list_changed()  # the handshake era's way
    await ctx.notify_tools_changed()  # 2026-07-28's: to each subscriptions/listen stream
    return "added extra_tool"


_subscribed: set[str] = set()


@server.tool(
    description="Send notifications/resources/updated for `uri` if the client subscribed to it.",
    structured_output=False,
)
async def touch_resource(ctx: Context, uri: str = STATIC_TEXT_URI) -> str:
    if uri not in _subscribed:
        return f"not subscribed: {uri}"
    await ctx.session.send_resource_updated(uri)
    return f"updated: {uri}"


# ---------------------------------------------------------------- resources


@server.resource(
    STATIC_TEXT_URI, name="greeting", description="A static text resource.", mime_type="text/plain"
)
def greeting() -> str:
    return STATIC_TEXT


@server.resource(
    STATIC_BLOB_URI,
    name="bytes",
    description="Eight bytes 00..07.",
    mime_type="application/octet-stream",
)
def eight_bytes() -> bytes:
    return STATIC_BLOB


@server.resource(
    USER_TEMPLATE,
    name="user_profile",
    description="A user's profile.",
    mime_type="application/json",
)
def user_profile(user_id: str) -> str:
    if user_id not in USERS:
        raise ResourceNotFoundError(f"no such user: {user_id}")
    return f'{{"id": "{user_id}", "name": "{user_id.capitalize()}"}}'


# ---------------------------------------------------------------- prompts and completion


@server.prompt(title="Greeting", description="Greet someone in a style.")
def greet(name: str, style: str = "friendly") -> str:
    return f"Write a {style} greeting for {name}."


@server.prompt(description="A two-message conversation about some code.")
def review_code(code: str, language: str = "python") -> list[Message]:
    return [
        UserMessage(f"Review this {language} code:\n{code}"),
        AssistantMessage("Looking at it now."),
    ]


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "style":
        values = [s for s in STYLES if s.startswith(argument.value)]
    elif (
        isinstance(ref, ResourceTemplateReference)
        and ref.uri == USER_TEMPLATE
        and argument.name == "user_id"
    ):
        values = [u for u in USERS if u.startswith(argument.value)]
    else:
        return None
    return Completion(values=values, total=len(values), has_more=False)


# ---------------------------------------------------------------- low-level handlers

_lowlevel = server._lowlevel_server


async def _set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    # Registering it makes the low-level server advertise the `logging` capability.
    _min_level["level"] = params.level
    return EmptyResult()


async def _subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
    _subscribed.add(str(params.uri))
    return EmptyResult()


async def _unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
    _subscribed.discard(str(params.uri))
    return EmptyResult()


_lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)
_lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, _subscribe)
_lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, _unsubscribe)


async def main() -> None:
    options = _lowlevel.create_initialization_options(
        NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
    )
    async with stdio_server() as (read_stream, write_stream):
        await _lowlevel.run(read_stream, write_stream, options)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        anyio.run(functools.partial(server.run_streamable_http_async, port=int(sys.argv[2])))
    elif sys.argv[1:2] == ["--sse"]:  # the legacy HTTP+SSE transport: GET /sse, POST /messages/
        anyio.run(functools.partial(server.run_sse_async, port=int(sys.argv[2])))
    else:
        anyio.run(main)
