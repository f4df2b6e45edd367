"""The exception tree: one root, and on each error the facts a caller acts on."""

from __future__ import annotations

import pytest

from mcpl_host.protocol.errors import (
    CapabilityDenied,
    ConfigurationError,
    ConnectionClosed,
    InitializeError,
    LimitExceeded,
    McplHostError,
    OutputSchemaError,
    ProtocolError,
    RequestError,
    RequestTimeout,
    SpawnError,
    TransportError,
    VersionError,
)


def test_the_root_keeps_message_and_server_and_names_the_server_first() -> None:
    plain = McplHostError("it broke")
    assert (plain.message, plain.server, str(plain)) == ("it broke", None, "it broke")
    assert plain.args == ("it broke",)
    assert repr(plain) == "McplHostError('it broke')"
    named = McplHostError("it broke", server="weather")
    assert (named.message, named.server) == ("it broke", "weather")
    assert str(named) == "[weather] it broke"
    assert named.permanent is False


def test_only_configuration_and_version_errors_are_permanent() -> None:
    assert ConfigurationError("bad").permanent is True
    version = VersionError("no", offered="2025-11-25", answered="1999-01-01", allowed=("x",))
    assert version.permanent is True
    assert isinstance(version, ProtocolError)
    assert ProtocolError("bad").permanent is False
    assert TransportError("gone").permanent is False


def test_version_error_facts() -> None:
    error = VersionError(
        "the server chose badly",
        offered="2025-11-25",
        answered=7,
        allowed=("2025-11-25", "2025-06-18"),
        server="s",
    )
    assert (error.offered, error.answered, error.allowed) == (
        "2025-11-25",
        7,
        ("2025-11-25", "2025-06-18"),
    )
    assert (error.message, error.server, str(error)) == (
        "the server chose badly",
        "s",
        "[s] the server chose badly",
    )


def test_output_schema_error_facts() -> None:
    result = {"content": [], "structuredContent": {"t": "warm"}}
    error = OutputSchemaError(
        "does not match", tool="forecast", result=result, violations=["t"], server="s"
    )
    assert isinstance(error, ProtocolError)
    assert (error.tool, error.result, error.violations) == ("forecast", result, ["t"])
    assert (error.message, error.server, str(error)) == (
        "does not match",
        "s",
        "[s] does not match",
    )


def test_initialize_error_facts_and_text() -> None:
    error = InitializeError(-32602, "bad params", {"why": 1}, server="s")
    assert (error.code, error.server_message, error.data) == (-32602, "bad params", {"why": 1})
    assert error.request_id_present is True
    assert (error.message, error.server) == ("initialize failed (-32602): bad params", "s")
    assert str(error) == "[s] initialize failed (-32602): bad params"
    no_code = InitializeError(None, "garbled", request_id_present=False)
    assert no_code.message == "initialize failed: garbled"
    assert (no_code.code, no_code.data, no_code.request_id_present) == (None, None, False)
    assert no_code.server is None


def test_transport_errors_carry_a_reason() -> None:
    error = TransportError("the pipe broke", reason="write-failed", server="s")
    assert (error.reason, error.message, error.server) == ("write-failed", "the pipe broke", "s")
    assert TransportError("x").reason == "closed"
    spawn = SpawnError("no such program", server="s")
    assert isinstance(spawn, TransportError)
    assert (spawn.reason, spawn.message, spawn.server) == ("spawn-failed", "no such program", "s")
    assert SpawnError("x").server is None


def test_connection_closed_says_whether_the_outcome_is_unknown() -> None:
    default = ConnectionClosed("closed by aclose()")
    assert (default.reason, default.outcome_unknown, default.server) == ("closed", False, None)
    assert default.message == "closed by aclose()"
    lost = ConnectionClosed("lost", reason="eof", outcome_unknown=True, server="s")
    assert (lost.reason, lost.outcome_unknown, lost.message, lost.server) == (
        "eof",
        True,
        "lost",
        "s",
    )
    assert str(lost) == "[s] lost"


def test_request_timeout_facts() -> None:
    error = RequestTimeout("no answer in 5s", method="tools/call", timeout=5.0, server="s")
    assert (error.method, error.timeout) == ("tools/call", 5.0)
    assert (error.message, error.server, str(error)) == (
        "no answer in 5s",
        "s",
        "[s] no answer in 5s",
    )


def test_request_error_facts_and_text() -> None:
    error = RequestError(-32601, "Method not found", {"method": "x"}, server="s")
    assert (error.code, error.error_message, error.data) == (
        -32601,
        "Method not found",
        {"method": "x"},
    )
    assert (error.message, error.server) == ("Method not found (-32601)", "s")
    bare = RequestError(-1, "no")
    assert (bare.data, bare.server, str(bare)) == (None, None, "no (-1)")


@pytest.mark.parametrize(
    "error",
    [ProtocolError("x"), ConfigurationError("x"), TransportError("x"), RequestError(1, "x")],
)
def test_everything_is_a_mcpl_host_error(error: Exception) -> None:
    assert isinstance(error, McplHostError)


def test_a_request_error_without_a_code_says_so() -> None:
    error = RequestError(None, "went wrong")
    assert (error.code, str(error)) == (None, "went wrong (no code)")
    assert str(RequestError(-32000, "went wrong")) == "went wrong (-32000)"


def test_capability_denied_names_every_capability_that_would_do() -> None:
    one = CapabilityDenied("channels/publish", ("channels.publish",), server="s")
    assert (one.method, one.capabilities, one.capability) == (
        "channels/publish",
        ("channels.publish",),
        "channels.publish",
    )
    assert str(one) == "[s] channels/publish is not granted: it needs channels.publish"
    two = CapabilityDenied("context/beforeInference", ("a.x", "a.y"))
    assert two.message == "context/beforeInference is not granted: it needs a.x or a.y"


def test_limit_exceeded_carries_its_limit_and_value() -> None:
    error = LimitExceeded("too many", limit="max_subscriptions", value=4, server="s")
    assert (error.message, error.limit, error.value, error.server) == (
        "too many",
        "max_subscriptions",
        4,
        "s",
    )
    assert isinstance(error, McplHostError)
