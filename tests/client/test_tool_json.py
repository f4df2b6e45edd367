"""A typed Tool keeps its schemas, execution and _meta as JSON, decoded on each use."""

from __future__ import annotations

import gc
import tracemalloc

import msgspec
import pytest

from mcpl_host import ProtocolError, Tool
from mcpl_host.client.decode import ResultDecodeError, decode_result


def tool(json: bytes) -> Tool:
    return decode_result(msgspec.Raw(json), Tool, method="tools/list", server="s")


def test_the_members_decode_on_use_as_they_were_listed() -> None:
    listed = tool(
        b'{"name":"t","inputSchema":{"type":"object","properties":{"a":{}}},'
        b'"outputSchema":{"type":"object"},"execution":{"taskSupport":"optional"},'
        b'"_meta":{"k":[1]}}'
    )
    assert listed.input_schema == {"type": "object", "properties": {"a": {}}}
    assert listed.output_schema == {"type": "object"}
    assert listed.execution == {"taskSupport": "optional"}
    assert listed.meta == {"k": [1]}
    assert listed.input_schema is not listed.input_schema  # anew each time


def test_absent_members_read_as_the_revisions_default() -> None:
    listed = tool(b'{"name":"t","outputSchema":null}')
    assert listed.input_schema == {"type": "object"}
    assert (listed.output_schema, listed.execution, listed.meta) == (None, None, None)
    assert msgspec.json.encode(listed) == b'{"name":"t","outputSchema":null}'


@pytest.mark.parametrize(
    "member", [b'"inputSchema":5', b'"inputSchema":null', b'"outputSchema":[]', b'"_meta":"x"']
)
def test_a_member_that_is_not_an_object_fails_the_decode(member: bytes) -> None:
    with pytest.raises(ResultDecodeError):
        tool(b'{"name":"t",' + member + b"}")


def test_a_schema_string_that_is_not_utf8_is_a_typed_error_on_use() -> None:
    listed = tool(b'{"name":"t","inputSchema":{"title":"\xff"}}')
    with pytest.raises(ProtocolError):
        _ = listed.input_schema


def test_a_listed_tool_holds_about_its_bytes_however_its_schema_is_shaped() -> None:
    """Decoded, a schema of empty arrays costs about thirty times its bytes."""
    schema = b'{"type":"object","x":[' + b",".join([b"[]"] * 200_000) + b"]}"
    json = b'{"name":"t","inputSchema":' + schema + b"}"
    gc.collect()
    tracemalloc.start()
    try:
        listed = tool(json)
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert listed.name == "t"
    assert held < 2 * len(json)
