"""A real MCP server on the official Python SDK's low-level API (`mcp==2.3.0`), for interop tests.

Run it over stdio::

    python tests/interop/sdk_lowlevel_server.py

It exists for results the high-level `MCPServer` will not send: tools whose `structuredContent`
breaks their declared `outputSchema`. The low-level `Server` does no output validation: the
handler's `CallToolResult` is only checked against the protocol's own result shape, so every
tool below goes out on the wire exactly as written. Only `valid` and `declared_error` are correct.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

INTEGER_RESULT: dict[str, Any] = {
    "type": "object",
    "properties": {"result": {"type": "integer"}},
    "required": ["result"],
}
POINT: dict[str, Any] = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
    "required": ["x", "y"],
    "additionalProperties": False,
}
NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}

# name -> (description, outputSchema, structuredContent or None, isError)
TOOLS: dict[str, tuple[str, dict[str, Any], dict[str, Any] | None, bool]] = {
    "valid": ("Correct: result 5 matches the schema.", INTEGER_RESULT, {"result": 5}, False),
    "wrong_type": (
        "result is a string, the schema says integer.",
        INTEGER_RESULT,
        {"result": "five"},
        False,
    ),
    "missing_required": ("y is required but missing.", POINT, {"x": 1}, False),
    "extra_property": (
        "z is not allowed (additionalProperties false).",
        POINT,
        {"x": 1, "y": 2, "z": 3},
        False,
    ),
    "no_structured": (
        "An outputSchema, but no structuredContent in the result.",
        INTEGER_RESULT,
        None,
        False,
    ),
    "declared_error": (
        "Correct: isError true, so no structuredContent is owed.",
        INTEGER_RESULT,
        None,
        True,
    ),
}


async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
    return ListToolsResult(
        tools=[
            Tool(name=name, description=desc, input_schema=NO_ARGS, output_schema=schema)
            for name, (desc, schema, _, _) in TOOLS.items()
        ]
    )


async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
    if params.name not in TOOLS:
        return CallToolResult(
            content=[TextContent(type="text", text=f"Unknown tool: {params.name}")], is_error=True
        )
    _, _, structured, is_error = TOOLS[params.name]
    if is_error:
        text = "failed on purpose"
    elif structured is None:
        text = "no structuredContent"
    else:
        text = json.dumps(structured)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=is_error,
    )


server: Server[Any] = Server(
    "mcpl-interop-sdk-lowlevel-server",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
