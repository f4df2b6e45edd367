"""What the checker keeps of a flood stays bounded in bytes; the server's requests are
answered as its revision says (in a batch on 2025-03-26, never on 2026-07-28); a
pattern another regex dialect can read is not a broken schema; a dual-era server's
broken initialize result is judged. (Written by a review of the second round of fixes,
each failing on it.)"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
import trio

from mcpl_host.check.fence import fenced
from mcpl_host.check.wire import KEPT_BYTES, Wire
from mcpl_host.protocol.redact import Redactor

from .servers import rewrite, run

pytestmark = pytest.mark.timeout(10)


class _Scripted(Wire):
    """A wire whose server says ``lines`` and then nothing; what the checker writes is
    kept in ``written``."""

    def __init__(self, lines: list[bytes]) -> None:
        super().__init__(Redactor())
        self._script = list(lines)
        self.written: list[bytes] = []

    async def _write(self, data: bytes) -> None:
        self.written.append(data)

    async def _read(self) -> bytes | None:
        await trio.lowlevel.checkpoint()
        if not self._script:
            await trio.sleep_forever()
        return self._script.pop(0)

    async def aclose(self) -> None:
        pass


# --- the fence keeps at most half of KEPT_BYTES of responses and of noise -------------
async def test_the_fence_keeps_no_more_than_kept_bytes_of_what_it_reads() -> None:
    # wire.py's docstring: "what one exchange keeps of the lines it reads is at most 1000
    # lines and KEPT_BYTES bytes". The fence (fence.py `take`) bounds what it keeps to
    # 64 responses and 64 noise lines, each up to MAX_LINE_BYTES (4 MiB): 512 MiB held
    # for one notification's verdict. Here 40 noise lines of 1 MiB (one shared object,
    # so the test itself stays small) are answered to a notification, then the pong.
    big = b"x" * (1 << 20)  # not JSON: noise
    pong = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    wire = _Scripted([*([big] * 40), pong])
    notification = {"jsonrpc": "2.0", "method": "notifications/mcpl-host-check"}
    with trio.fail_after(5):
        out = await fenced(SimpleNamespace(timeout=1.0), wire, notification)  # type: ignore[arg-type]
    assert out.alive
    kept = sum(len(line.raw) for line in (*out.responses, *out.noise))
    assert kept <= KEPT_BYTES, f"the fence kept {kept >> 20} MiB"


# --- a server's request inside a batch is answered in one (2025-03-26) ----------------
async def test_a_server_ping_in_a_batch_is_answered_on_2025_03_26() -> None:
    # 2025-03-26 basic/index: "MCP implementations MAY support sending JSON-RPC batches,
    # but MUST support receiving JSON-RPC batches"; basic/utilities/ping: "The receiver
    # MUST respond promptly with an empty response". Wire._serve (wire.py) returns at once
    # for an array, so a 2025-03-26 server that batches its ping waits for a pong that
    # never comes, and is then judged as if it had stopped answering.
    batch = b'[{"jsonrpc":"2.0","id":"server-ping","method":"ping"}]'
    wire = _Scripted([batch])
    wire.version = "2025-03-26"
    with trio.fail_after(5):
        line = await wire.receive(1.0)
    assert line is not None
    answers: list[Any] = []
    for data in wire.written:
        value = msgspec.json.decode(data)
        answers += value if isinstance(value, list) else [value]
    assert any(
        isinstance(a, dict) and a.get("id") == "server-ping" and a.get("result") == {}
        for a in answers
    ), f"wrote {wire.written!r}"


# --- a valid ECMA-262 pattern the regex engine cannot read: not checked, not broken ---
def _named_group(request: Any, answer: Any) -> Any:
    if isinstance(request, dict) and request.get("method") == "tools/list":
        answer["result"]["tools"][0]["inputSchema"] = {
            "type": "object",
            "properties": {"date": {"type": "string", "pattern": r"^(?<y>\d{4})-\k<y>$"}},
        }
    return answer


async def test_a_pattern_valid_in_ecma_262_does_not_fail_tool_schemas() -> None:
    # JSON Schema 2020-12 Validation 6.3.3 (pattern): "This string SHOULD be a valid
    # regular expression, according to the ECMA-262 regular expression dialect";
    # named groups and \k<name> are ECMA-262 (ES2018). And the metaschema's
    # "format": "regex" is an annotation in 2020-12 (Validation 7.2: format is not
    # asserted by default), so a pattern the checker's regex engine cannot read does not
    # make the schema invalid. client/schema.py:_compile marks every ValidationError but
    # a Referencing one `malformed` (schema.py:292), so content.tool-schemas fails a
    # compliant server; "not checked" (a warning) is the most the checker can say.
    with trio.fail_after(5):
        report = await run(rewrite(_named_group), "content.tool-schemas")
    found = next(f for f in report.findings if f.rule.id == "content.tool-schemas")
    assert found.verdict.value != "fail", found.detail


# --- a dual-era server's broken InitializeResult is judged, not n/a --------------------
async def test_a_modern_server_answering_initialize_with_a_broken_result_is_not_na() -> None:
    # basic/lifecycle#initialization (2024-11-05 on): the server "MUST respond with its
    # own capabilities and information", and InitializeResult requires protocolVersion
    # (schema); 2026-07-28 basic/versioning, Legacy client / Modern server: "the server
    # rejects `initialize` with a JSON-RPC error". This server answers initialize with a
    # result and no protocolVersion: neither. lifecycle.py:initialize_newest now returns
    # n/a whenever the facts found no handshake and a server/discover (lifecycle.py:73),
    # before looking at the answer; before the fix only a missing answer was n/a and a
    # malformed result failed.
    from .modern_server import Behaviour  # noqa: PLC0415
    from .test_modern import run_modern  # noqa: PLC0415

    def no_version(request: Any, answer: dict[str, Any]) -> dict[str, Any]:
        if isinstance(request, dict) and request.get("method") == "initialize":
            result = answer.get("result")
            if isinstance(result, dict):
                result.pop("protocolVersion", None)
        return answer

    with trio.fail_after(8):
        report = await run_modern(Behaviour(change=no_version), "lifecycle.initialize-newest")
    (found,) = [f for f in report.findings if f.rule.id == "lifecycle.initialize-newest"]
    assert found.verdict.value == "fail", found.detail


# --- on 2026-07-28 a server's request is noted, never answered ------------------------
async def test_no_response_is_sent_to_a_server_request_on_2026_07_28() -> None:
    # 2026-07-28 (docs/specification/2026-07-28, basic/transports): stdio carries no
    # client-to-server responses, a POST holds "one request or notification" (no
    # responses), and servers MUST NOT send requests at all. Wire._serve (wire.py) answers
    # whatever revision the wire speaks, so a 2026-07-28 server's stray ping gets a
    # response line (over HTTP, a POST of its own whose status lands in wire.posts, which
    # fence.py reads as the probed message's http_error). Minor: only a broken server
    # triggers it.
    wire = _Scripted([b'{"jsonrpc":"2.0","id":"server-ping","method":"ping"}'])
    wire.version = "2026-07-28"
    with trio.fail_after(5):
        line = await wire.receive(1.0)
    assert line is not None
    assert wire.written == [], f"wrote {wire.written!r}"


# --- refusal bodies are remembered by digest, not whole --------------------------------
async def test_the_refusals_remembered_over_http_are_bounded_in_bytes() -> None:
    # wire.py's docstring bounds what is kept of a server's lines (KEPT_BYTES); the HTTP
    # wire's unread lines are bounded in bytes too. HttpWire._deliver_refusal
    # (httpwire.py:259) keeps the whole body of each 4xx answer to a notification POST,
    # up to 64 of them of up to MAX_LINE_BYTES each (256 MiB) for the wire's life (a
    # pooled session's: the whole run), after they are read. Twenty 1 MiB refusals here.
    import httpx  # noqa: PLC0415

    from mcpl_host.check.httpwire import HttpWire  # noqa: PLC0415
    from mcpl_host.transports.targets import HttpTarget  # noqa: PLC0415

    count = iter(range(1000))

    def refuse(request: httpx.Request) -> httpx.Response:
        n = next(count)
        body = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"%d %s"}}' % (
            n,
            b"x" * (1 << 20),
        )
        return httpx.Response(400, content=body, headers={"content-type": "application/json"})

    with trio.fail_after(8):
        async with (
            trio.open_nursery() as nursery,
            httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client,
        ):
            wire = HttpWire(HttpTarget("http://127.0.0.1:9/mcp"), client, nursery, Redactor())
            for _ in range(20):
                await wire.notify("notifications/mcpl-host-check")
            seen = 0

            def all_read(line: Any) -> bool:
                nonlocal seen
                seen += 1
                return seen == 20

            assert await wire.read_until(5.0, all_read)  # read: nothing is waiting any more
            held = sum(len(body) for body in wire._refusals)
            await wire.aclose()
            nursery.cancel_scope.cancel()
    assert held <= KEPT_BYTES, f"{held >> 20} MiB of refusals held after they were read"


# --- the server's requests are answered by the host's own envelope rule -----------------
async def test_a_server_request_with_a_null_or_broken_id_is_answered_as_the_host_would() -> None:
    # DESIGN 3.2: "id": null is answered with "id": null; an id that is not a string, an
    # integer or null makes an invalid request, answered -32600 with id null.
    wire = _Scripted(
        [
            b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
        ]
    )
    wire.version = "2025-11-25"
    with trio.fail_after(5):
        assert await wire.receive(1.0) is not None
        assert await wire.receive(1.0) is not None
    written = [msgspec.json.decode(data) for data in wire.written]
    assert written[0] == {"jsonrpc": "2.0", "id": None, "result": {}}
    assert (written[1]["id"], written[1]["error"]["code"]) == (None, -32600)
