"""DESIGN 3.4: inbound batches by revision, every row of the table."""

from __future__ import annotations

import msgspec
import pytest

from mcpl_host.protocol.batch import BatchAnswers, BatchPlan, BatchRefused, plan_batch
from mcpl_host.protocol.envelope import (
    Batch,
    Ignored,
    InvalidRequest,
    Notification,
    Outcome,
    Request,
    Response,
    decode_line,
)
from mcpl_host.protocol.messages import ResultAnswer, encode
from mcpl_host.protocol.profiles import PROFILES

BATCHING = ["2024-11-05", "2025-03-26"]
SINGLE = ["2025-06-18", "2025-11-25"]


def _batch(line: bytes) -> Batch:
    item = decode_line(line)
    assert isinstance(item, Batch)
    return item


def _plan(line: bytes, revision: str) -> BatchPlan:
    plan = plan_batch(_batch(line), PROFILES[revision])
    assert isinstance(plan, BatchPlan)
    return plan


@pytest.mark.parametrize("revision", BATCHING)
def test_requests_answered_in_request_order_whatever_finishes_first(revision: str) -> None:
    plan = _plan(
        b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":"two","method":"b"},'
        b'{"jsonrpc":"2.0","id":null,"method":"c"}]',
        revision,
    )
    assert [type(e) for e in plan.entries] == [Request, Request, Request]
    answers = BatchAnswers(plan)
    for index in (2, 0, 1):  # finish out of order
        entry = plan.entries[index]
        assert isinstance(entry, Request)
        answers.fill(index, ResultAnswer(id=entry.id, result={"n": index}))
    assert answers.complete
    assert answers.encode() == (
        b'[{"jsonrpc":"2.0","id":1,"result":{"n":0}},'
        b'{"jsonrpc":"2.0","id":"two","result":{"n":1}},'
        b'{"jsonrpc":"2.0","id":null,"result":{"n":2}}]\n'
    )


@pytest.mark.parametrize("revision", BATCHING)
def test_notifications_and_responses_are_handled_without_an_answer_entry(revision: str) -> None:
    plan = _plan(
        b'[{"jsonrpc":"2.0","method":"notifications/progress"},'
        b'{"jsonrpc":"2.0","id":5,"result":{}},{"jsonrpc":"2.0","id":9,"method":"ping"}]',
        revision,
    )
    assert [type(e) for e in plan.entries] == [Notification, Response, Request]
    answers = BatchAnswers(plan)
    assert answers.slot_of == {2: 0}
    answers.fill(2, ResultAnswer(id=9, result={}))
    assert answers.encode() == b'[{"jsonrpc":"2.0","id":9,"result":{}}]\n'


@pytest.mark.parametrize("revision", BATCHING)
def test_only_notifications_and_responses_write_nothing(revision: str) -> None:
    plan = _plan(b'[{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":1,"result":1}]', revision)
    answers = BatchAnswers(plan)
    assert answers.complete
    assert answers.encode() is None


@pytest.mark.parametrize("revision", BATCHING)
def test_empty_batch_gets_one_invalid_request(revision: str) -> None:
    refused = plan_batch(_batch(b"[]"), PROFILES[revision])
    assert isinstance(refused, BatchRefused)
    assert refused.outcome is Outcome.ANSWERED_INVALID
    assert encode(refused.answer) == (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,'
        b'"message":"Invalid Request: the batch is empty"}}\n'
    )


@pytest.mark.parametrize("revision", BATCHING)
def test_invalid_entries_get_their_own_invalid_request(revision: str) -> None:
    plan = _plan(
        b'[1,{},{"jsonrpc":"2.0","id":1e400,"method":"a"},{"jsonrpc":"2.0","id":4,"method":7},'
        b'{"jsonrpc":"2.0","id":2,"method":"ping"}]',
        revision,
    )
    assert [type(e) for e in plan.entries] == [InvalidRequest] * 4 + [Request]
    answers = BatchAnswers(plan)
    answers.fill(4, ResultAnswer(id=2, result={}))
    wire = msgspec.json.decode(answers.encode() or b"")
    assert [a["id"] for a in wire] == [None, None, None, 4, 2]
    assert [a.get("error", {}).get("code") for a in wire] == [-32600] * 4 + [None]
    assert wire[0]["error"]["message"] == (
        "Invalid Request: a batch entry must be a request, a notification or a response "
        "(not an object: a number)"
    )
    assert "no method and no id" in wire[1]["error"]["message"]
    assert "an integer" in wire[2]["error"]["message"]
    assert (
        wire[3]["error"]["message"] == "Invalid Request: the method must be a string, not a number"
    )


@pytest.mark.parametrize("revision", BATCHING)
def test_initialize_in_a_batch_is_an_invalid_entry_never_dispatched(revision: str) -> None:
    # 2025-03-26 lifecycle: initialize MUST NOT be part of a batch (seed 000: -32600 for
    # that entry). It is refused as malformed, not looked up as a method (-32601). A
    # notification of that name is no initialize request: it stays a notification, and
    # notifications are never answered.
    plan = _plan(
        b'[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}},'
        b'{"jsonrpc":"2.0","id":2,"method":"ping"},'
        b'{"jsonrpc":"2.0","method":"initialize"}]',
        revision,
    )
    assert [type(e) for e in plan.entries] == [InvalidRequest, Request, Notification]
    assert plan.entries[0] == InvalidRequest(
        ("initialize must not be part of a batch",), 1, "initialize"
    )
    answers = BatchAnswers(plan)
    answers.fill(1, ResultAnswer(id=2, result={}))
    assert answers.encode() == (
        b'[{"jsonrpc":"2.0","id":1,"error":{"code":-32600,'
        b'"message":"Invalid Request: initialize must not be part of a batch"}},'
        b'{"jsonrpc":"2.0","id":2,"result":{}}]\n'
    )


@pytest.mark.parametrize("revision", SINGLE)
@pytest.mark.parametrize(
    "line",
    [
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
        b'[{"jsonrpc":"2.0","method":"x"}]',
        b'[{"jsonrpc":"2.0","id":1,"result":{}}]',
        b"[]",
        b"[1]",
    ],
)
def test_later_revisions_refuse_every_array_with_one_answer(revision: str, line: bytes) -> None:
    refused = plan_batch(_batch(line), PROFILES[revision])
    assert isinstance(refused, BatchRefused)
    assert refused.outcome is Outcome.REFUSED_BY_PROFILE
    assert encode(refused.answer) == (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: '
        b"protocol revision " + revision.encode() + b" does not allow JSON-RPC batches; "
        b'send one message per line"}}\n'
    )


def test_a_batch_before_negotiation_is_ignored() -> None:
    item = plan_batch(_batch(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]'), None)
    assert isinstance(item, Ignored)


def test_an_entry_cannot_be_answered_twice() -> None:
    plan = _plan(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', "2025-03-26")
    answers = BatchAnswers(plan)
    answers.fill(0, ResultAnswer(id=1, result={}))
    with pytest.raises(RuntimeError, match="twice"):
        answers.fill(0, ResultAnswer(id=1, result={}))


def test_encoding_before_every_answer_is_in_is_a_bug() -> None:
    answers = BatchAnswers(_plan(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', "2024-11-05"))
    with pytest.raises(RuntimeError, match="missing"):
        answers.encode()


def test_a_dropped_entry_is_left_out_of_the_answer() -> None:
    # The peer cancelled entry 1: the others are still answered, in request order.
    plan = _plan(
        b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"},'
        b'{"jsonrpc":"2.0","id":3,"method":"c"}]',
        "2025-03-26",
    )
    answers = BatchAnswers(plan)
    answers.fill(2, ResultAnswer(id=3, result={}))
    answers.drop(1)
    assert not answers.complete
    assert 1 not in answers.slot_of
    answers.fill(0, ResultAnswer(id=1, result={}))
    assert answers.complete
    assert answers.encode() == (
        b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":3,"result":{}}]\n'
    )


def test_dropping_every_request_writes_nothing() -> None:
    answers = BatchAnswers(_plan(b'[{"jsonrpc":"2.0","id":1,"method":"a"}]', "2024-11-05"))
    answers.drop(0)
    assert answers.complete
    assert answers.encode() is None


def test_an_answered_entry_cannot_be_dropped() -> None:
    answers = BatchAnswers(_plan(b'[{"jsonrpc":"2.0","id":1,"method":"a"}]', "2024-11-05"))
    answers.fill(0, ResultAnswer(id=1, result={}))
    with pytest.raises(RuntimeError, match=r"^batch entry 0 already answered$"):
        answers.drop(0)
