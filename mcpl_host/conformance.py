"""The client the official MCP conformance suite drives: ``python -m mcpl_host.conformance URL``.

The suite (``@modelcontextprotocol/conformance``) starts a test server, runs this with
the server's URL as the last argument and names the scenario in
``MCP_CONFORMANCE_SCENARIO``; this connects over Streamable HTTP and does what the
scenario asks, through the public API only, then exits 0 (1 with the error on stderr).
The suite judges what reached its server. ``scripts/conformance.py`` runs the scenarios
of the test script (docs/http.md).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import trio

from . import Connection, ElicitParams, ElicitResult, HookContext, HttpTarget, McplHostError
from .auth.flow import OAuth
from .auth.grants import ClientCredentials, EnterpriseManaged, JwtBearer

__all__ = ["SCENARIOS", "main"]


async def _initialize(conn: Connection) -> None:
    """The handshake is the scenario: connecting did it."""


async def _tools_call(conn: Connection) -> None:
    tools = await conn.list_tools()
    name = next((t.name for t in tools if t.name == "add_numbers"), tools[0].name)
    await conn.call_tool(name, {"a": 2, "b": 3})


async def _call_first_tool(conn: Connection) -> None:
    """List the tools and call the first (the scenario's own) without arguments."""
    tools = await conn.list_tools()
    await conn.call_tool(tools[0].name, {})


async def _json_schema_echo(conn: Connection) -> None:
    """Send a tool's 2020-12 input schema back as it was listed: nothing dropped."""
    tools = {tool.name: tool for tool in await conn.list_tools()}
    focal = tools["json_schema_2020_12_tool"]
    await conn.call_tool("json_schema_echo", {"schema": focal.input_schema})


async def _request_metadata(conn: Connection) -> None:
    """Connecting (server/discover, refused once by the scenario) and one listing: each
    request's _meta and MCP-Protocol-Version are what the scenario reads."""
    await conn.list_tools()


async def _standard_headers(conn: Connection) -> None:
    """One of each method the scenario reads Mcp-Method (and Mcp-Name) on."""
    for tool in await conn.list_tools():
        await conn.call_tool(tool.name, {})
    for resource in await conn.list_resources():
        await conn.read_resource(resource.uri)
    for prompt in await conn.list_prompts():
        await conn.get_prompt(prompt.name)


async def _scenario_tool_calls(conn: Connection) -> None:
    """The calls the scenario's context names (``toolCalls``), after a listing (which
    tells the connection each tool's x-mcp-header annotations)."""
    await conn.list_tools()
    for call in _context().get("toolCalls") or []:
        await conn.call_tool(call["name"], call.get("arguments") or {})


async def _call_listed_tools(conn: Connection) -> None:
    """Call every tool the listing kept, each with a string for each required argument:
    the tools left out for malformed x-mcp-header annotations are never called."""
    for tool in await conn.list_tools():
        required = tool.input_schema.get("required") or []
        await conn.call_tool(tool.name, dict.fromkeys(required, "us-east1"))


async def _list_tools(conn: Connection) -> None:
    await conn.list_tools()


def _context() -> dict[str, Any]:
    """What the suite passes a scenario's client beside the URL (MCP_CONFORMANCE_CONTEXT)."""
    text = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    found = json.loads(text) if text else {}
    return found if isinstance(found, dict) else {}


async def _request_state(conn: Connection) -> None:
    """SEP-2322: each tool of the scenario once, in its order. Two answer
    ``input_required`` (with and without ``requestState``); the unrelated one, called
    between them, must carry nothing of theirs; the last has no ``resultType``."""
    for tool in await conn.list_tools():
        await conn.call_tool(tool.name, {})


async def accept_with_defaults(params: ElicitParams, _context: HookContext) -> ElicitResult:
    """An elicitation answered as a user who accepts every default the form offers."""
    properties = (params.requested_schema or {}).get("properties") or {}
    content = {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, dict) and "default" in spec
    }
    return ElicitResult(action="accept", content=content)


SCENARIOS: dict[str, Callable[[Connection], Awaitable[None]]] = {
    "initialize": _initialize,
    "tools_call": _tools_call,
    "elicitation-sep1034-client-defaults": _call_first_tool,
    "sse-retry": _call_first_tool,
    "json-schema-2020-12-preservation": _json_schema_echo,
    "request-metadata": _request_metadata,
    "http-standard-headers": _standard_headers,
    "http-custom-headers": _scenario_tool_calls,
    "http-invalid-tool-headers": _call_listed_tools,
    "json-schema-ref-no-deref": _list_tools,
    "sep-2322-client-request-state": _request_state,
}


async def follow_once(url: str) -> str:
    """The authorization endpoint, fetched as a browser would up to its first redirect:
    the suite's answers at once with a 302 to the redirect URI (code, state, iss).
    Test-only: a real user agent is the person's (``mcpl-host auth login``)."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=10.0) as client:
        response = await client.get(url)
    location: str | None = response.headers.get("location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise RuntimeError(f"the authorization endpoint answered {response.status_code}")
    return location


def _auth_for(scenario: str) -> OAuth:
    """The OAuth an auth scenario needs, from what its context passes."""
    context = _context()
    if scenario in ("auth/client-credentials-basic", "auth/client-credentials-jwt"):
        return OAuth(
            grant=ClientCredentials(
                context["client_id"],
                client_secret=context.get("client_secret"),
                private_key_pem=context.get("private_key_pem"),
                algorithm=context.get("signing_algorithm") or "ES256",
            )
        )
    if scenario == "auth/enterprise-managed-authorization":
        id_token = str(context["idp_id_token"])
        return OAuth(
            grant=EnterpriseManaged(
                idp_token_endpoint=context["idp_token_endpoint"],
                id_token=lambda: _constant(id_token),
                idp_client_id=context["idp_client_id"],
                client_id=context["client_id"],
                client_secret=context.get("client_secret"),
            )
        )
    if scenario.startswith("auth/wif"):
        assertion = str(context["valid_jwt"])
        return OAuth(
            grant=JwtBearer(lambda: _constant(assertion), client_id=context.get("client_id"))
        )
    return OAuth(
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url="https://conformance-test.local/client-metadata.json",
        redirect_uri="http://localhost:3000/callback",
        client_name="mcpl-host conformance",
        authorize=follow_once,
        dpop=scenario.startswith("auth/dpop"),
    )


async def _constant(value: str) -> str:
    return value


async def _auth_session(conn: Connection) -> None:
    """What the SDK's reference client does on every auth scenario: list the tools and
    call the first."""
    tools = await conn.list_tools()
    if tools:
        await conn.call_tool(tools[0].name, {})


async def run(url: str, scenario: str) -> None:
    act = SCENARIOS.get(scenario, _auth_session)
    options: dict[str, Any] = {"request_timeout": 20.0}
    if scenario.startswith(("elicitation", "sep-2322")):
        options["elicitation"] = accept_with_defaults
    auth = _auth_for(scenario) if scenario.startswith("auth/") else None
    target = HttpTarget(url, auth=auth)
    async with Connection(target, name=f"conformance:{scenario}", **options) as conn:
        await act(conn)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if not args or (scenario not in SCENARIOS and not scenario.startswith("auth/")):
        known = ", ".join(SCENARIOS)
        print(
            f"usage: MCP_CONFORMANCE_SCENARIO=<{known}> python -m mcpl_host.conformance URL",
            file=sys.stderr,
        )
        return 2
    try:
        trio.run(run, args[-1], scenario)
    except McplHostError as exc:
        print(f"conformance client: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
