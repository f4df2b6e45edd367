"""The HTTP headers a 2026-07-28 request carries, derived from the request itself.

On the stateless revision every Streamable HTTP POST names what it carries in headers a
server (or a proxy in front of it) can route on without reading the body (MCP
2026-07-28, ``basic/transports`` "Standard MCP request headers" and "Custom headers
from tool parameters"):

- ``MCP-Protocol-Version``: the request's ``_meta``
  ``io.modelcontextprotocol/protocolVersion`` (the two must agree, else -32020);
- ``Mcp-Method``: the method, of every request and notification;
- ``Mcp-Name``: ``params.name`` of ``tools/call`` and ``prompts/get``, ``params.uri``
  of ``resources/read``;
- ``Mcp-Param-{X}``: for ``tools/call``, each argument whose property in the tool's
  ``inputSchema`` says ``"x-mcp-header": "X"``.

Values are sent as they are when they are printable ASCII with no space at either end,
else as ``=?base64?<base64 of the UTF-8>?=`` (a value that already looks like that form is
encoded too, so the server decodes exactly what was meant). Booleans are ``true`` and
``false``, integers their decimal digits; an argument that is null, absent, or not a
string, integer or boolean gives no header.

A tool whose annotations are malformed must not be used at all (``server/tools``
"x-mcp-header"): :func:`tool_headers` says why, and the connection drops the tool from
its listings and refuses to call it. Everything here is pure: values in, headers out.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .discover import PROTOCOL_VERSION
from .profiles import PROFILES
from .redact import value_kind

__all__ = [
    "METHOD_HEADER",
    "NAME_HEADER",
    "PARAM_PREFIX",
    "VERSION_HEADER",
    "X_MCP_HEADER",
    "InvalidToolHeaders",
    "ToolHeaders",
    "encode_value",
    "header_value",
    "request_headers",
    "stateless_revision",
    "tool_headers",
]

VERSION_HEADER: Final = "MCP-Protocol-Version"
METHOD_HEADER: Final = "Mcp-Method"
NAME_HEADER: Final = "Mcp-Name"
PARAM_PREFIX: Final = "Mcp-Param-"
X_MCP_HEADER: Final = "x-mcp-header"

# The params member each name-bearing method mirrors into Mcp-Name.
_NAMED: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}

# RFC 9110 section 5.6.2: the characters of a token, all a header name may hold. No
# space, colon, control character or anything past ASCII.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRINTABLE: Final = re.compile(r"[\x20-\x7e]*")
_ENCODED: Final = re.compile(r"=\?base64\?.*\?=", re.DOTALL)
# "number" is left out on purpose: MCP forbids it, since a float's text differs between
# implementations and the server could not compare it with the body.
_PRIMITIVE: Final = frozenset({"string", "integer", "boolean"})

# JSON Schema 2020-12 keywords whose values are subschemas. Crossing any of them leaves
# the chain of ``properties`` an annotation must sit on; ``$ref`` is not followed (a
# reference is never fetched, nor resolved, here), and instance data (``default``,
# ``enum``, ``const``, ``examples``) is not schema, so an "x-mcp-header" key inside it
# means nothing.
_ONE_SCHEMA: Final = frozenset(
    {
        "items",
        "contains",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
_SCHEMA_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAP: Final = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})


@dataclass(frozen=True, slots=True)
class ToolHeaders:
    """A tool's valid annotations: for each, the path of ``properties`` names from the
    schema's root to the annotated property, and the header's ``X`` of ``Mcp-Param-X``."""

    params: tuple[tuple[tuple[str, ...], str], ...]


@dataclass(frozen=True, slots=True)
class InvalidToolHeaders:
    """A tool that must not be used; ``reason`` is in the host's words (property names
    and header names shown through ``safe``)."""

    reason: str


def _show(text: str) -> str:
    return repr(text[:64] + ("..." if len(text) > 64 else ""))


def _positions(schema: Any) -> Iterator[tuple[tuple[str, ...] | None, dict[str, Any]]]:
    """Every subschema of ``schema`` with its ``properties`` path (None once another
    applicator was crossed). An explicit stack: a schema nested a million deep is walked,
    not a recursion error."""
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    stack.append(((*path, name) if path is not None else None, sub))
            elif key in _ONE_SCHEMA:
                stack.append((None, value))
            elif key in _SCHEMA_LIST and isinstance(value, list):
                stack.extend((None, sub) for sub in value)
            elif key in _SCHEMA_MAP and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())


def tool_headers(
    input_schema: Any, safe: Callable[[str], str] = _show
) -> ToolHeaders | InvalidToolHeaders | None:
    """What a tool's ``inputSchema`` asks to be mirrored into headers: None when nothing
    (no annotation anywhere), else its :class:`ToolHeaders`, or why the tool is invalid.

    An annotation is valid on a property reached from the root through ``properties``
    alone, whose ``type`` is ``"string"``, ``"integer"`` or ``"boolean"``, when it is a
    non-empty token (RFC 9110: no space, colon, control character or non-ASCII) used by
    no other property of the schema, compared without case. ``safe`` shows a peer's
    names in the reason (the connection's redactor, which escapes and cuts).
    """
    found: list[tuple[tuple[str, ...], str]] = []
    seen: dict[str, tuple[str, ...]] = {}
    for path, node in _positions(input_schema):
        if X_MCP_HEADER not in node:
            continue
        if not path:
            return InvalidToolHeaders(
                f"{X_MCP_HEADER} outside the properties of the input schema (only a "
                "property reached through properties alone may carry one)"
            )
        where = safe(".".join(path))
        name = node[X_MCP_HEADER]
        if not isinstance(name, str):
            return InvalidToolHeaders(
                f"property {where}: {X_MCP_HEADER} must be a string, not {value_kind(name)}"
            )
        if not name:
            return InvalidToolHeaders(f"property {where}: an empty {X_MCP_HEADER}")
        if not _TOKEN.fullmatch(name):
            return InvalidToolHeaders(
                f"property {where}: {X_MCP_HEADER} {safe(name)} is not a header name (only "
                "ASCII letters, digits and !#$%&'*+-.^_`|~; no space, colon or control character)"
            )
        declared = node.get("type")
        if not isinstance(declared, str) or declared not in _PRIMITIVE:
            shown = safe(declared) if isinstance(declared, str) else value_kind(declared)
            return InvalidToolHeaders(
                f"property {where}: {X_MCP_HEADER} is allowed on a string, integer or "
                f"boolean property only, not on type {shown}"
            )
        folded = name.lower()
        if folded in seen:
            return InvalidToolHeaders(
                f"property {where}: {X_MCP_HEADER} {safe(name)} is also the header of "
                f"property {safe('.'.join(seen[folded]))} (header names ignore case)"
            )
        seen[folded] = path
        found.append((path, name))
    if not found:
        return None
    return ToolHeaders(tuple(sorted(found)))


def encode_value(text: str) -> str:
    """``text`` as a header value: itself when it is printable ASCII with no space at
    either end and does not look encoded, else ``=?base64?...?=`` of its UTF-8."""
    if _PRINTABLE.fullmatch(text) and text == text.strip(" ") and not _ENCODED.fullmatch(text):
        return text
    # errors="surrogatepass": a lone surrogate (JSON can carry one) still has bytes.
    raw = text.encode("utf-8", errors="surrogatepass")
    return f"=?base64?{base64.b64encode(raw).decode('ascii')}?="


def header_value(value: Any) -> str | None:
    """An argument's header value, or None when it gives no header (null, an object, an
    array, a float that is not a whole number, an integer of more than 4,300 digits)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        try:
            return str(value)
        except ValueError:  # past Python's int-to-text digit limit: no header holds it
            return None
    if isinstance(value, float) and value.is_integer():
        # 42.0 is the integer 42 in JSON Schema: sent as its digits.
        return str(int(value))
    if isinstance(value, str):
        return encode_value(value)
    return None


def stateless_revision(params: Any) -> str | None:
    """The stateless revision a request's ``_meta`` names, else None (a handshake-era
    request, which gets none of these headers)."""
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
    profile = PROFILES.get(version) if isinstance(version, str) else None
    return version if profile is not None and profile.stateless else None


def request_headers(
    method: str, params: Any, tool: ToolHeaders | None = None, *, revision: str | None = None
) -> dict[str, str]:
    """The headers of one POST carrying ``method`` with ``params`` (decoded JSON).

    A request names its revision in ``_meta``; a notification has none, so the revision
    in force is given as ``revision``. Nothing (``{}``) when neither names a stateless
    revision. ``tool`` is the called tool's :class:`ToolHeaders` for ``tools/call``.
    """
    version = stateless_revision(params) or revision
    if version is None or not PROFILES[version].stateless:
        return {}
    headers = {VERSION_HEADER: version, METHOD_HEADER: encode_value(method)}
    member = _NAMED.get(method)
    named = params.get(member) if member is not None and isinstance(params, dict) else None
    if isinstance(named, str):
        headers[NAME_HEADER] = encode_value(named)
    if tool is not None and method == "tools/call" and isinstance(params, dict):
        arguments = params.get("arguments")
        for path, name in tool.params:
            value = header_value(_at(arguments, path))
            if value is not None:
                headers[PARAM_PREFIX + name] = value
    return headers


def _at(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node
