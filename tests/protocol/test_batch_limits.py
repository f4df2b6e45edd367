"""Issue 17, deliverable 1 (the core's side): a cap on a batch's entries, a refused batch
never decoded whole, the answers to one batch bounded in bytes."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from mcpl_host.protocol.batch import (
    ANSWER_BYTES_PER_ENTRY,
    DEFAULT_MAX_BATCH_ENTRIES,
    BatchAnswers,
    BatchPlan,
    BatchRefused,
    plan_batch,
)
from mcpl_host.protocol.envelope import Batch, InvalidRequest, Outcome, decode_line
from mcpl_host.protocol.messages import encode
from mcpl_host.protocol.profiles import PROFILES

BATCHING = ["2024-11-05", "2025-03-26"]
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def _array(entries: list[bytes]) -> bytes:
    return b"[" + b",".join(entries) + b"]"


def _batch(line: bytes) -> Batch:
    item = decode_line(line)
    assert isinstance(item, Batch)
    return item


def test_the_default_cap_is_1000() -> None:
    assert DEFAULT_MAX_BATCH_ENTRIES == 1000


@pytest.mark.parametrize("revision", BATCHING)
def test_a_batch_at_the_cap_is_planned_and_one_past_it_refused_whole(revision: str) -> None:
    at_cap = plan_batch(_batch(_array([PING] * 1000)), PROFILES[revision])
    assert isinstance(at_cap, BatchPlan)
    assert len(at_cap.entries) == 1000
    refused = plan_batch(_batch(_array([PING] * 1001)), PROFILES[revision])
    assert isinstance(refused, BatchRefused)
    assert refused.outcome is Outcome.ANSWERED_INVALID
    assert encode(refused.answer) == (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: '
        b'the batch has more than 1000 entries, the most this host takes in one batch"}}\n'
    )


def test_the_cap_is_a_parameter() -> None:
    line = _array([PING] * 4)
    assert isinstance(plan_batch(_batch(line), PROFILES["2025-03-26"], max_entries=4), BatchPlan)
    refused = plan_batch(_batch(line), PROFILES["2025-03-26"], max_entries=3)
    assert isinstance(refused, BatchRefused)
    assert "more than 3 entries" in refused.answer.error.message


@pytest.mark.parametrize("limit", [0, -1])
def test_a_cap_below_one_is_a_programming_error(limit: int) -> None:
    with pytest.raises(ValueError, match="max_entries"):
        plan_batch(_batch(_array([PING])), PROFILES["2025-03-26"], max_entries=limit)


def test_entries_decodes_at_most_one_past_the_limit() -> None:
    batch = _batch(_array([b"1", b"[2]", b'{"a":3}', b"4"]))
    assert [bytes(e) for e in batch.entries(10) or ()] == [b"1", b"[2]", b'{"a":3}', b"4"]
    assert [bytes(e) for e in batch.entries(2) or ()] == [b"1", b"[2]", b'{"a":3}']
    assert _batch(b"[]").entries(5) == ()
    assert _batch(b" [ 1 , 2 ] ").entries(5) == (msgspec.Raw(b"1"), msgspec.Raw(b"2"))


# -- a refused batch is never decoded whole ---------------------------------------------

# 200,000 entries: as a tuple of msgspec.Raw they cost about 15 MB; the bound below
# leaves room for the decoders this process builds, never for the entries.
HUGE_ARRAY = _array([b"1"] * 200_000)
PEAK_BOUND = 1_000_000


def _peak(action: Callable[[], Any]) -> tuple[Any, int]:
    action()  # warm up: decoders and caches built once are not the entries' cost
    tracemalloc.start()
    try:
        result = action()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_decoding_a_huge_array_keeps_its_text_only() -> None:
    item, peak = _peak(lambda: decode_line(HUGE_ARRAY))
    assert isinstance(item, Batch)
    assert peak < PEAK_BOUND


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_refusing_a_huge_array_decodes_no_more_than_the_cap(revision: str) -> None:
    batch = _batch(HUGE_ARRAY)
    refused, peak = _peak(lambda: plan_batch(batch, PROFILES[revision]))
    assert isinstance(refused, BatchRefused)
    assert peak < PEAK_BOUND


# -- the answers to one batch are bounded in bytes --------------------------------------

# Entries whose answers are the longest the core writes: every kind of invalid entry,
# each with the longest fault text, some echoing a long id.
WORST_ENTRIES = [
    b"1",
    b"{}",
    b'"' + b"x" * 40 + b'"',
    b'{"method":{},"id":1e400}',
    b'{"method":[],"id":{}}',
    b'{"method":"m","id":99999999999999999999}',
    b'{"id":"' + b"\\u0000" * 50 + b'","method":"initialize"}',
    b'{"id":"' + b"i" * 300 + b'","method":3}',
    b'{"jsonrpc":"\xff","id":1,"method":"m"}',
]


@pytest.mark.parametrize("revision", BATCHING)
def test_a_full_batch_of_invalid_entries_answers_within_the_bound(revision: str) -> None:
    entries = [WORST_ENTRIES[i % len(WORST_ENTRIES)] for i in range(DEFAULT_MAX_BATCH_ENTRIES)]
    line = _array(entries)
    plan = plan_batch(_batch(line), PROFILES[revision])
    assert isinstance(plan, BatchPlan)
    assert all(type(e) is InvalidRequest for e in plan.entries)
    written = BatchAnswers(plan).encode()
    assert written is not None
    assert len(written) <= len(line) + DEFAULT_MAX_BATCH_ENTRIES * ANSWER_BYTES_PER_ENTRY


@pytest.mark.parametrize("entry", WORST_ENTRIES)
def test_each_invalid_entry_answer_is_its_entry_plus_the_fixed_overhead(entry: bytes) -> None:
    plan = plan_batch(_batch(_array([entry])), PROFILES["2025-03-26"])
    assert isinstance(plan, BatchPlan)
    written = BatchAnswers(plan).encode()
    assert written is not None
    # One answer: its bytes beyond the entry's own are the fixed part ("[", "]\n" and
    # the separator included).
    assert len(written) <= len(entry) + ANSWER_BYTES_PER_ENTRY
    assert msgspec.json.decode(written)[0]["error"]["code"] == -32600
