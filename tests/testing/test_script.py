"""The Script builder: plain data, checked when a step is added, the same after JSON."""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec
import pytest

from mcpl_host.testing import Expected, Script
from mcpl_host.testing._wire import MIN_OVERSIZED, oversized_line
from mcpl_host.testing.steps import (
    DEFAULT_UNPLANNED,
    Expect,
    Handshake,
    OnUnplanned,
    Reply,
    SendRequest,
    describe,
)


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


def concurrent() -> Script:
    return (
        Script()
        .on_unplanned(result={"ok": True})
        .handshake()
        .expect("tools/call", label="slow")
        .expect_all("tools/list", Expected("tools/call", ({"name": "a"},), label="a"))
        .reply({"tools": []}, to="tools/list")
        .reply_error(-32602, "no", to="a")
        .reply({}, to="slow")
        .on_unplanned(error=-32000, message="busy", data=[1])
        .ignore_unplanned()
        .on_unplanned()
    )


def test_concurrent_steps_round_trip_through_json() -> None:
    script = concurrent()
    again = Script.from_json(script.to_json())
    assert again.steps == script.steps
    assert again.to_json() == script.to_json()
    document = msgspec.json.decode(script.to_json())["steps"]
    assert document[0] == {"step": "on_unplanned", "answer": "result", "result": {"ok": True}}
    assert document[2] == {"step": "expect", "method": "tools/call", "label": "slow"}
    assert document[3] == {
        "step": "expect_all",
        "expected": [
            {"method": "tools/list"},
            {"method": "tools/call", "params": [{"name": "a"}], "label": "a"},
        ],
    }
    assert document[4:] == [
        {"step": "reply", "result": {"tools": []}, "to": "tools/list"},
        {"step": "reply_error", "code": -32602, "message": "no", "to": "a"},
        {"step": "reply", "result": {}, "to": "slow"},
        {"step": "on_unplanned", "code": -32000, "message": "busy", "data": [1]},
        {"step": "on_unplanned", "answer": "none"},
        {"step": "on_unplanned"},
    ]


def test_which_unplanned_answer_applies_where() -> None:
    data = concurrent().data()
    assert data.unplanned_at(0) == DEFAULT_UNPLANNED
    assert data.unplanned_at(1) == OnUnplanned(answer="result", result={"ok": True})
    assert data.unplanned_at(8) == OnUnplanned(code=-32000, message="busy", data=[1])
    assert data.unplanned_at(9).answer == "none"
    assert data.unplanned_at(10) == DEFAULT_UNPLANNED == OnUnplanned(answer="error", code=-32601)


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: Script().expect_all(), ValueError, "at least one"),
        (lambda: Script().expect_all("a", "a"), ValueError, "names 'a' twice"),
        (
            lambda: Script().expect_all(Expected("a", label="x"), Expected("b", label="x")),
            ValueError,
            "names 'x' twice",
        ),
        (lambda: Script().expect_all(("a", None)), TypeError, "methods and Expected"),
        (lambda: Script().expect_all(Expected("a", {1, 2})), TypeError, "expected[0].params"),
        (lambda: Script().expect_all(Expected(1)), TypeError, "expected[0].method"),
        (lambda: Script().expect("a", label=""), ValueError, "empty"),
        (lambda: Script().expect("a", label=1), TypeError, "a label"),
        (lambda: Script().reply(to="a"), ValueError, "no step before this one"),
        (lambda: Script().expect("a", label="x").reply(to="a"), ValueError, "named 'a'"),
        (lambda: Script().expect_all("a", "b").reply(), ValueError, "say which with to="),
        (lambda: Script().expect_all("a", "b").reply_error(1, "m"), ValueError, "say which"),
        (lambda: Script().on_unplanned(result={}, error=-1), ValueError, "not both"),
        (lambda: Script().on_unplanned(result=None, message="m"), ValueError, "not both"),
        (lambda: Script().on_unplanned(error=True), TypeError, "integer"),
        (lambda: Script().on_unplanned(result={1}), TypeError, "plain JSON"),
    ],
)
def test_bad_concurrent_steps_fail_when_added(
    build: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        build()


def test_replies_that_need_no_to() -> None:
    # One member, or the last expecting step a plain expect: the latest is unambiguous.
    assert Script().expect_all("a").reply().steps[-1] == Reply(result={})
    assert Script().expect_all("a", "b").expect("c").reply().steps[-1] == Reply(result={})
    # A label may be reused: to= names the latest step that gave it.
    assert Script().expect("a").expect("a").reply(to="a").steps[-1] == Reply(result={}, to="a")


def test_describe_concurrent_steps() -> None:
    step = concurrent().steps[3]
    assert describe(step) == (
        "expect_all('tools/list', 'tools/call' params=[{'name': 'a'}] label='a')"
    )
    assert describe(concurrent().steps[4]) == "reply({'tools': []}, to='tools/list')"
    assert describe(OnUnplanned(answer="none")) == "on_unplanned(answer='none')"
