"""The Script builder: plain data, checked when a step is added, the same after JSON."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest

from mcpl_host.testing import Script
from mcpl_host.testing._wire import MIN_OVERSIZED, oversized_line
from mcpl_host.testing.steps import Expect, Handshake, SendRequest, describe


def everything() -> Script:
    return (
        Script(timeout=3)
        .refuse_connections(2)
        .handshake(capabilities={"tools": {}}, server_info={"name": "s"}, instructions="hi")
        .expect("tools/call", {"name": "x"}, timeout=1.5)
        .reply({"content": []})
        .expect("tools/call")
        .reply_error(-32602, "no", {"why": 1})
        .send_request("ping")
        .send_request("ping", id=None)
        .send_request("ping", id="s")
        .send_request("ping", id_raw="1e400")
        .expect_answer(timeout=2)
        .notify("notifications/message", {"level": "info"})
        .send_raw(b"\x00\xff raw")
        .send_batch([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        .send_garbage()
        .send_oversized(1000)
        .wait(0.5)
        .drop()
        .crash()
        .expect_close()
        .serve_forever()
    )


def test_round_trips_through_json() -> None:
    script = everything()
    again = Script.from_json(script.to_json())
    assert again.steps == script.steps
    assert again.timeout == 3
    assert again.to_json() == script.to_json()
    # The document is plain JSON, steps tagged by name; bytes travel as base64.
    document = msgspec.json.decode(script.to_json())
    assert [step["step"] for step in document["steps"]][:4] == [
        "refuse_connections",
        "handshake",
        "expect",
        "reply",
    ]
    assert document["steps"][12] == {"step": "send_raw", "data": "AP8gcmF3"}


def test_request_ids_count_up_and_continue_after_loading() -> None:
    script = Script().send_request("a").send_request("b", id=None).send_request("c")
    ids = [step.id for step in script.steps if isinstance(step, SendRequest)]
    assert ids == [1, None, 2]
    again = Script.from_json(script.to_json()).send_request("d")
    assert again.steps[-1] == SendRequest(method="d", id=3)


def test_tuples_are_stored_as_lists() -> None:
    script = Script().reply({"a": (1, (2, 3))})
    assert (
        script.steps[0] == msgspec.json.decode(script.to_json(), type=type(script.data())).steps[0]
    )
    assert (
        script.to_json() == b'{"steps":[{"step":"reply","result":{"a":[1,[2,3]]}}],"timeout":10.0}'
    )


def test_defaults() -> None:
    script = Script().handshake().expect("x").reply()
    assert script.timeout == 10
    assert script.steps[0] == Handshake(version="2025-11-25")
    assert script.steps[2] == msgspec.json.decode(
        b'{"step":"reply","result":{}}', type=type(script.steps[2])
    )


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda: Script(timeout=0), ValueError),
        (lambda: Script(timeout=math.inf), ValueError),
        (lambda: Script().expect("x", timeout=-1), ValueError),
        (lambda: Script().wait(-1), ValueError),
        (lambda: Script().refuse_connections(0), ValueError),
        (lambda: Script().send_oversized(MIN_OVERSIZED - 1), ValueError),
        (lambda: Script().send_garbage('{"valid": "json"}'), ValueError),
        (lambda: Script().send_garbage("two\nlines"), ValueError),
        (lambda: Script().send_garbage(" "), ValueError),
        (lambda: Script().send_request("x", id_raw="1\n2"), ValueError),
        (lambda: Script().send_request("x", id=1.5), TypeError),  # type: ignore[arg-type]
        (lambda: Script().send_request("x", id=True), TypeError),
        (lambda: Script().reply({1, 2}), TypeError),
        (lambda: Script().reply({"a": [math.nan]}), TypeError),
        (lambda: Script().reply({1: "int key"}), TypeError),
        (lambda: Script().notify("x", object()), TypeError),
        (lambda: Script().expect(1), TypeError),  # type: ignore[arg-type]
        (lambda: Script().send_raw("text"), TypeError),  # type: ignore[arg-type]
        (lambda: Script().reply_error(True, "x"), TypeError),
    ],
)
def test_bad_steps_fail_when_added(build: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        build()


def test_oversized_line_has_exactly_the_size_asked() -> None:
    for size in (MIN_OVERSIZED, 1000, 1 << 20):
        line = oversized_line(size)
        assert len(line) == size + 1
        assert line.endswith(b"\n")
        assert msgspec.json.decode(line)["method"] == "notifications/message"


def test_describe() -> None:
    assert describe(Expect(method="tools/call", params={"a": 1})) == (
        "expect('tools/call', params={'a': 1})"
    )
    assert describe(Handshake(version="2024-11-05", timeout=3)) == "handshake(version='2024-11-05')"
    assert describe(SendRequest(method="ping", id=None)) == "send_request('ping', id=None)"
    long = describe(Expect(method="x" * 100))
    assert long.endswith("…)")
    assert len(long) < 80
    assert repr(everything()) == "Script(21 steps, timeout=3)"
