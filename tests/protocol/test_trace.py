"""Where a request carries its trace context (mcpl_host.protocol.trace)."""

from __future__ import annotations

import msgspec
import pytest

from mcpl_host.protocol.trace import trace_carrier, with_trace

CARRIER = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}


def test_the_context_joins_the_callers_meta_without_touching_the_callers_dict() -> None:
    params = {"name": "echo", "_meta": {"progressToken": 7}}
    sent = with_trace(params, {**CARRIER, "tracestate": "a=b"})
    assert sent == {
        "name": "echo",
        "_meta": {"progressToken": 7, **CARRIER, "tracestate": "a=b"},
    }
    assert params == {"name": "echo", "_meta": {"progressToken": 7}}


@pytest.mark.parametrize(
    ("params", "sent"),
    [
        (None, {"_meta": CARRIER}),
        (msgspec.UNSET, {"_meta": CARRIER}),
        ({}, {"_meta": CARRIER}),
        ({"_meta": "odd"}, {"_meta": CARRIER}),
        (msgspec.Raw(b'{"a":1}'), {"a": 1, "_meta": CARRIER}),
        ([1, 2], [1, 2]),  # not an object: sent as the caller wrote it
        (msgspec.Raw(b"[1"), msgspec.Raw(b"[1")),
    ],
)
def test_every_shape_of_params(params: object, sent: object) -> None:
    assert with_trace(params, CARRIER) == sent


def test_nothing_to_carry_changes_nothing_and_a_hand_set_context_wins_whole() -> None:
    params = {"a": 1}
    assert with_trace(params, {}) is params
    own = {"_meta": {"traceparent": "00-mine", "tracestate": "x=y"}}
    assert with_trace(own, {**CARRIER, "tracestate": "a=b", "baggage": "k=v"}) is own


def test_a_received_context_is_read_from_meta_strings_only_and_bounded() -> None:
    meta = {**CARRIER, "tracestate": "a=b", "baggage": 5, "other": "x"}
    assert trace_carrier({"_meta": meta}) == {**CARRIER, "tracestate": "a=b"}
    raw = msgspec.json.encode({"x": [1] * 10, "_meta": meta})
    assert trace_carrier(msgspec.Raw(raw)) == {**CARRIER, "tracestate": "a=b"}
    assert trace_carrier({"_meta": {"traceparent": "0" * 9000}}) is None
    deep = msgspec.Raw(b'{"_meta":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    for absent in (
        None,
        [],
        {"_meta": None},
        {"_meta": {}},
        msgspec.Raw(b"{"),
        msgspec.Raw(b"[]"),
        deep,
    ):
        assert trace_carrier(absent) is None
