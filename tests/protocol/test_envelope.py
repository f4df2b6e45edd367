"""DESIGN 3.2: one classification rule, bytes in, decisions out."""

from __future__ import annotations

import msgspec
import pytest
from msgspec import Raw

from mcpl_host.protocol.envelope import (
    Batch,
    Ignored,
    InvalidRequest,
    Notification,
    Request,
    Response,
    classify_entry,
    decode_line,
)


def test_response_with_integer_id_keeps_result_raw() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}')
    assert isinstance(item, Response)
    assert item.id == 7
    assert item.id_kind == "integer"
    assert item.result is not None
    assert bytes(item.result) == b'{"content":[]}'
    assert item.error is None
    assert item.jsonrpc2


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (b'{"id":null,"result":{}}', "null"),
        (b'{"id":{"nested":[1]},"result":1}', "an object"),
        (b'{"id":[1],"error":{}}', "an array"),
        (b'{"id":true,"result":1}', "a boolean"),
        (b'{"id":1.5,"result":1}', "a number written with a fraction or an exponent"),
        (b'{"id":9007199254740993,"result":1}', "an integer beyond ±(2^53−1)"),
    ],
)
def test_any_id_without_method_is_a_response_that_matches_nothing(line: bytes, kind: str) -> None:
    item = decode_line(line)
    assert isinstance(item, Response)
    assert item.id is None
    assert item.id_kind == kind


def test_string_id_response() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","id":"a-1","error":{"code":1,"message":"m"}}')
    assert item == Response("a-1", "string", None, Raw(b'{"code":1,"message":"m"}'), True)


def test_a_response_with_an_unusable_id_keeps_its_members() -> None:
    # It matches no request, but what it said is still there to be logged.
    item = decode_line(b'{"jsonrpc":"2.0","id":{"a":1},"result":5,"error":{"code":1}}')
    assert item == Response(None, "an object", Raw(b"5"), Raw(b'{"code":1}'), True)
    bare = decode_line(b'{"id":[1]}')
    assert bare == Response(None, "an array", None, None, False)


def test_an_id_less_error_keeps_a_result_member_too() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","error":{"code":1,"message":"m"},"result":7}')
    assert item == Response(None, "absent", Raw(b"7"), Raw(b'{"code":1,"message":"m"}'), True)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":3,"result":{"ok":true},"error":null}',
        b'{"jsonrpc":"2.0","id":3,"error" : null ,"result":{"ok":true}}',
        # the untyped path (a member of the wrong type elsewhere) reads it the same way
        b'{"jsonrpc":2,"id":3,"result":{"ok":true},"error":null}',
    ],
)
def test_a_null_error_member_beside_a_result_is_no_error(line: bytes) -> None:
    # JSON-RPC: a response has result or error; "error": null says there is none.
    item = decode_line(line)
    assert isinstance(item, Response)
    assert item.id == 3
    assert item.error is None
    assert item.result is not None
    assert bytes(item.result) == b'{"ok":true}'


def test_a_null_error_member_alone_answers_nothing() -> None:
    # Without an id it names no request either: not JSON-RPC, ignored.
    assert isinstance(decode_line(b'{"jsonrpc":"2.0","error":null}'), Ignored)
    # With an id it is a response with neither member (the driver's protocol error).
    item = decode_line(b'{"jsonrpc":"2.0","id":4,"error":null}')
    assert isinstance(item, Response)
    assert item.error is None
    assert item.result is None
    assert not item.names_no_request


def test_error_without_id_and_jsonrpc_2_is_a_response_naming_no_request() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}')
    assert isinstance(item, Response)
    assert item.id_kind == "absent"
    assert item.names_no_request


def test_null_id_error_names_no_request_only_with_jsonrpc_2() -> None:
    with_version = decode_line(b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}')
    without = decode_line(b'{"id":null,"error":{"code":1,"message":"x"}}')
    assert isinstance(with_version, Response)
    assert with_version.names_no_request
    assert isinstance(without, Response)
    assert not without.names_no_request


@pytest.mark.parametrize(
    "line",
    [
        b'{"error":{"code":1,"message":"a log line"}}',  # no jsonrpc: a log line
        b'{"jsonrpc":"1.0","error":{"code":1}}',
        b'{"jsonrpc":"2.0","result":{}}',  # a result with no id answers nothing
        b"{}",
        b'{"level":"info","msg":"server started"}',
    ],
)
def test_objects_that_are_not_json_rpc_are_ignored(line: bytes) -> None:
    assert decode_line(line) == Ignored("no method and no id: not a JSON-RPC message")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"server listening on 8080", "not JSON"),
        (b'{"id":1', "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"1 2", "not JSON"),
        (b'{"id":true}x', "not JSON"),
        (b"42", "JSON that is not an object or an array: a number"),
        (b'"hello"', "JSON that is not an object or an array: a string"),
        (b"null", "JSON that is not an object or an array: null"),
        (b"true", "JSON that is not an object or an array: a boolean"),
        (b"false", "JSON that is not an object or an array: a boolean"),
        # The kind is read from the first token, after JSON's own whitespace.
        (b' \t\r\n "x"', "JSON that is not an object or an array: a string"),
    ],
)
def test_lines_that_are_not_objects_are_ignored_with_a_reason(line: bytes, reason: str) -> None:
    assert decode_line(line) == Ignored(reason)


def test_request_with_null_id_is_a_request_not_a_notification() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","id":null,"method":"ping"}')
    assert item == Request("ping", None)


def test_request_keeps_params_raw() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","id":"x","method":"roots/list","params":{"a":[1,2]}}')
    assert isinstance(item, Request)
    assert item.id == "x"
    assert item.params is not None
    assert bytes(item.params) == b'{"a":[1,2]}'


def test_no_id_member_is_a_notification() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}')
    assert isinstance(item, Notification)
    assert item.method == "notifications/message"


def test_request_jsonrpc_member_is_not_checked() -> None:
    # Only an error without an id is judged by its jsonrpc member.
    assert decode_line(b'{"jsonrpc":2,"id":3,"method":"ping"}') == Request("ping", 3)
    assert decode_line(b'{"id":3,"method":"ping"}') == Request("ping", 3)


@pytest.mark.parametrize(
    ("token", "valid"),
    [
        (b"0", True),
        (b"-0", True),
        (b"9007199254740991", True),
        (b"-9007199254740991", True),
        (b"9007199254740992", False),
        (b"9007199254740993", False),
        (b"-9007199254740992", False),
        (b"1e400", False),
        (b"1.5", False),
        (b"1.0", False),
        (b"1E2", False),
        (b"-0.0", False),
        (b"123456789012345678901234567890", False),
    ],
)
def test_numeric_ids_are_judged_from_the_wire_token(token: bytes, valid: bool) -> None:
    item = decode_line(b'{"jsonrpc":"2.0","method":"ping","id":' + token + b"}")
    if valid:
        assert isinstance(item, Request)
        assert item.id == int(token)
    else:
        assert isinstance(item, InvalidRequest)
        assert item.answer_id is None
        assert item.method == "ping"
        assert item.message.startswith("Invalid Request: a number id must be an integer")


@pytest.mark.parametrize(
    ("id_token", "kind"),
    [(b'{"nested":[1]}', "an object"), (b"[1]", "an array"), (b"true", "a boolean")],
)
def test_invalid_id_kind_is_named_not_echoed(id_token: bytes, kind: str) -> None:
    item = decode_line(b'{"jsonrpc":"2.0","method":"x","id":' + id_token + b"}")
    assert isinstance(item, InvalidRequest)
    assert item.message == f"Invalid Request: the id must be a string, a number or null, not {kind}"
    assert item.answer_id is None
    assert "nested" not in item.message


@pytest.mark.parametrize(
    ("line", "answer_id"),
    [
        (b'{"jsonrpc":"2.0","method":7,"id":9}', 9),
        (b'{"jsonrpc":"2.0","method":7,"id":"s"}', "s"),
        (b'{"jsonrpc":"2.0","method":7,"id":null}', None),
        (b'{"jsonrpc":"2.0","method":7}', None),
    ],
)
def test_non_string_method_is_invalid_and_carries_a_usable_id(
    line: bytes, answer_id: object
) -> None:
    item = decode_line(line)
    assert isinstance(item, InvalidRequest)
    assert item.faults == ("the method must be a string, not a number",)
    assert item.answer_id == answer_id


def test_json_rpc_spec_example_of_invalid_request() -> None:
    # JSON-RPC 2.0's own example: no id, still answered -32600 with id null.
    item = decode_line(b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}')
    assert isinstance(item, InvalidRequest)
    assert item.answer_id is None


def test_both_faults_are_named() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","method":null,"id":{}}')
    assert isinstance(item, InvalidRequest)
    assert item.message == (
        "Invalid Request: the method must be a string, not null; "
        "the id must be a string, a number or null, not an object"
    )


def test_array_is_a_batch_with_raw_entries() -> None:
    item = decode_line(b'[{"jsonrpc":"2.0","id":1e400,"method":"a"}, 1, {}]')
    assert isinstance(item, Batch)
    entries = item.entries(10)
    assert entries is not None
    assert [bytes(e) for e in entries] == [
        b'{"jsonrpc":"2.0","id":1e400,"method":"a"}',
        b"1",
        b"{}",
    ]
    # the raw token survives into the entry's classification
    assert isinstance(classify_entry(entries[0]), InvalidRequest)


def test_classify_entry_uses_the_same_rule_as_a_line() -> None:
    for line in [
        b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
        b'{"jsonrpc":"2.0","method":"n"}',
        b'{"jsonrpc":"2.0","id":3,"result":{}}',
        b'{"jsonrpc":"2.0","method":1,"id":2}',
        b'{"error":{}}',
    ]:
        assert classify_entry(msgspec.Raw(line)) == decode_line(line)
    assert classify_entry(msgspec.Raw(b"1")) == Ignored("not an object: a number")
