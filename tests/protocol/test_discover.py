"""The pure parts of 2026-07-28's way in: request _meta, the Discovery machine, the
typed 2026-07-28 errors."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpl_host.protocol.discover import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    Discovery,
    Fallback,
    Retry,
    request_meta,
    with_meta,
)
from mcpl_host.protocol.envelope import decode_line
from mcpl_host.protocol.errors import (
    HeaderMismatch,
    MissingClientCapability,
    RequestError,
    UnsupportedVersion,
    VersionError,
    request_error,
)
from mcpl_host.protocol.handshake import Established, Failed, Send, Skip

R5 = "2026-07-28"
ALL = (R5, "2025-11-25", "2025-06-18")
META = request_meta(R5, {"roots": {}}, {"name": "h", "version": "1"})


def test_request_meta_names_revision_capabilities_client_and_an_asked_log_level() -> None:
    assert META == {
        PROTOCOL_VERSION: R5,
        CLIENT_CAPABILITIES: {"roots": {}},
        CLIENT_INFO: {"name": "h", "version": "1"},
    }
    assert request_meta(R5, {}, {}, "debug")[LOG_LEVEL] == "debug"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (None, {"_meta": META}),
        (msgspec.UNSET, {"_meta": META}),
        ({"name": "x"}, {"name": "x", "_meta": META}),
        # The caller's own _meta keys stay; the revision's win over a forged one.
        (
            {"_meta": {"progressToken": 7, PROTOCOL_VERSION: "1999-01-01"}},
            {"_meta": {"progressToken": 7, **META}},
        ),
        (msgspec.Raw(b'{"uri":"a"}'), {"uri": "a", "_meta": META}),
        # Not an object: sent as written, the server judges.
        ([1, 2], [1, 2]),
    ],
)
def test_with_meta(params: Any, expected: Any) -> None:
    assert with_meta(params, META) == expected


@given(st.dictionaries(st.text(), st.integers() | st.text()))
def test_with_meta_never_changes_the_callers_params(params: dict[str, Any]) -> None:
    before = dict(params)
    merged = with_meta(params, META)
    assert params == before
    assert merged["_meta"].items() >= META.items()
    assert {k: v for k, v in merged.items() if k != "_meta"} == {
        k: v for k, v in params.items() if k != "_meta"
    }


def _discovery(allowlist: tuple[str, ...] = ALL) -> Discovery:
    return Discovery(allowlist=allowlist, request_id=1, capabilities={}, client_info={})


def _answer(line: str) -> Any:
    return _discovery().receive(decode_line(line.encode()))


def test_the_request_line() -> None:
    line = msgspec.json.decode(_discovery().request())
    assert line == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {"_meta": request_meta(R5, {}, {})},
    }


def test_a_discover_result_establishes_the_stateless_profile() -> None:
    step = _answer(
        '{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],'
        '"capabilities":{"tools":{"listChanged":true}},"instructions":"hi",'
        '"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}'
    )
    assert isinstance(step, Established)
    assert step.profile.revision == R5
    assert step.initialized is None
    assert step.result.server_info == {"name": "s", "version": "1"}
    assert step.result.capabilities == {"tools": {"listChanged": True}}
    assert step.result.instructions == "hi"


def test_server_info_outside_meta_is_taken_too() -> None:
    step = _answer(
        '{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],'
        '"serverInfo":{"name":"top","version":"1"}}}'
    )
    assert isinstance(step, Established)
    assert step.result.server_info == {"name": "top", "version": "1"}


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}',
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"No session"}}',
        '{"jsonrpc":"2.0","id":1,"error":"not an object"}',
        '{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25"]}}',
        '{"jsonrpc":"2.0","id":1,"result":[]}',
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x","data":{"supported":["2025-06-18"]}}}',
    ],
)
def test_what_means_the_handshake_era(line: str) -> None:
    assert isinstance(_answer(line), Fallback)


def test_without_a_handshake_era_revision_a_fallback_is_a_version_error() -> None:
    step = _discovery((R5,)).receive(
        decode_line(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}')
    )
    assert isinstance(step, Failed)
    assert isinstance(step.error, VersionError)


def test_what_arrives_before_the_answer_is_skipped() -> None:
    discovery = _discovery()
    for line in (
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}',
        b'{"jsonrpc":"2.0","id":9,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":2,"result":{}}',
        b"[1]",
        b"not json",
    ):
        assert isinstance(discovery.receive(decode_line(line)), Skip)
    assert not discovery.settled


def test_a_ping_before_the_answer_is_answered_as_in_the_handshake() -> None:
    discovery = _discovery()
    step = discovery.receive(decode_line(b'{"jsonrpc":"2.0","id":null,"method":"ping"}'))
    assert step == Send(b'{"jsonrpc":"2.0","id":null,"result":{}}\n')
    assert not discovery.settled


@pytest.mark.parametrize("id_member", [b'"id":null,', b""])
def test_an_id_less_error_is_the_answer_to_discover(id_member: bytes) -> None:
    # The server could not read the one request out: a handshake-era server's way to
    # refuse it, so initialize follows (never a wait for discover_timeout).
    discovery = _discovery()
    line = b'{"jsonrpc":"2.0",' + id_member + b'"error":{"code":-32700,"message":"Parse error"}}'
    step = discovery.receive(decode_line(line))
    assert isinstance(step, Fallback)
    assert "(-32700)" in step.reason
    assert discovery.settled


def test_an_error_looking_log_line_is_not_an_answer() -> None:
    discovery = _discovery()
    step = discovery.receive(decode_line(b'{"error":{"code":1,"message":"a log line"}}'))
    assert isinstance(step, Skip)
    assert not discovery.settled


def test_once_settled_everything_is_skipped() -> None:
    discovery = _discovery()
    answer = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}'
    assert isinstance(discovery.receive(decode_line(answer)), Fallback)
    assert isinstance(discovery.receive(decode_line(answer)), Skip)


def test_a_refusal_naming_the_offered_revision_asks_once_more_with_it() -> None:
    # Only one stateless revision exists: a Discovery offering it is told the same one.
    # The refusal says nothing else to act on: the revision is asked again (the driver
    # asks at most twice; tests/driver/test_dual_era.py sees the second refusal fail).
    discovery = Discovery(
        allowlist=ALL, request_id=1, capabilities={}, client_info={}, revision="2026-07-28"
    )
    step = discovery.receive(
        decode_line(
            b'{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x",'
            b'"data":{"supported":["2026-07-28"]}}}'
        )
    )
    assert step == Retry("2026-07-28")


def test_a_refusal_naming_no_allowed_revision_is_a_version_error() -> None:
    discovery = Discovery(allowlist=("2026-07-28",), request_id=1, capabilities={}, client_info={})
    step = discovery.receive(
        decode_line(
            b'{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x",'
            b'"data":{"supported":["2099-01-01"]}}}'
        )
    )
    assert isinstance(step, Failed)
    assert isinstance(step.error, VersionError)


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (-32020, HeaderMismatch),
        (-32021, MissingClientCapability),
        (-32022, UnsupportedVersion),
        (-32601, RequestError),
        (None, RequestError),
    ],
)
def test_request_error_is_typed_by_code(code: int | None, kind: type[RequestError]) -> None:
    error = request_error(code, "m", {"supported": ["a", 1], "requiredCapabilities": []})
    assert type(error) is kind
    assert error.code == code
    if isinstance(error, UnsupportedVersion):
        assert error.supported == ("a",)
        assert error.permanent
    if isinstance(error, MissingClientCapability):
        assert error.required == {}  # not an object: not taken
