"""Dual-era negotiation (MCP 2026-07-28, basic/versioning): server/discover first, then
initialize for a handshake-era server; the _meta every stateless request carries; the
2026-07-28 error codes as typed errors; the era remembered per target."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from mcpl_host import (
    Connected,
    Connection,
    Event,
    RequestTimeout,
    StdioTarget,
    VersionError,
)
from mcpl_host.driver.negotiate import ERAS
from mcpl_host.protocol.discover import PROTOCOL_VERSION
from mcpl_host.protocol.errors import HeaderMismatch, MissingClientCapability, UnsupportedVersion

from .peer import memory_connection

R5 = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
# No hook given: the only capability is the tasks extension, which the host always follows.
NO_HOOKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


async def test_a_stateless_server_is_reached_by_discover_and_no_initialize_is_sent() -> None:
    events: list[Event] = []
    conn, peer = memory_connection(
        on_event=events.append, client_info={"name": "t", "version": "1"}
    )
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.discover)
            async with conn:
                assert conn.protocol_version == R5
                assert conn.server_info == {"name": "stateless", "version": "2.0"}
                assert conn.server_capabilities == {"tools": {}}
                assert conn.instructions == "be stateless"

                async def server() -> None:
                    request = await peer.recv()
                    await peer.answer(request, {"tools": []})

                nursery.start_soon(server)
                await conn.request("tools/list", None, on_progress=lambda *a: None)
    discover, listing = (msgspec.json.decode(line) for line in peer.received)
    assert discover == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {
            "_meta": {
                META_VERSION: R5,
                META_CAPS: NO_HOOKS,
                META_INFO: {"name": "t", "version": "1"},
            }
        },
    }
    # Every request names the revision, the capabilities and the client; the caller's own
    # _meta (the progress token) is kept beside them.
    assert listing["method"] == "tools/list"
    assert listing["params"]["_meta"] == {
        "progressToken": 2,
        META_VERSION: R5,
        META_CAPS: NO_HOOKS,
        META_INFO: {"name": "t", "version": "1"},
    }
    connected = [e for e in events if isinstance(e, Connected)]
    assert [(c.protocol_version, c.era) for c in connected] == [(R5, "stateless")]


async def test_a_handshake_era_server_refusing_discover_gets_initialize_on_the_same_stream() -> (
    None
):
    events: list[Event] = []
    conn, peer = memory_connection(on_event=events.append)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake)  # refuses server/discover with -32601
            async with conn:
                assert conn.protocol_version == "2025-11-25"
                # The handshake era never sees the stateless _meta.
                nursery.start_soon(_answer_one, peer)
                await conn.request("tools/list")
    methods = [msgspec.json.decode(line).get("method") for line in peer.received]
    assert methods == ["server/discover", "initialize", "notifications/initialized", "tools/list"]
    assert "params" not in msgspec.json.decode(peer.received[-1])
    init = msgspec.json.decode(peer.received[1])
    assert init["params"]["protocolVersion"] == "2025-11-25"
    assert [e.era for e in events if isinstance(e, Connected)] == ["handshake"]


async def _answer_one(peer: Any) -> None:
    request = await peer.recv()
    await peer.answer(request, {"tools": []})


async def test_a_server_that_ignores_discover_gets_initialize_after_the_discover_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    waited: list[float] = []
    conn, peer = memory_connection(discover_timeout=2.0)

    async def server() -> None:
        await peer.recv()  # server/discover: no answer
        start = trio.current_time()
        await peer.handshake()  # the initialize that follows
        waited.append(trio.current_time() - start)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(server)
        async with conn:
            assert conn.protocol_version == "2025-11-25"
    assert len(waited) == 1
    assert 2.0 <= waited[0] < 2.5


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        # -32022 naming only handshake-era revisions: that is a handshake-era server.
        ({"code": -32022, "message": "no", "data": {"supported": ["2025-06-18"]}}, "fallback"),
        # A stateless server that speaks no revision the host allows.
        ({"code": -32022, "message": "no", "data": {"supported": ["2027-01-01"]}}, "version"),
        # -32021 is a 2026-07-28 error: the server is stateless, and it refuses.
        (
            {
                "code": -32021,
                "message": "needs sampling",
                "data": {"requiredCapabilities": {"sampling": {}}},
            },
            "missing",
        ),
        # Any other error: a handshake-era server.
        ({"code": -32600, "message": "not initialized"}, "fallback"),
    ],
)
async def test_discover_errors(error: dict[str, Any], outcome: str) -> None:
    conn, peer = memory_connection()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def server() -> None:
                request = await peer.expect("server/discover")
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
                if outcome == "fallback":
                    await peer.handshake("2025-06-18")

            nursery.start_soon(server)
            if outcome == "fallback":
                async with conn:
                    assert conn.protocol_version == "2025-06-18"
            elif outcome == "version":
                with pytest.raises(VersionError, match="2027-01-01"):
                    await conn.__aenter__()
            else:
                with pytest.raises(MissingClientCapability) as raised:
                    await conn.__aenter__()
                assert raised.value.required == {"sampling": {}}
                assert raised.value.code == -32021


async def test_a_refusal_naming_the_offered_revision_is_asked_once_more() -> None:
    # Only one stateless revision exists; a server that names it while refusing it (the
    # conformance suite's request-metadata does, once) is asked once more with it.
    conn, peer = memory_connection(versions=[R5])
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def server() -> None:
                request = await peer.expect("server/discover")
                refusal = {"code": -32022, "message": "no", "data": {"supported": [R5]}}
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": refusal})
                again = await peer.discover([R5])
                assert again["id"] != request["id"]
                assert again["params"]["_meta"][PROTOCOL_VERSION] == R5

            nursery.start_soon(server)
            async with conn:
                assert conn.protocol_version == R5


async def test_a_server_refusing_the_revision_it_names_twice_fails_typed() -> None:
    conn, peer = memory_connection(versions=[R5])
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def server() -> None:
                for _ in range(2):
                    request = await peer.expect("server/discover")
                    await peer.send(
                        {
                            "jsonrpc": "2.0",
                            "id": request["id"],
                            "error": {"code": -32022, "message": "no", "data": {"supported": [R5]}},
                        }
                    )

            nursery.start_soon(server)
            with pytest.raises(VersionError, match="named a revision it then refused"):
                await conn.__aenter__()
    assert len(peer.received) == 2  # asked twice, no initialize


async def test_only_the_stateless_revision_allowed_and_a_handshake_era_server() -> None:
    conn, peer = memory_connection(versions=[R5])
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def server() -> None:
                request = await peer.expect("server/discover")
                await peer.refuse_discover(request)

            nursery.start_soon(server)
            with pytest.raises(VersionError, match="no handshake-era revision"):
                await conn.__aenter__()
    assert len(peer.received) == 1  # no initialize


async def test_only_handshake_era_revisions_allowed_sends_no_discover() -> None:
    conn, peer = memory_connection(versions=["2025-11-25"])
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.handshake)
            async with conn:
                pass
    assert msgspec.json.decode(peer.received[0])["method"] == "initialize"


async def test_a_discover_result_listing_no_stateless_revision_means_the_handshake_era() -> None:
    conn, peer = memory_connection()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def server() -> None:
                await peer.discover(versions=["2025-11-25"])
                await peer.handshake()

            nursery.start_soon(server)
            async with conn:
                assert conn.protocol_version == "2025-11-25"


async def test_an_unreadable_discover_result_means_the_handshake_era() -> None:
    conn, peer = memory_connection()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def server() -> None:
                request = await peer.expect("server/discover")
                await peer.answer(request, {"supportedVersions": "all of them"})
                await peer.handshake()

            nursery.start_soon(server)
            async with conn:
                assert conn.protocol_version == "2025-11-25"


@pytest.mark.parametrize(
    ("code", "kind", "fact"),
    [
        (-32020, HeaderMismatch, None),
        (-32021, MissingClientCapability, ("required", {"roots": {}})),
        (-32022, UnsupportedVersion, ("supported", ("2027-01-01",))),
    ],
)
async def test_the_stateless_error_codes_are_typed(code: int, kind: type, fact: Any) -> None:
    conn, peer = memory_connection()
    data = {"requiredCapabilities": {"roots": {}}, "supported": ["2027-01-01", 5]}
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.discover)
            async with conn:

                async def server() -> None:
                    request = await peer.recv()
                    await peer.send(
                        {
                            "jsonrpc": "2.0",
                            "id": request["id"],
                            "error": {"code": code, "message": "refused", "data": data},
                        }
                    )

                nursery.start_soon(server)
                with pytest.raises(kind) as raised:
                    await conn.request("tools/list")
    assert raised.value.code == code
    if fact is not None:
        assert getattr(raised.value, fact[0]) == fact[1]


async def test_no_answer_at_all_times_out_naming_discover_when_only_stateless_is_allowed(
    autojump_clock: trio.abc.Clock,
) -> None:
    conn, _peer = memory_connection(versions=[R5], initialize_timeout=3.0)
    with pytest.raises(RequestTimeout) as raised:
        await conn.__aenter__()
    assert raised.value.method == "server/discover"


_LEGACY_SERVER = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin:
        message = json.loads(line)
        sys.stderr.write(message.get("method", "answer") + "\\n")
        sys.stderr.flush()
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {},
                      "serverInfo": {"name": "legacy", "version": "1"}}
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}),
                  flush=True)
        elif "id" in message and "method" in message:
            error = {"code": -32601, "message": "Method not found"}
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}),
                  flush=True)
    """
)


async def test_the_era_is_remembered_per_target(tmp_path: Path) -> None:
    script = tmp_path / "legacy.py"
    script.write_text(_LEGACY_SERVER)
    target = StdioTarget([sys.executable, str(script)])
    ERAS.clear()
    firsts: list[str] = []
    for _ in range(2):
        lines: list[bytes] = []

        def wire(direction: str, line: bytes, lines: list[bytes] = lines) -> None:
            if direction == "out":
                lines.append(line)

        with trio.fail_after(20):
            async with Connection(target, on_wire=wire) as conn:
                assert conn.protocol_version == "2025-06-18"
        firsts.append(msgspec.json.decode(lines[0])["method"])
    # The first connect asks; the second knows the server is of the handshake era.
    assert firsts == ["server/discover", "initialize"]
    ERAS.clear()


async def test_a_handshake_only_connection_leaves_no_era_for_a_dual_era_one(
    tmp_path: Path,
) -> None:
    # A connection that could not ask server/discover learns nothing of the server's era:
    # the next connection, with the stateless revision allowed, still asks.
    script = tmp_path / "legacy.py"
    script.write_text(_LEGACY_SERVER)
    target = StdioTarget([sys.executable, str(script)])
    ERAS.clear()
    firsts: list[str] = []
    for versions in (["2025-06-18"], None):
        lines: list[bytes] = []

        def wire(direction: str, line: bytes, lines: list[bytes] = lines) -> None:
            if direction == "out":
                lines.append(line)

        with trio.fail_after(20):
            async with Connection(target, versions=versions, on_wire=wire):
                pass
        firsts.append(msgspec.json.decode(lines[0])["method"])
    assert firsts == ["initialize", "server/discover"]
    ERAS.clear()


async def test_a_stateless_server_sending_requests_is_refused_method_not_found() -> None:
    # 2026-07-28 servers send no requests (they ask through results): ping and the hooks'
    # methods are refused, even with hooks given.
    conn, peer = memory_connection(roots=["file:///tmp"])
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.discover)
            async with conn:
                for n, method in enumerate(("ping", "roots/list")):
                    await peer.send({"jsonrpc": "2.0", "id": n, "method": method})
                    answer = await peer.recv()
                    assert answer["id"] == n
                    assert answer["error"]["code"] == -32601
