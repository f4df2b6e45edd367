"""Issue 17, deliverable 4: no peer input makes the pure core raise.

Each test names one input a hostile server can send and the typed outcome the contract
(docs/protocol.md, "What the core does with hostile input") gives it.
"""

from __future__ import annotations

import msgspec
import pytest

from mcpl_host.protocol.batch import BatchAnswers, BatchPlan, plan_batch
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
from mcpl_host.protocol.errors import InitializeError, ProtocolError
from mcpl_host.protocol.handshake import Failed, Handshake, Skip, describe_error_member
from mcpl_host.protocol.messages import ResultAnswer
from mcpl_host.protocol.profiles import PROFILES
from mcpl_host.protocol.redact import Redactor

BATCHING = ["2024-11-05", "2025-03-26"]
HUGE = b"1" * 5000  # past Python's 4,300-digit limit for int()
DEEP = 5000  # past any depth msgspec follows, whatever the stack in use
NESTED_TOO_DEEP = InvalidRequest(("the message nests arrays and objects too deeply",), None)


def _handshake() -> Handshake:
    return Handshake(
        allowlist=("2025-11-25",), request_id=0, capabilities={}, client_info={"name": "t"}
    )


# -- huge integers -----------------------------------------------------------------------


@pytest.mark.parametrize("sign", [b"", b"-"])
def test_a_request_with_a_5000_digit_id_is_invalid_with_id_null(sign: bytes) -> None:
    item = decode_line(b'{"jsonrpc":"2.0","id":' + sign + HUGE + b',"method":"ping"}')
    assert item == InvalidRequest(
        ("a number id must be an integer within ±(2^53−1), not an integer beyond ±(2^53−1)",),
        None,
        "ping",
    )


def test_a_response_with_a_5000_digit_id_is_unmatched() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","id":' + HUGE + b',"result":{}}')
    assert isinstance(item, Response)
    assert item.id is None
    assert item.id_kind == "an integer beyond ±(2^53−1)"


def test_a_5000_digit_id_in_a_batch_entry_is_that_entry_s_invalid_request() -> None:
    entry = classify_entry(msgspec.Raw(b'{"id":' + HUGE + b',"method":"x"}'))
    assert isinstance(entry, InvalidRequest)
    assert entry.answer_id is None


def test_a_17_digit_id_is_judged_without_int() -> None:
    # The shortest token that cannot be safe; the longest safe one stays valid.
    assert decode_line(b'{"id":10000000000000000,"method":"m"}') == InvalidRequest(
        ("a number id must be an integer within ±(2^53−1), not an integer beyond ±(2^53−1)",),
        None,
        "m",
    )
    assert decode_line(b'{"id":-9007199254740991,"method":"m","x":{}}') == Request(
        "m", -9007199254740991
    )


def test_a_5000_digit_number_alone_is_json_that_is_not_an_object() -> None:
    assert decode_line(HUGE) == Ignored("JSON that is not an object or an array: a number")


# -- deep nesting ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":' + b"[" * DEEP + b"]" * DEEP + b"}",
        b'[{"id":1,"method":"x","params":' + b"[" * DEEP + b"]" * DEEP + b"}]",
    ],
)
def test_nesting_past_the_decoder_s_depth_is_invalid_with_id_null(line: bytes) -> None:
    assert decode_line(line) == NESTED_TOO_DEEP


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * DEEP + b"]" * DEEP + b"}",
        b'{"id":true,"params":' + b"[" * DEEP + b"]" * DEEP + b"}",
        b"[" * DEEP + b"]" * DEEP,
    ],
)
def test_a_line_too_deep_that_names_no_method_is_never_answered(line: bytes) -> None:
    """It cannot be a request: a response is never answered (JSON-RPC)."""
    assert type(decode_line(line)) is Ignored


def test_unclosed_nesting_past_the_depth_is_too_deep() -> None:
    # The decoder stops at its depth before it reaches the end of the line, so it cannot
    # tell this from deep valid JSON: both are "too deeply", never an exception.
    assert type(decode_line(b"[" * DEEP)) is Ignored
    assert decode_line(b'{"method":' + b"[" * DEEP) == NESTED_TOO_DEEP


def test_ordinary_nesting_is_read() -> None:
    item = decode_line(b'{"id":1,"method":"x","params":' + b"[" * 200 + b"]" * 200 + b"}")
    assert isinstance(item, Request)


def test_a_deep_batch_entry_is_that_entry_s_invalid_request() -> None:
    entry = classify_entry(msgspec.Raw(b'{"id":1,"method":"x","params":' + b"[" * DEEP + b"}"))
    assert entry == NESTED_TOO_DEEP


# -- invalid UTF-8 -----------------------------------------------------------------------


@pytest.mark.parametrize("revision", BATCHING)
def test_invalid_utf8_in_one_batch_entry_gets_minus_32600_for_that_entry_only(
    revision: str,
) -> None:
    item = decode_line(
        b'[{"jsonrpc":"2.0","id":1,"method":"\xff"},{"jsonrpc":"2.0","id":2,"method":"ping"},'
        b'{"jsonrpc":"\xc3\x28","id":3,"method":"ping"},{"jsonrpc":"2.0","method":"n\xed\xa0\x80"}]'
    )
    assert isinstance(item, Batch)
    plan = plan_batch(item, PROFILES[revision])
    assert isinstance(plan, BatchPlan)
    assert [type(e) for e in plan.entries] == [
        InvalidRequest,
        Request,
        InvalidRequest,
        InvalidRequest,
    ]
    answers = BatchAnswers(plan)
    answers.fill(1, ResultAnswer(id=2, result={}))
    wire = msgspec.json.decode(answers.encode() or b"")
    assert [(a["id"], a.get("error", {}).get("code")) for a in wire] == [
        (None, -32600),
        (2, None),
        (None, -32600),
        (None, -32600),
    ]
    assert wire[0]["error"]["message"] == (
        "Invalid Request: a batch entry must be a request, a notification or a response (not JSON)"
    )


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":{},"method":"\xff"}',  # typed pass fails on the id first
        b'{"jsonrpc":"\xff","id":1.5,"method":"m"}',
        b'{"id":[],"jsonrpc":"\xe2\x82"}',
        b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
    ],
)
def test_invalid_utf8_in_a_member_the_envelope_reads_is_not_json(line: bytes) -> None:
    assert decode_line(line) == Ignored("not JSON")
    assert classify_entry(msgspec.Raw(line)) == Ignored("not JSON")


def test_invalid_utf8_inside_a_result_leaves_the_response_matched() -> None:
    # The envelope keeps the result raw; its decode (the client's) is where it fails.
    item = decode_line(b'{"jsonrpc":"2.0","id":4,"result":{"text":"\xff"}}')
    assert isinstance(item, Response)
    assert item.id == 4


def test_an_error_member_with_invalid_utf8_is_described_not_shown_as_null() -> None:
    item = decode_line(b'{"jsonrpc":"2.0","id":0,"error":{"code":-1,"message":"\xff"}}')
    step = _handshake().receive(item)
    assert isinstance(step, Failed)
    assert isinstance(step.error, InitializeError)
    assert step.error.code is None
    assert step.error.server_message == "(the error member is not valid JSON: invalid UTF-8)"


# -- lone surrogates -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        (rb"\ud800", "\ufffd"),
        (rb"\uDC00", "\ufffd"),
        (rb"a\ud800b\udfff", "a\ufffdb\ufffd"),
        (rb"\ud83d\ude00\ud800", "\U0001f600\ufffd"),
        (rb"\ud800\ud800\udc00", "\ufffd\U00010000"),
        (rb"\udbff\udc00\udc00", "\U0010fc00\ufffd"),
        (rb"\\ud800\ud800", "\\ud800\ufffd"),  # an escaped backslash, then a real escape
        (rb"\\\ud800", "\\\ufffd"),
        (rb"\"\ud800", '"\ufffd'),
    ],
)
def test_a_lone_surrogate_in_a_result_is_replaced_and_the_response_matched(
    text: bytes, decoded: str
) -> None:
    item = decode_line(b'{"jsonrpc":"2.0","id":1,"result":{"name":"' + text + b'"}}')
    assert isinstance(item, Response)
    assert item.id == 1
    assert item.result is not None
    assert msgspec.json.decode(item.result) == {"name": decoded}


def test_lone_surrogates_anywhere_are_replaced() -> None:
    assert decode_line(rb'{"id":"\ud800","method":"a\udc00"}') == Request("a\ufffd", "\ufffd")
    assert decode_line(rb'{"method":"n","params":["\ud800"]}') == Notification(
        "n", msgspec.Raw(rb'["\ufffd"]')
    )
    item = decode_line(rb'[{"id":1,"method":"x\ud800"}]')
    assert isinstance(item, Batch)
    plan = plan_batch(item, PROFILES["2025-03-26"])
    assert isinstance(plan, BatchPlan)
    assert plan.entries == (Request("x\ufffd", 1),)
    assert classify_entry(msgspec.Raw(rb'{"id":2,"method":"\ud800"}')) == Request("\ufffd", 2)


@pytest.mark.parametrize(
    "line",
    [
        b'{"id":1,"result":"\\ud800"}\x00',  # a NUL: not JSON, the repair changes nothing
        b'{"id":1,"result":"\\ud800"',  # truncated
        b'{"id":1,"result":"\\ud800\\q"}',  # another bad escape
        b'{"id":1,"result":"\\ud8"}',
    ],
)
def test_a_lone_surrogate_does_not_make_other_faults_json(line: bytes) -> None:
    assert decode_line(line) == Ignored("not JSON")


# -- the handshake ---------------------------------------------------------------------


def test_the_handshake_fails_an_initialize_result_too_deep_to_decode() -> None:
    deep = msgspec.Raw(b'{"capabilities":{"x":' + b"[" * DEEP + b"]" * DEEP + b"}}")
    step = _handshake().receive(Response(0, "integer", deep, None, True))
    assert isinstance(step, Failed)
    assert type(step.error) is ProtocolError
    assert "too deeply" in step.error.message


def test_an_error_member_too_deep_to_decode_is_described() -> None:
    deep = msgspec.Raw(b"[" * DEEP + b"]" * DEEP)
    assert describe_error_member(deep, Redactor()) == (
        None,
        "(the error member nests too deeply to show)",
        None,
    )


def test_the_handshake_skips_what_it_cannot_read() -> None:
    handshake = _handshake()
    for line in (
        b"[" * DEEP + b"]" * DEEP,
        b'{"id":' + HUGE + b',"method":"ping"}',
        b'{"id":{},"method":"\xff"}',
    ):
        assert isinstance(handshake.receive(decode_line(line)), Skip)


def test_log_json_shows_a_value_too_deep_to_encode_as_a_fixed_text() -> None:
    # describe_error_member hands a decoded error member to log_json, at a deeper stack
    # than the one that decoded it.
    value: list[object] = []
    for _ in range(DEEP):
        value = [value]
    redactor = Redactor()
    assert redactor.log_json(value) == "(JSON nested too deeply to show)"
    assert redactor.log_json(msgspec.Raw(b"[" * DEEP + b"]" * DEEP)) == (
        "(JSON nested too deeply to show)"
    )
