"""The 2026-07-28 request headers, as a pure rule: values in, headers out."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpl_host.protocol.request_headers import (
    InvalidToolHeaders,
    ToolHeaders,
    encode_value,
    header_value,
    request_headers,
    stateless_revision,
    tool_headers,
)

R5 = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": R5}


def b64(text: str) -> str:
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),  # inner spaces are fine
        ("", ""),
        ("SELECT * FROM t", "SELECT * FROM t"),
        ("Hello, 世界", b64("Hello, 世界")),
        (" padded ", b64(" padded ")),
        (" lead", b64(" lead")),
        ("trail ", b64("trail ")),
        ("\tindented", b64("\tindented")),
        ("line1\nline2", b64("line1\nline2")),
        ("line1\r\nline2", b64("line1\r\nline2")),
        ("nul\x00", b64("nul\x00")),
        ("del\x7f", b64("del\x7f")),
        ("=?base64?aGk=?=", b64("=?base64?aGk=?=")),  # looks encoded: encoded again
    ],
)
def test_a_value_goes_as_it_is_or_base64(text: str, sent: str) -> None:
    assert encode_value(text) == sent


def test_a_lone_surrogate_still_has_bytes() -> None:
    assert encode_value("\ud800") == "=?base64?7aCA?="


@given(st.text())
def test_every_value_is_printable_ascii_and_decodes_back(text: str) -> None:
    sent = encode_value(text)
    assert all(0x20 <= ord(c) <= 0x7E for c in sent)
    assert sent == sent.strip(" ")
    if sent.startswith("=?base64?") and sent != text:
        raw = base64.b64decode(sent[len("=?base64?") : -2])
        assert raw.decode("utf-8", errors="surrogatepass") == text
    else:
        assert sent == text


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (-42, "-42"),
        (2**70, str(2**70)),
        (42.0, "42"),  # a whole number written with a fraction is that integer
        ("x y", "x y"),
        (3.14, None),
        (None, None),
        ([1], None),
        ({"a": 1}, None),
    ],
)
def test_argument_values(value: Any, sent: str | None) -> None:
    assert header_value(value) == sent


def test_an_integer_past_pythons_digit_limit_gives_no_header() -> None:
    assert header_value(10**5000) is None  # no header would hold it anyway


def test_the_standard_headers() -> None:
    call = {"_meta": META, "name": "my-tool", "arguments": {}}
    assert request_headers("tools/call", call) == {
        "MCP-Protocol-Version": R5,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "my-tool",
    }
    read = {"_meta": META, "uri": "file:///a%20b"}
    assert request_headers("resources/read", read)["Mcp-Name"] == "file:///a%20b"
    prompt = {"_meta": META, "name": "Grüße"}
    assert request_headers("prompts/get", prompt)["Mcp-Name"] == b64("Grüße")
    assert request_headers("tools/list", {"_meta": META}) == {
        "MCP-Protocol-Version": R5,
        "Mcp-Method": "tools/list",
    }
    # A name that is not a string names nothing.
    assert "Mcp-Name" not in request_headers("tools/call", {"_meta": META, "name": 5})


def test_a_notification_takes_the_revision_in_force() -> None:
    assert request_headers("notifications/cancelled", {"requestId": 1}, revision=R5) == {
        "MCP-Protocol-Version": R5,
        "Mcp-Method": "notifications/cancelled",
    }


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"_meta": {}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": 5}},
        {"_meta": "no"},
        [1, 2],
    ],
)
def test_a_handshake_era_request_gets_none(params: Any) -> None:
    assert stateless_revision(params) is None
    assert request_headers("tools/call", params) == {}
    assert request_headers("tools/call", params, revision="2025-11-25") == {}


def test_mcp_param_headers_from_the_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "method": {"type": "string", "x-mcp-header": "Method"},
            "gone": {"type": "string", "x-mcp-header": "Gone"},
            "nil": {"type": "string", "x-mcp-header": "Nil"},
            "where": {
                "type": "object",
                "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
            },
            "float_val": {"type": "number"},
            "query": {"type": "string"},
        },
    }
    plan = tool_headers(schema)
    assert isinstance(plan, ToolHeaders)
    arguments = {
        "region": "Ünïcode",
        "priority": 42,
        "verbose": False,
        "method": "m",
        "nil": None,
        "where": {"zone": "z1"},
        "float_val": 3.14,
        "query": "q",
    }
    headers = request_headers(
        "tools/call", {"_meta": META, "name": "t", "arguments": arguments}, plan
    )
    assert {k: v for k, v in headers.items() if k.startswith("Mcp-Param-")} == {
        "Mcp-Param-Region": b64("Ünïcode"),
        "Mcp-Param-Priority": "42",
        "Mcp-Param-Verbose": "false",
        "Mcp-Param-Method": "m",  # Mcp-Param-Method, never Mcp-Method
        "Mcp-Param-Zone": "z1",
    }
    assert headers["Mcp-Method"] == "tools/call"
    # Arguments that are not an object, or a plan on another method: nothing mirrored.
    no_args = request_headers("tools/call", {"_meta": META, "name": "t", "arguments": [1]}, plan)
    assert not any(k.startswith("Mcp-Param-") for k in no_args)
    listing = request_headers("tools/list", {"_meta": META, "arguments": arguments}, plan)
    assert not any(k.startswith("Mcp-Param-") for k in listing)


def prop(**spec: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"v": spec}}


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        (prop(type="string", **{"x-mcp-header": ""}), "an empty x-mcp-header"),
        (prop(type="object", **{"x-mcp-header": "Data"}), "not on type 'object'"),
        (prop(type="array", **{"x-mcp-header": "Items"}), "not on type 'array'"),
        (prop(type="null", **{"x-mcp-header": "Nil"}), "not on type 'null'"),
        (prop(type="number", **{"x-mcp-header": "Score"}), "not on type 'number'"),
        (prop(**{"x-mcp-header": "NoType"}), "not on type null"),
        (prop(type=["string", "null"], **{"x-mcp-header": "T"}), "not on type an array"),
        (prop(type="string", **{"x-mcp-header": "My Region"}), "is not a header name"),
        (prop(type="string", **{"x-mcp-header": "Region:Primary"}), "is not a header name"),
        (prop(type="string", **{"x-mcp-header": "Région"}), "is not a header name"),
        (prop(type="string", **{"x-mcp-header": "Region\t1"}), "is not a header name"),
        (prop(type="string", **{"x-mcp-header": "Region\n"}), "is not a header name"),
        (prop(type="string", **{"x-mcp-header": "A(b)"}), "is not a header name"),
        (prop(type="string", **{"x-mcp-header": 5}), "must be a string, not a number"),
        (prop(type="string", **{"x-mcp-header": None}), "must be a string, not null"),
        (
            {
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "Region"},
                    "b": {"type": "string", "x-mcp-header": "Region"},
                }
            },
            "is also the header of",
        ),
        (
            {
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "MyField"},
                    "b": {"type": "string", "x-mcp-header": "myfield"},
                }
            },
            "ignore case",
        ),
        ({"type": "object", "x-mcp-header": "Root"}, "outside the properties"),
        (
            {
                "properties": {
                    "l": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}
                }
            },
            "outside the properties",
        ),
        ({"anyOf": [{"type": "string", "x-mcp-header": "A"}]}, "outside the properties"),
        ({"$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}, "outside the properties"),
    ],
)
def test_every_malformed_annotation_rejects_the_tool(schema: Any, why: str) -> None:
    found = tool_headers(schema)
    assert isinstance(found, InvalidToolHeaders)
    assert why in found.reason


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"type": "object", "properties": {"a": {"type": "string"}}},
        # Instance data and references are not schema: their keys mean nothing here.
        {"properties": {"a": {"type": "string", "default": {"x-mcp-header": "No"}}}},
        {"properties": {"a": {"enum": [{"x-mcp-header": 1}]}}},
        {"properties": {"a": {"$ref": "https://example.com/s.json"}}},
        "not a schema",
        None,
    ],
)
def test_a_schema_without_annotations_mirrors_nothing(schema: Any) -> None:
    assert tool_headers(schema) is None


def test_a_peers_names_reach_the_reason_through_safe() -> None:
    schema = prop(type="string", **{"x-mcp-header": "bad name\x1b[31m"})
    found = tool_headers(schema, safe=lambda text: f"<{len(text)}>")
    assert isinstance(found, InvalidToolHeaders)
    assert "\x1b" not in found.reason
    assert "<13>" in found.reason


def test_a_deep_schema_is_walked_without_recursion() -> None:
    schema: dict[str, Any] = {"type": "string", "x-mcp-header": "Deep"}
    for _ in range(5000):
        schema = {"type": "object", "properties": {"p": schema}}
    found = tool_headers(schema)
    assert isinstance(found, ToolHeaders)
    assert found.params[0][1] == "Deep"
    assert len(found.params[0][0]) == 5000
