"""The pure rules of 2026-07-28 results: resultType, input_required, the retry's params."""

from __future__ import annotations

import msgspec
import pytest
from msgspec import Raw

from mcpl_host.protocol.results import ResultDecodeError, input_required, retry_params


def test_a_missing_or_complete_result_type_is_complete() -> None:
    assert input_required(Raw(b'{"content":[]}'), "tools/call") is None
    assert input_required(Raw(b'{"resultType":"complete","tools":[]}'), "tools/list") is None


@pytest.mark.parametrize(
    ("body", "method", "why"),
    [
        (b'{"resultType":"partial"}', "tools/call", "unknown resultType 'partial'"),
        (b'{"resultType":7}', "tools/call", "Expected `str`"),
        (b"[]", "tools/call", "Expected `object`"),
        (
            b'{"resultType":"input_required","requestState":"s"}',
            "tools/list",
            "not allowed here",
        ),
        (b'{"resultType":"input_required"}', "prompts/get", "neither inputRequests nor"),
        (b'{"resultType":"input_required","requestState":5}', "tools/call", "not a string"),
        (
            b'{"resultType":"input_required","inputRequests":{"k":{"params":{}}}}',
            "resources/read",
            "method",
        ),
    ],
)
def test_invalid_results(body: bytes, method: str, why: str) -> None:
    with pytest.raises(ResultDecodeError, match=why) as caught:
        input_required(Raw(body), method, server="s")
    assert bytes(caught.value.raw) == body


def test_input_required_keeps_the_state_token_and_params_as_written() -> None:
    body = (
        b'{"resultType":"input_required","requestState":"a\\u00e9\\/b",'
        b'"inputRequests":{"k":{"method":"roots/list"},'
        b'"e":{"method":"elicitation/create","params":{"message":"m"}}}}'
    )
    found = input_required(Raw(body), "tools/call")
    assert found is not None
    assert bytes(found.state or b"") == b'"a\\u00e9\\/b"'
    assert {k: (r.method, bytes(r.params)) for k, r in found.requests.items()} == {
        "k": ("roots/list", b"{}"),
        "e": ("elicitation/create", b'{"message":"m"}'),
    }
    null_state = input_required(
        Raw(
            b'{"resultType":"input_required","requestState":null,"inputRequests":{"k":'
            b'{"method":"roots/list"}}}'
        ),
        "tools/call",
    )
    assert null_state is not None
    assert null_state.state is None


def test_retry_params_echo_the_state_byte_for_byte_and_omit_what_is_absent() -> None:
    params = {"name": "t", "arguments": {"a": 1}, "requestState": "old"}
    again = retry_params(params, {"k": Raw(b'{"roots":[]}')}, Raw(b'"a\\u00e9"'))
    assert msgspec.json.encode(again) == (
        b'{"name":"t","arguments":{"a":1},"inputResponses":{"k":{"roots":[]}},'
        b'"requestState":"a\\u00e9"}'
    )
    assert params["requestState"] == "old"  # the original params are not changed
    assert retry_params({"name": "t"}, {}, None) == {"name": "t"}


def test_the_tasks_extensions_task_is_known_for_tools_call_only() -> None:
    # The host declares io.modelcontextprotocol/tasks on every 2026-07-28 request: a
    # tools/call the server runs as a task answers resultType "task", read by the caller.
    raw = Raw(b'{"resultType":"task","taskId":"t1","status":"working"}')
    assert input_required(raw, "tools/call") is None
    with pytest.raises(ResultDecodeError, match="unknown resultType"):
        input_required(raw, "prompts/get")
