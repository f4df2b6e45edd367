"""The record's selectors, and assertion failures that show what the host sent."""

from __future__ import annotations

import pytest
import trio

from mcpl_host import Connection, RequestTimeout
from mcpl_host.testing import Record, Script, serve


def sample() -> Record:
    record = Record()
    record.connections = 2
    for line in (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"timeout"}}',
        b'{"jsonrpc":"2.0","id":null,"result":{}}',
    ):
        record.add_line(1, line)
    record.add_line(
        2, b'[{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":"b","result":{}}]'
    )
    record.add_line(2, b"not json")
    return record


SENT = """the host sent:
  [connection 1] request 'initialize' (id 1) params {"protocolVersion":"2025-11-25"}
  [connection 1] notification 'notifications/initialized'
  [connection 1] request 'tools/call' (id 2) params {"name":"add","arguments":{"a":1}}
  [connection 1] notification 'notifications/cancelled' params {"requestId":2,"reason":"timeout"}
  [connection 1] response (id null) result {}
  [connection 2] batch of 2
  [connection 2] a line that is not JSON: not json"""


def test_selectors() -> None:
    record = sample()
    assert [m["id"] for m in record.requests()] == [1, 2]
    assert record.requests("tools/call")[0]["params"]["name"] == "add"
    assert [m["method"] for m in record.notifications()] == [
        "notifications/initialized",
        "notifications/cancelled",
    ]
    assert record.notifications("notifications/cancelled", connection=2) == []
    assert [a["id"] for a in record.answers()] == [None, "a", "b"]
    assert [a["id"] for a in record.answers(connection=2)] == ["a", "b"]
    assert record.lines(connection=2)[1] == b"not json"
    assert len(record.messages()) == 6  # the line that is not JSON has no value
    assert [entry.kind for entry in record] == [
        "request",
        "notification",
        "request",
        "notification",
        "response",
        "batch",
        "not-json",
    ]
    assert str(record) == SENT


def test_assert_sent() -> None:
    record = sample()
    assert record.assert_sent("tools/call")["id"] == 2
    assert record.assert_sent("tools/call", {"arguments": {"a": 1}, "name": "add"})["id"] == 2
    record.assert_sent("notifications/initialized")
    with pytest.raises(AssertionError) as info:
        record.assert_sent("tools/call", {"name": "add", "arguments": {"a": 1.0}})
    assert str(info.value) == (
        'the host sent no \'tools/call\' with params {"name":"add","arguments":{"a":1.0}}; ' + SENT
    )
    with pytest.raises(AssertionError) as info:
        record.assert_sent("tools/list", connection=2)
    assert str(info.value) == "the host sent no 'tools/list' on connection 2; " + SENT


def test_assert_not_sent() -> None:
    record = sample()
    record.assert_not_sent("tools/list")
    record.assert_not_sent("tools/call", connection=2)
    with pytest.raises(AssertionError) as info:
        record.assert_not_sent("tools/call")
    assert str(info.value) == "the host sent 'tools/call'; " + SENT


def test_assert_cancelled() -> None:
    record = sample()
    assert record.assert_cancelled(2)["params"]["reason"] == "timeout"
    with pytest.raises(AssertionError) as info:
        record.assert_cancelled("2")  # a string id is another request
    assert str(info.value) == 'the host sent no notifications/cancelled for request "2"; ' + SENT
    with pytest.raises(AssertionError, match="for request 2 on connection 2; the host sent:"):
        record.assert_cancelled(2, connection=2)


def test_an_empty_record() -> None:
    with pytest.raises(AssertionError) as info:
        Record().assert_sent("initialize")
    assert str(info.value) == "the host sent no 'initialize'; the host sent nothing"


async def test_assert_cancelled_after_a_real_timeout(autojump_clock: trio.abc.Clock) -> None:
    script = Script().handshake().expect("tools/call").expect("notifications/cancelled")
    with trio.fail_after(30):
        async with serve(script) as server, Connection(server.target) as conn:
            with pytest.raises(RequestTimeout):
                await conn.request("tools/call", {"name": "slow"}, timeout=5)
            await server.wait_done()
    cancel = server.record.assert_cancelled(3)
    assert cancel["params"] == {"requestId": 3, "reason": "timeout"}
