"""What a server that floods the host, or stops reading, can make it hold (DESIGN 3.12).

The scripted peer here is the far end of a lockstep stream: a write by the host returns
only once the peer reads it, so a peer that stops reading is a server whose stdin
filled up. Everything runs under an autojump clock: the timeouts are the real ones.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from structlog.testing import capture_logs

from mcpl_host import ConnectionClosed, RequestTimeout, ServerRequest, StdioTarget
from mcpl_host.client.connection import Connection
from mcpl_host.driver import inbound
from mcpl_host.transports.memory import StreamTransport

from .conftest import connected
from .peer import Peer

INIT_ANSWER = (
    b'{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-11-25","capabilities":{},'
    b'"serverInfo":{"name":"deaf","version":"1"}}}\n'
)


def live_tasks() -> int:
    """Every task in this trio run."""

    def count(task: trio.lowlevel.Task) -> int:
        return 1 + sum(count(t) for n in task.child_nurseries for t in n.child_tasks)

    root = trio.lowlevel.current_root_task()
    assert root is not None
    return count(root)


def lockstep_connection(**kwargs: Any) -> tuple[Connection, Peer]:
    host, peer = trio.testing.lockstep_stream_pair()

    async def factory() -> StreamTransport:
        return StreamTransport(host)

    return Connection(factory, **kwargs), Peer(peer)


async def flood(peer: Peer, lines: Iterator[bytes]) -> None:
    """Write ``lines`` to the host, 500 to a write, never reading, until it hangs up."""
    chunk: list[bytes] = []
    try:
        for line in lines:
            chunk.append(line + b"\n")
            if len(chunk) == 500:
                await peer.stream.send_all(b"".join(chunk))
                chunk.clear()
        if chunk:
            await peer.stream.send_all(b"".join(chunk))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def pings(
    n: int, template: bytes = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}'
) -> Iterator[bytes]:
    return (template % i if b"%d" in template else template for i in range(n))


async def deaf_after_handshake(conn: Connection, peer: Peer, nursery: trio.Nursery) -> None:
    """Start ``conn`` with ``peer`` answering initialize, then reading nothing more."""

    async def server() -> None:
        init = await peer.expect("initialize")
        await peer.stream.send_all(INIT_ANSWER % init["id"])
        await peer.expect("notifications/initialized")

    nursery.start_soon(server)
    await nursery.start(conn.run)


async def flood_a_deaf_host(
    conn: Connection, peer: Peer, lines: Iterator[bytes]
) -> tuple[int, int]:
    """Flood ``conn`` until its transport ends; the most tasks above the baseline and the
    most answers it queued, meanwhile. The end must be the stalled write's."""
    most_tasks = most_owed = 0
    async with trio.open_nursery() as nursery:
        await deaf_after_handshake(conn, peer, nursery)
        baseline = live_tasks()
        nursery.start_soon(flood, peer, lines)
        with trio.fail_after(30):
            while conn._epoch is not None and conn._epoch.open:
                most_tasks = max(most_tasks, live_tasks() - baseline)
                most_owed = max(most_owed, conn._epoch.queued_answers)
                await trio.sleep(0.01)
        # The reader stopped reading at the bound; the stalled write then ended it.
        assert conn._epoch.end_reason == "write-timeout"
        nursery.cancel_scope.cancel()
    return most_tasks, most_owed


@pytest.mark.parametrize(
    "template",
    [
        b'{"jsonrpc":"2.0","id":%d,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":%d,"method":"roots/list"}',
        b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":%d,"method":7}',
    ],
    ids=["pings", "unknown-method", "id-null", "invalid"],
)
async def test_a_deaf_server_flooding_requests_holds_a_bounded_set_of_answers(
    template: bytes, autojump_clock: trio.abc.Clock
) -> None:
    conn, peer = lockstep_connection(max_owed_answers=32, write_timeout=5)
    most_tasks, most_owed = await flood_a_deaf_host(conn, peer, pings(20_000, template))
    assert most_owed <= 32
    assert most_tasks <= 3  # the flood's own task, and a write of the peer's


async def test_a_deaf_server_flooding_served_requests_holds_at_most_max_server_requests_tasks(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = lockstep_connection(
        max_owed_answers=32, max_server_requests=8, write_timeout=5, roots=["file:///r"]
    )
    roots = pings(20_000, b'{"jsonrpc":"2.0","id":%d,"method":"roots/list"}')
    most_tasks, most_owed = await flood_a_deaf_host(conn, peer, roots)
    assert most_owed <= 32
    assert most_tasks <= 8 + 3


async def test_pings_before_the_initialize_answer_hold_a_bounded_set_of_answers(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = lockstep_connection(max_owed_answers=16, initialize_timeout=10)
    most_tasks = 0

    async def watch() -> None:
        nonlocal most_tasks
        while True:
            most_tasks = max(most_tasks, live_tasks())
            await trio.sleep(0.01)

    async with trio.open_nursery() as nursery:
        # The host's initialize stays unread: its writer is stuck, and pings pile up.
        nursery.start_soon(flood, peer, pings(20_000))
        nursery.start_soon(watch)
        baseline = live_tasks()
        with pytest.raises(RequestTimeout), trio.fail_after(30):
            await conn.run()
        nursery.cancel_scope.cancel()
    assert most_tasks <= baseline + 8  # the connection's reader, writer, timeouts...


async def test_a_request_to_a_server_that_stopped_reading_fails_after_the_write_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = lockstep_connection(write_timeout=2, request_timeout=60)
    async with trio.open_nursery() as nursery:
        await deaf_after_handshake(conn, peer, nursery)
        started = trio.current_time()
        with pytest.raises(ConnectionClosed) as caught:
            await conn.request("tools/list")
        assert caught.value.reason == "write-timeout"
        assert trio.current_time() - started == pytest.approx(2, abs=0.1)
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("call", ["notify", "set_roots"])
async def test_notify_and_set_roots_time_out_when_the_server_stopped_reading(
    call: str, autojump_clock: trio.abc.Clock
) -> None:
    conn, peer = lockstep_connection(write_timeout=100, request_timeout=100, roots=["file:///a"])
    async with trio.open_nursery() as nursery:
        await deaf_after_handshake(conn, peer, nursery)
        started = trio.current_time()
        sending = (
            conn.notify("notifications/message", {"x": 1}, timeout=3)
            if call == "notify"
            else conn.set_roots(["file:///b"], timeout=3)
        )
        with pytest.raises(RequestTimeout) as caught:
            await sending
        assert trio.current_time() - started == pytest.approx(3, abs=0.1)
        assert caught.value.timeout == 3
        nursery.cancel_scope.cancel()


async def test_notify_defaults_to_the_request_timeout(autojump_clock: trio.abc.Clock) -> None:
    conn, peer = lockstep_connection(write_timeout=100, request_timeout=7)
    async with trio.open_nursery() as nursery:
        await deaf_after_handshake(conn, peer, nursery)
        started = trio.current_time()
        with pytest.raises(RequestTimeout):
            await conn.notify("notifications/message")
        assert trio.current_time() - started == pytest.approx(7, abs=0.1)
        nursery.cancel_scope.cancel()


async def test_a_flood_of_unmatched_responses_costs_a_few_log_lines(
    autojump_clock: trio.abc.Clock,
) -> None:
    with capture_logs() as logs:
        async with connected() as (_conn, peer, _nursery):
            for chunk in range(10):
                await peer.stream.send_all(
                    b"".join(
                        b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % (100_000 + chunk * 100 + i)
                        for i in range(100)
                    )
                )
            await trio.sleep(1)  # all read: the reader idles before the clock jumps
    unmatched = [e for e in logs if e.get("outcome") == "response-unmatched"]
    suppressed = [e for e in logs if e["event"] == "log events suppressed"]
    assert len(unmatched) == 5
    assert [(e["suppressed_event"], e["suppressed"]) for e in suppressed] == [("message", 995)]


async def test_answers_left_unwritten_at_the_end_cost_one_line(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, peer = lockstep_connection(max_owed_answers=1000, write_timeout=1)
    with capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            await deaf_after_handshake(conn, peer, nursery)
            nursery.start_soon(flood, peer, pings(500))
            with trio.fail_after(30):
                await conn._closed.wait()
            nursery.cancel_scope.cancel()
    lines = [e for e in logs if e["event"] in ("answers not written", "not answering request")]
    assert len(lines) == 1
    assert lines[0]["count"] == 500


async def test_an_internal_error_is_logged_without_the_peer_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret_text = "peer-said-" + "x" * 20

    def broken(line: bytes) -> Any:
        raise ValueError(secret_text + line.decode())

    with capture_logs() as logs:
        async with connected() as (_conn, peer, _nursery):
            monkeypatch.setattr(inbound, "decode_line", broken)
            await peer.send({"jsonrpc": "2.0", "method": "notifications/x"})
            with trio.fail_after(5):
                while not any(e["event"].startswith("internal error") for e in logs):
                    await trio.sleep(0.01)
    (event,) = [e for e in logs if e["event"].startswith("internal error")]
    assert event["error"] == "ValueError"
    assert "broken" in event["where"]
    assert secret_text not in msgspec.json.encode(logs, enc_hook=str).decode()


@pytest.mark.parametrize(
    "entries",
    [
        b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]',
        b'[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"x/y"}]',
        b'[{"jsonrpc":"2.0","id":7,"method":"x/y"},{"jsonrpc":"2.0","id":8,"method":3}]',
    ],
    ids=["ping", "ping-and-unknown", "unknown-and-invalid"],
)
async def test_a_batch_the_reader_answers_itself_is_answered_exactly_once(
    entries: bytes, autojump_clock: trio.abc.Clock
) -> None:
    async with connected("2025-03-26") as (_conn, peer, _nursery):
        await peer.send(entries)
        answer = msgspec.json.decode(await peer.recv_line())
        assert [entry["id"] for entry in answer] == ([7, 8] if b'"id":8' in entries else [7])
        with pytest.raises(trio.TooSlowError):
            await peer.recv_line(timeout=5)


async def test_params_that_are_not_utf8_are_answered_invalid_params(
    autojump_clock: trio.abc.Clock,
) -> None:
    params = b'{"name":"\xff\xfe"}'

    async def handler(request: ServerRequest) -> Any:
        return request.decode_params(dict)

    async with connected(handlers={"x/decode": handler}) as (_conn, peer, _nursery):
        await peer.send(b'{"jsonrpc":"2.0","id":3,"method":"x/decode","params":' + params + b"}")
        answer = msgspec.json.decode(await peer.recv_line())
        assert answer["id"] == 3
        assert answer["error"]["code"] == -32602


async def test_owed_answers_are_bounded_in_bytes_too(autojump_clock: trio.abc.Clock) -> None:
    """Each answer repeats the peer's id: 256 answers to ids of 1 MiB would be 256 MiB."""
    conn, peer = lockstep_connection(max_owed_answers=256, write_timeout=30)
    big = b"x" * (1024 * 1024)
    most = 0
    async with trio.open_nursery() as nursery:
        await deaf_after_handshake(conn, peer, nursery)
        lines = (b'{"jsonrpc":"2.0","id":"%d%s","method":"ping"}' % (i, big) for i in range(300))
        nursery.start_soon(flood, peer, lines)
        with trio.fail_after(60):
            while conn._epoch is not None and conn._epoch.open:
                most = max(most, conn._epoch.queued_bytes)
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    # max_message_bytes (16 MiB) plus the one answer that passed it
    assert most <= 16 * 1024 * 1024 + len(big) + 100


PING_BURST_SERVER = """
import json, sys
def send(s): sys.stdout.write(s); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        send(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion":
            "2025-11-25", "capabilities": {}, "serverInfo": {"name": "b", "version": "1"}}}) + "\\n")
    elif "method" in m and "id" in m:
        out = json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {}}) + "\\n"
        out += "".join(json.dumps({"jsonrpc": "2.0", "id": "p%d" % i, "method": "ping"}) + "\\n"
                       for i in range(40))
        send(out)
"""


async def test_a_reader_paused_at_the_bound_reads_on_once_its_answers_are_written() -> None:
    """Over a pipe, a request written at once (no writer task) also writes the answers
    queued before it: the paused reader must learn that, or it waits forever."""
    target = StdioTarget.of([sys.executable, "-c", PING_BURST_SERVER])
    with trio.fail_after(20):
        async with Connection(target, max_owed_answers=32, request_timeout=5) as conn:
            for _ in range(100):
                assert await conn.request("tools/list") == {}
