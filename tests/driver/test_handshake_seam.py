"""The seam after the initialize answer, as a property: whatever the server writes in the
same read as the answer is handled by the negotiated revision exactly as it would be once
the handshake is long over (the same answers, byte for byte)."""

from __future__ import annotations

from typing import Any

import msgspec
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpl_host.protocol.profiles import KNOWN_REVISIONS, handshake_era

from .peer import Peer, memory_connection

INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'

ids = st.one_of(st.integers(-(2**53) + 1, 2**53 - 1), st.text(max_size=8), st.none()).map(
    lambda v: msgspec.json.encode(v).decode()
)
bad_ids = st.sampled_from(['{"a":1}', "[1]", "1.5", "1e400", "true"])
methods = st.sampled_from(
    ["ping", "roots/list", "sampling/createMessage", "elicitation/create", "tools/call", "x/y"]
)


@st.composite
def requests(draw: st.DrawFn) -> str:
    id_ = draw(st.one_of(ids, bad_ids))
    return f'{{"jsonrpc":"2.0","id":{id_},"method":"{draw(methods)}"}}'


notifications = methods.map(lambda m: f'{{"jsonrpc":"2.0","method":"notifications/{m}"}}')
singles = st.one_of(requests(), notifications, st.just('{"jsonrpc":"2.0","method":5,"id":1}'))
batches = st.lists(singles, max_size=3).map(lambda entries: "[" + ",".join(entries) + "]")
messages = st.lists(st.one_of(singles, batches), min_size=1, max_size=3)


async def drain(peer: Peer) -> list[bytes]:
    """Every line the host wrote once it has nothing left to do (autojump clock)."""
    lines = []
    while True:
        try:
            lines.append(await peer.recv_line(timeout=1))
        except trio.TooSlowError:
            return lines


async def answers_to(lines: list[str], version: str, *, same_read: bool) -> list[bytes]:
    conn, peer = memory_connection()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.run)
        init = await peer.expect("initialize")
        answer = msgspec.json.encode(
            {"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": version}}
        )
        wire = "\n".join(lines).encode() + b"\n"
        if same_read:
            await peer.send(answer + b"\n" + wire)
        else:
            await peer.send(answer)
            assert await peer.recv_line() == INITIALIZED
            await trio.testing.wait_all_tasks_blocked()
            await peer.send(wire)
        out = [line for line in await drain(peer) if line != INITIALIZED]
        await conn.aclose()
    return sorted(out)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(version=st.sampled_from(handshake_era(KNOWN_REVISIONS)), lines=messages)
async def test_the_same_read_as_the_answer_is_handled_as_a_second_later(
    version: str, lines: list[str], autojump_clock: Any
) -> None:
    with trio.fail_after(60):
        now = await answers_to(lines, version, same_read=True)
        later = await answers_to(lines, version, same_read=False)
    assert now == later
