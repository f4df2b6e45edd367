"""DESIGN 3.5: the initialize state machine, bytes in, steps out."""

from __future__ import annotations

import msgspec
import pytest

from mcpl_host.protocol.envelope import Outcome, decode_line
from mcpl_host.protocol.errors import InitializeError, ProtocolError, VersionError
from mcpl_host.protocol.handshake import (
    Established,
    Failed,
    Handshake,
    HandshakeState,
    Send,
    Skip,
    describe_error_member,
)
from mcpl_host.protocol.profiles import PROFILES, validate_allowlist
from mcpl_host.protocol.redact import Redactor

CANARY = "canary-s3cr3t-9f8e7d"


def _handshake(versions: list[str] | None = None) -> Handshake:
    return Handshake(
        allowlist=validate_allowlist(versions),
        request_id=1,
        capabilities={"roots": {"listChanged": True}},
        client_info={"name": "mcpl_host", "version": "0.1"},
        redactor=Redactor([CANARY]),
    )


def _feed(hs: Handshake, line: bytes) -> object:
    return hs.receive(decode_line(line))


def test_request_offers_the_newest_allowed_revision() -> None:
    hs = _handshake(["2025-03-26", "2024-11-05"])
    assert hs.request() == (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26",'
        b'"capabilities":{"roots":{"listChanged":true}},'
        b'"clientInfo":{"name":"mcpl_host","version":"0.1"}}}\n'
    )


def test_success_gives_profile_result_and_initialized() -> None:
    hs = _handshake()
    step = _feed(
        hs,
        b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26","capabilities":'
        b'{"tools":{}},"serverInfo":{"name":"demo","version":"1"},"instructions":"hi",'
        b'"extra":1}}',
    )
    assert isinstance(step, Established)
    assert step.profile is PROFILES["2025-03-26"]
    assert step.result.server_info == {"name": "demo", "version": "1"}
    assert step.result.capabilities == {"tools": {}}
    assert step.result.instructions == "hi"
    assert b'"extra":1' in bytes(step.raw_result)
    assert step.initialized == b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    assert hs.state is HandshakeState.ESTABLISHED
    # once established, the machine takes nothing more
    again = _feed(hs, b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert again == Skip("the handshake is already established", Outcome.IGNORED)


def test_an_answer_with_error_null_beside_its_result_establishes() -> None:
    step = _feed(
        _handshake(),
        b'{"jsonrpc":"2.0","id":1,"error":null,"result":{"protocolVersion":"2025-06-18",'
        b'"capabilities":{},"serverInfo":{"name":"demo","version":"1"}}}',
    )
    assert isinstance(step, Established)
    assert step.profile is PROFILES["2025-06-18"]


@pytest.mark.parametrize(
    ("id_token", "answer"),
    [(b"5", b"5"), (b'"p"', b'"p"'), (b"null", b"null")],
)
def test_ping_is_answered_with_its_own_id(id_token: bytes, answer: bytes) -> None:
    step = _feed(_handshake(), b'{"jsonrpc":"2.0","method":"ping","id":' + id_token + b"}")
    assert step == Send(b'{"jsonrpc":"2.0","id":' + answer + b',"result":{}}\n')


INVALID = "invalid request before initialize completed: Invalid Request: "


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        # a ping notification wants no answer
        (b'{"jsonrpc":"2.0","method":"ping"}', 'notification "ping" before initialize completed'),
        # invalid: not echoed
        (
            b'{"jsonrpc":"2.0","method":"ping","id":{"a":1}}',
            INVALID + "the id must be a string, a number or null, not an object",
        ),
        (
            b'{"jsonrpc":"2.0","method":7,"id":3}',
            INVALID + "the method must be a string, not a number",
        ),
        (
            b'{"jsonrpc":"2.0","method":"roots/list","id":4}',
            'request "roots/list" before initialize completed (only ping is answered)',
        ),
        (
            b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}',
            'notification "notifications/message" before initialize completed',
        ),
        (
            b'[{"jsonrpc":"2.0","method":"ping","id":1}]',
            "a batch before a protocol revision was negotiated",
        ),
        (b"starting server...", "not JSON"),
        (
            b'{"error":{"code":-1,"message":"log line"}}',
            "no method and no id: not a JSON-RPC message",
        ),
    ],
)
def test_everything_else_is_ignored_while_waiting(line: bytes, reason: str) -> None:
    hs = _handshake()
    assert _feed(hs, line) == Skip(reason, Outcome.IGNORED)
    assert hs.state is HandshakeState.WAITING


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (b'{"jsonrpc":"2.0","id":2,"result":{}}', "2"),  # another numbered response
        (b'{"jsonrpc":"2.0","id":"1","result":{}}', '"1"'),  # "1" is not 1: shown quoted
        (b'{"jsonrpc":"2.0","id":null,"result":{}}', "null"),  # a null-id result answers nothing
        (b'{"id":null,"error":{"code":-1,"message":"log"}}', "null"),  # no jsonrpc: a log line
        (b'{"jsonrpc":"2.0","id":{"x":1},"error":"bare"}', "an object"),
    ],
)
def test_responses_that_are_not_the_answer_are_unmatched(line: bytes, shown: str) -> None:
    hs = _handshake()
    assert _feed(hs, line) == Skip(
        f"a response to no request of the host (id: {shown})", Outcome.RESPONSE_UNMATCHED
    )
    assert hs.state is HandshakeState.WAITING


def test_an_unmatched_id_is_escaped_and_redacted() -> None:
    step = _feed(_handshake(), b'{"jsonrpc":"2.0","id":"a\\n' + CANARY.encode() + b'","result":{}}')
    assert step == Skip(
        'a response to no request of the host (id: "a\\u000a***")', Outcome.RESPONSE_UNMATCHED
    )


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
        b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}',
    ],
)
def test_id_less_error_is_initializes_answer_and_fails_at_once(line: bytes) -> None:
    hs = _handshake()
    step = _feed(hs, line)
    assert isinstance(step, Failed)
    assert isinstance(step.error, InitializeError)
    assert step.error.code == -32700
    assert step.error.server_message == "Parse error"
    assert step.error.request_id_present is False
    assert not step.error.permanent
    assert hs.state is HandshakeState.FAILED


def test_error_answer_with_our_id_fails_with_code_message_and_data() -> None:
    step = _feed(
        _handshake(),
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad\\nversion '
        + CANARY.encode()
        + b'","data":{"supported":["2024-11-05"]}}}',
    )
    assert isinstance(step, Failed)
    error = step.error
    assert isinstance(error, InitializeError)
    assert error.code == -32602
    assert error.data == {"supported": ["2024-11-05"]}
    assert error.request_id_present
    # escaped (no forged line) and redacted
    assert error.server_message == "bad\\u000aversion ***"
    assert CANARY not in str(error)
    assert str(error) == "initialize failed (-32602): bad\\u000aversion ***"


def test_error_that_is_not_an_object_is_shown_as_json_text() -> None:
    step = _feed(_handshake(), b'{"jsonrpc":"2.0","id":1,"error":"boom"}')
    assert isinstance(step, Failed)
    assert isinstance(step.error, InitializeError)
    assert step.error.code is None
    assert step.error.server_message == '"boom"'


@pytest.mark.parametrize(
    "result",
    [b'{"protocolVersion":"2024-11-05"}', b'{"protocolVersion":"2030-01-01"}', b"{}"],
)
def test_version_outside_the_allowlist_fails_permanently(result: bytes) -> None:
    hs = _handshake(["2025-06-18", "2025-03-26"])
    step = _feed(hs, b'{"jsonrpc":"2.0","id":1,"result":' + result + b"}")
    assert isinstance(step, Failed)
    assert isinstance(step.error, VersionError)
    assert step.error.permanent
    assert step.error.offered == "2025-06-18"


@pytest.mark.parametrize(
    ("result", "why"),
    [
        (b"[1]", "Expected `object`, got `array`"),
        (b'"x"', "Expected `object`, got `str`"),
        (b'{"capabilities":[]}', "Expected `object`, got `array` - at `$.capabilities`"),
        (b"null", "Expected `object`, got `null`"),
    ],
)
def test_malformed_result_is_a_protocol_error(result: bytes, why: str) -> None:
    step = _feed(_handshake(), b'{"jsonrpc":"2.0","id":1,"result":' + result + b"}")
    assert isinstance(step, Failed)
    assert type(step.error) is ProtocolError
    assert str(step.error) == f"the initialize result is malformed: {why}"


def test_missing_result_and_error_is_a_protocol_error() -> None:
    step = _feed(_handshake(), b'{"jsonrpc":"2.0","id":1}')
    assert isinstance(step, Failed)
    assert type(step.error) is ProtocolError
    assert str(step.error) == "the initialize result is malformed: Expected `object`, got `null`"


@pytest.mark.parametrize(
    ("error", "described"),
    [
        (None, (None, "null", None)),
        (b'{"code":-1,"message":"m","data":[1]}', (-1, "m", [1])),
        # A code that is not an integer is no code; a message that is not a string is
        # shown with the whole member, as JSON text.
        (b'{"code":"x","message":"m"}', (None, "m", None)),
        (b'{"code":3,"message":5,"data":2}', (3, '{"code":3,"message":5,"data":2}', 2)),
        (b"[1,2]", (None, "[1,2]", None)),
    ],
)
def test_describe_error_member(error: bytes | None, described: tuple[object, ...]) -> None:
    raw = None if error is None else msgspec.Raw(error)
    assert describe_error_member(raw, Redactor()) == described


def test_the_answer_after_ignored_lines_is_taken() -> None:
    hs = _handshake()
    for line in [
        b'{"jsonrpc":"2.0","id":null,"result":{}}',
        b'{"id":null,"error":{"code":1,"message":"x"}}',
        b'{"id":null,"error":{"code":2,"message":"y"}}',
        b'{"jsonrpc":"2.0","id":{"o":1},"error":"bare"}',
    ]:
        assert isinstance(_feed(hs, line), Skip)
    step = _feed(hs, b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}')
    assert isinstance(step, Established)
    assert step.result.server_info == {}
    assert msgspec.json.decode(step.raw_result) == {"protocolVersion": "2025-11-25"}


def test_a_method_named_in_a_skip_reason_is_cut_at_64_units() -> None:
    step = _feed(_handshake(), b'{"jsonrpc":"2.0","method":"' + b"m" * 300 + b'"}')
    assert isinstance(step, Skip)
    shown = step.reason.split('"')[1]
    assert len(shown) == 64
    assert shown.endswith("[cut]")


def test_a_refused_revision_is_redacted_in_the_version_error() -> None:
    hs = _handshake(["2025-11-25"])
    line = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"' + CANARY.encode() + b'"}}'
    step = _feed(hs, line)
    assert isinstance(step, Failed)
    assert isinstance(step.error, VersionError)
    assert CANARY not in str(step.error)
    assert "***" in str(step.error)
