"""The connection's table of the tools' x-mcp-header annotations (driver/tool_headers.py)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from mcpl_host.driver.tool_headers import ToolHeaderTable


def page(*tools: dict[str, Any]) -> msgspec.Raw:
    return msgspec.Raw(json.dumps({"tools": list(tools)}).encode())


def tool(name: str, header: Any, kind: str = "string") -> dict[str, Any]:
    prop = {"type": kind, "x-mcp-header": header}
    return {"name": name, "inputSchema": {"type": "object", "properties": {"v": prop}}}


def learn(table: ToolHeaderTable, raw: msgspec.Raw, *, first_page: bool = True) -> list[str]:
    return [name for name, _ in table.learn(raw, first_page=first_page, safe=repr)]


def test_valid_invalid_and_plain_tools() -> None:
    table = ToolHeaderTable()
    plain = {"name": "plain", "inputSchema": {"type": "object"}}
    assert learn(table, page(tool("ok", "Region"), tool("bad", "A B"), plain)) == ["bad"]
    plan = table.plan("ok")
    assert plan is not None
    assert plan.params == ((("v",), "Region"),)
    assert table.rejected("ok") is None
    assert table.rejected("bad") is not None
    assert table.plan("plain") is None
    assert table.rejected("plain") is None
    assert table.plan(5) is None  # a name that is not a string is no tool
    assert table.rejected(None) is None


def test_a_verdict_is_reported_once_and_a_first_page_replaces_what_was_known() -> None:
    table = ToolHeaderTable()
    assert learn(table, page(tool("bad", "A B"))) == ["bad"]
    assert learn(table, page(tool("bad", "A B"))) == []  # the same verdict: no new warning
    assert learn(table, page(tool("bad", "N", "number"))) == ["bad"]  # another reason
    assert learn(table, page(tool("other", "X"))) == []
    assert table.rejected("bad") is None  # not on the new first page
    assert learn(table, page(tool("late", ":")), first_page=False) == ["late"]
    assert table.plan("other") is not None  # a later page adds


def test_a_tool_fixed_by_the_server_is_usable_again() -> None:
    table = ToolHeaderTable()
    learn(table, page(tool("t", "A B")))
    learn(table, page(tool("t", "AB")), first_page=False)
    assert table.rejected("t") is None
    assert table.plan("t") is not None


def test_an_escaped_key_is_the_same_key() -> None:
    table = ToolHeaderTable()
    raw = msgspec.Raw(
        b'{"tools":[{"name":"t","inputSchema":{"properties":{"v":'
        b'{"type":"number","x-mcp-h\\u0065ader":"N"}}}}]}'
    )
    assert learn(table, raw) == ["t"]


def test_a_result_that_is_no_listing_teaches_nothing() -> None:
    table = ToolHeaderTable()
    learn(table, page(tool("bad", "A B")))
    assert learn(table, msgspec.Raw(b'{"tools": 5}')) == []
    assert table.rejected("bad") is None  # a first page, even refused, makes it stale
    assert learn(table, msgspec.Raw(b"not json"), first_page=False) == []


def test_a_listing_nested_past_the_decoder_teaches_nothing() -> None:
    # The typed client refuses such a listing too (ResultDecodeError): no tool of it is
    # ever offered, so none needs a verdict.
    table = ToolHeaderTable()
    deep = b'{"x-mcp-header":"D","a":' + b"[" * 5000 + b"]" * 5000 + b"}"
    raw = msgspec.Raw(b'{"tools":[{"name":"t","inputSchema":' + deep + b"}]}")
    assert table.learn(raw, first_page=True, safe=repr) == []
    assert table.rejected("t") is None
    assert table.plan("t") is None
